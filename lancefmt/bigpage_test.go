package lancefmt

import (
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// bigPageSize is the size of every value of the large-page datasets.
const bigPageSize = 100 << 10

// largePageCases are the large-page datasets, written by the real Lance
// library (testtool.LanceBench): Lance 8.0.0 writes 655 values of 100 KiB
// (one append of 64 MiB) as one full-zip page of about 64 MiB per fragment;
// written in one go, 2,620 of them become one fragment of 9 pages of about
// 30 MiB, which a scan must not join into one batch (PageBatches; the
// default batch of 8,192 rows would hold the whole fragment).
var largePageCases = []struct {
	name        string
	rows        int
	oneFragment bool
	minPage     uint64
	minPages    int
}{
	{"a page per fragment", 3 * 655, false, 48 << 20, 3},
	{"one fragment of pages", 2620, true, 24 << 20, 6},
}

// TestScanPeakLargePages: a scan of a binary column stored in large pages
// holds about one page at a time (the page as read, its values moved to its
// start, the buffer reused from page to page), not a page's worth of
// garbage per page, nor a fragment's pages joined into one batch. The Go
// heap's peak during the scan, above what it held before, stays under the
// largest page + 16 MiB (2 x page + 16 MiB before the values were decoded
// in place; for the fragment of 9 pages, 9 pages before PageBatches).
func TestScanPeakLargePages(t *testing.T) {
	for _, tc := range largePageCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := testtool.LanceBench(t, tc.rows, bigPageSize, tc.oneFragment)
			ctx := t.Context()
			ds, err := Open(ctx, dir, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			desc, err := Describe(ctx, ds, DescribeOptions{Columns: []string{"data"}})
			if err != nil {
				t.Fatal(err)
			}
			var largest uint64
			pages := 0
			for _, c := range desc.Columns {
				largest, pages = max(largest, c.LargestPage), pages+c.Pages
			}
			if largest < tc.minPage || pages < tc.minPages {
				t.Fatalf("the dataset has %d pages of at most %d bytes; the test needs %d or more of at least %d", pages, largest, tc.minPages, tc.minPage)
			}
			runtime.GC()
			base := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			metrics.Read(base)
			sc, err := ds.Scan(ctx, ScanOptions{Columns: []string{"data"}, PageBatches: true})
			if err != nil {
				t.Fatal(err)
			}
			stop := testtool.HeapPeak()
			var rows, bytes int64
			for sc.Next() {
				a := sc.RecordBatch().Column(0).(*array.Binary)
				rows += int64(a.Len())
				bytes += int64(len(a.ValueBytes()))
			}
			peak := stop()
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			sc.Close()
			if rows != int64(tc.rows) || bytes != int64(tc.rows)*bigPageSize {
				t.Fatalf("scanned %d rows, %d bytes; want %d, %d", rows, bytes, tc.rows, tc.rows*bigPageSize)
			}
			used := peak - min(peak, base[0].Value.Uint64())
			bound := largest + 16<<20
			t.Logf("%d pages, largest %.1f MiB; heap peak during the scan %.1f MiB above the %.1f MiB before (bound %.1f MiB)",
				pages, mib(largest), mib(used), mib(base[0].Value.Uint64()), mib(bound))
			if used > bound {
				t.Fatalf("heap peak %.1f MiB above the start, want at most the %.1f MiB page + 16 MiB", mib(used), mib(largest))
			}
		})
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
