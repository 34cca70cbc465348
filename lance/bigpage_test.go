package lance

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// bigPageRows and bigPageSize make the large-page dataset: Lance 8.0.0
// writes 655 values of 100 KiB (one append of 64 MiB in bench.mjs) as one
// full-zip page of about 64 MiB per fragment at file version 2.1.
const (
	bigPageRows = 3 * 655
	bigPageSize = 100 << 10
)

// writeBigPageDataset writes, with fixtures/lance/bench.mjs (the real Lance
// library), a dataset of bigPageRows rows of bigPageSize random bytes in a
// binary column "data" at file version 2.1, and returns its directory. It
// skips (fails under BPCONVERT_REQUIRE_TOOLS=1) without node.
func writeBigPageDataset(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("writes a 200 MB dataset")
	}
	testtool.Require(t, "node")
	gen := filepath.Join(testtool.RepoRoot(t), "fixtures", "lance")
	if _, err := os.Stat(filepath.Join(gen, "node_modules", "@lancedb", "lancedb")); err != nil {
		testtool.Missing(t, "fixture dependencies are not installed (run: npm ci --prefix fixtures/lance)")
	}
	out := t.TempDir()
	cmd := exec.Command("node", filepath.Join(gen, "bench.mjs"), out, strconv.Itoa(bigPageRows), strconv.Itoa(bigPageSize), "2.1")
	cmd.Dir = gen
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench.mjs: %v\n%s", err, b)
	}
	return filepath.Join(out, "bench_2_1.lance")
}

// TestScanPeakLargePages: a scan of a binary column stored in pages of
// about 64 MiB holds about one page at a time (the page as read, its values
// moved to its start, the buffer reused from page to page), not a page's
// worth of garbage per page. The Go heap's peak during the scan, above what
// it held before, stays under the largest page + 16 MiB (2 x page + 16 MiB
// before the values were decoded in place).
func TestScanPeakLargePages(t *testing.T) {
	dir := writeBigPageDataset(t)
	ctx := t.Context()
	ds, err := Open(ctx, dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var largest uint64
	pages := 0
	for i := range ds.Fragments() {
		ces, err := ds.ColumnEncodings(&ds.Fragments()[i], []string{"data"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ce := range ces {
			for _, p := range ce.Pages {
				largest = max(largest, p.Bytes)
				pages++
			}
		}
	}
	if largest < 48<<20 || pages < 3 {
		t.Fatalf("the dataset has %d pages of at most %d bytes; the test needs 3 or more of about 64 MiB", pages, largest)
	}
	runtime.GC()
	base := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(base)
	sc, err := ds.Scan(ctx, ScanOptions{Columns: []string{"data"}})
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
	if rows != bigPageRows || bytes != bigPageRows*bigPageSize {
		t.Fatalf("scanned %d rows, %d bytes; want %d, %d", rows, bytes, bigPageRows, bigPageRows*bigPageSize)
	}
	used := peak - min(peak, base[0].Value.Uint64())
	bound := largest + 16<<20
	t.Logf("%d pages, largest %.1f MiB; heap peak during the scan %.1f MiB above the %.1f MiB before (bound %.1f MiB)",
		pages, mib(largest), mib(used), mib(base[0].Value.Uint64()), mib(bound))
	if used > bound {
		t.Fatalf("heap peak %.1f MiB above the start, want at most the %.1f MiB page + 16 MiB", mib(used), mib(largest))
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
