package lance

import (
	"bytes"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/progress"
)

// TestRunPeakLargePages: converting a binary column stored in large pages
// (written by Lance 8.0.0 through fixtures/lance/bench.mjs, file version
// 2.1: 655 values of 100 KiB per fragment, one full-zip page of about 64
// MiB each; or 2,620 of them in one fragment of 9 pages of about 30 MiB)
// holds no page: the values are read item by item (ld.ValueScanner), and
// the Go heap's peak during the run, above what it held before, stays
// under 24 MiB whatever the page (it was the largest page + 8 MiB while
// pages were held; the fragment of 9 pages peaked at 1 GB of RSS while
// batches joined pages).
func TestRunPeakLargePages(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rows        int
		oneFragment bool
		minPage     uint64
	}{
		{"a page per fragment", 3 * 655, false, 48 << 20},
		{"one fragment of pages", 2620, true, 24 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := testtool.LanceBench(t, tc.rows, 100<<10, tc.oneFragment)
			ctx := t.Context()
			j, err := NewJob(ctx, src, converttest.Dest(t, filepath.Join(t.TempDir(), "out")), Options{Columns: []string{"data"}, Options: convert.Options{QuickPlan: true}})
			if err != nil {
				t.Fatal(err)
			}
			var largest uint64
			for i := range j.ds.Fragments() {
				ces, err := j.ds.ColumnEncodings(&j.ds.Fragments()[i], []string{"data"})
				if err != nil {
					t.Fatal(err)
				}
				for _, ce := range ces {
					for _, p := range ce.Pages {
						largest = max(largest, p.Bytes)
					}
				}
			}
			if largest < tc.minPage {
				t.Fatalf("the largest page has %d bytes; the test needs pages of at least %d", largest, tc.minPage)
			}
			if _, err := j.Plan(ctx, nil, progress.Nop{}); err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			base := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			metrics.Read(base)
			stop := testtool.HeapPeak()
			sum, err := j.Run(ctx, nil)
			peak := stop()
			if err != nil {
				t.Fatal(err)
			}
			if sum.Blobs != int64(tc.rows) {
				t.Fatalf("%d members packed, want %d", sum.Blobs, tc.rows)
			}
			used := peak - min(peak, base[0].Value.Uint64())
			const bound = 24 << 20
			t.Logf("largest page %.1f MiB; heap peak during the run %.1f MiB above the start (bound %.1f MiB)", mib(largest), mib(used), mib(bound))
			if used > bound {
				t.Fatalf("heap peak %.1f MiB above the start with pages of %.1f MiB, want at most %.1f MiB", mib(used), mib(largest), mib(bound))
			}
		})
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// TestRunStoredZstdValues: a binary column written by Lance 8.0.0
// (fixtures/lance/bench.mjs, file version 2.1, one fragment) stores each
// pseudo-random 100 KiB value as a zstd frame of one raw block, which the
// value scan hands to the pack writer from its read window without
// decoding it into a buffer of its own. Every packed member, in row order,
// must hold exactly the bytes that Scan (which decodes the frames) reads
// for its row.
func TestRunStoredZstdValues(t *testing.T) {
	t.Parallel()
	const rows = 400
	src := testtool.LanceBench(t, rows, 100<<10, true)
	ctx := t.Context()
	dst := filepath.Join(t.TempDir(), "out")
	j, err := NewJob(ctx, src, converttest.Dest(t, dst), Options{Columns: []string{"data"}, Options: convert.Options{QuickPlan: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Plan(ctx, nil, progress.Nop{}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	sc, err := j.ds.Scan(ctx, lancefmt.ScanOptions{Columns: []string{"data"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var want [][]byte
	for sc.Next() {
		a := sc.RecordBatch().Column(0).(*array.Binary)
		for i := range a.Len() {
			want = append(want, append([]byte(nil), a.Value(i)...))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	set, err := packcore.OpenSet(filepath.Join(dst, convert.MediaDir), packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	n := 0
	for m := range set.Members() {
		got, err := set.Read(m.Key)
		if err != nil {
			t.Fatal(err)
		}
		if n >= len(want) || !bytes.Equal(got, want[n]) {
			t.Fatalf("member %d (%s): %d bytes, not the %d bytes Scan reads for row %d", n, m.Key, len(got), len(want[min(n, len(want)-1)]), n)
		}
		n++
	}
	if n != rows || len(want) != rows {
		t.Fatalf("%d members, %d rows scanned, want %d", n, len(want), rows)
	}
}
