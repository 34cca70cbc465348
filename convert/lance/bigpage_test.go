package lance

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestRunPeakLargePages: converting a binary column stored in pages of
// about 64 MiB (written by Lance 8.0.0 through fixtures/lance/bench.mjs:
// 655 values of 100 KiB per fragment, one full-zip page each, file version
// 2.1) holds the page as read, its values moved to its start, not more:
// the Go heap's peak during the run, above what it held before, stays under
// the largest page + 24 MiB (the bound of bench/lance_convert.sh's peak RSS
// is 2 x page + 64 MiB).
func TestRunPeakLargePages(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 200 MB dataset")
	}
	testtool.Require(t, "node")
	gen := filepath.Join(testtool.RepoRoot(t), "fixtures", "lance")
	if _, err := os.Stat(filepath.Join(gen, "node_modules", "@lancedb", "lancedb")); err != nil {
		testtool.Missing(t, "fixture dependencies are not installed (run: npm ci --prefix fixtures/lance)")
	}
	const rows, size = 3 * 655, 100 << 10
	tmp := t.TempDir()
	cmd := exec.Command("node", filepath.Join(gen, "bench.mjs"), tmp, strconv.Itoa(rows), strconv.Itoa(size), "2.1")
	cmd.Dir = gen
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench.mjs: %v\n%s", err, b)
	}
	src := filepath.Join(tmp, "bench_2_1.lance")
	ctx := t.Context()
	j, err := NewJob(ctx, src, filepath.Join(tmp, "out"), Options{Columns: []string{"data"}, QuickPlan: true})
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
	if largest < 48<<20 {
		t.Fatalf("the largest page has %d bytes; the test needs pages of about 64 MiB", largest)
	}
	if _, err := j.Plan(ctx, nil); err != nil {
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
	if sum.Blobs != rows {
		t.Fatalf("%d members packed, want %d", sum.Blobs, rows)
	}
	used := peak - min(peak, base[0].Value.Uint64())
	bound := largest + 24<<20
	t.Logf("largest page %.1f MiB; heap peak during the run %.1f MiB above the start (bound %.1f MiB)", mib(largest), mib(used), mib(bound))
	if used > bound {
		t.Fatalf("heap peak %.1f MiB above the start, want at most the %.1f MiB page + 24 MiB", mib(used), mib(largest))
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
