package lance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// BenchmarkRunLarge converts, per layout, ROWS (BPCONVERT_BENCH_ROWS,
// default 10,000) pseudo-random values of 100 KiB written by pylance 14.0.3
// (fixtures/lance14/bench.py) with the CLI's --yes (no evidence pass); run
// with -cpuprofile or -trace to see where the time goes. Layouts
// (BPCONVERT_BENCH_LAYOUTS, comma-separated; default all): onepage (one
// full-zip page of about 1 GB), batches64 (a full-zip page per 64 rows),
// managed (blob v2 values in _blobs objects). BPCONVERT_BENCH_LANCE=PATH
// converts that dataset instead (BPCONVERT_BENCH_COLUMN names the column;
// default every blob column).
func BenchmarkRunLarge(b *testing.B) {
	type source struct{ name, dir, column string }
	var srcs []source
	if p := os.Getenv("BPCONVERT_BENCH_LANCE"); p != "" {
		srcs = append(srcs, source{filepath.Base(p), p, os.Getenv("BPCONVERT_BENCH_COLUMN")})
	} else {
		rows := "10000"
		if s := os.Getenv("BPCONVERT_BENCH_ROWS"); s != "" {
			rows = s
		}
		layouts := []string{"onepage", "batches64", "managed"}
		if s := os.Getenv("BPCONVERT_BENCH_LAYOUTS"); s != "" {
			layouts = strings.Split(s, ",")
		}
		py := testtool.Python(b)
		for _, l := range layouts {
			dir := filepath.Join(b.TempDir(), l+".lance")
			cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(b), "fixtures", "lance14", "bench.py"), dir, rows, strconv.Itoa(100<<10), l)
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				b.Fatalf("bench.py %s: %v", l, err)
			}
			col := "data"
			if l == "managed" {
				col = ""
			}
			srcs = append(srcs, source{l, dir, col})
		}
	}
	for _, s := range srcs {
		b.Run(s.name, func(b *testing.B) {
			var cols []string
			if s.column != "" {
				cols = []string{s.column}
			}
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				j, err := NewJob(ctx, s.dir, filepath.Join(b.TempDir(), "out"), Options{Options: convert.Options{QuickPlan: true}, Columns: cols})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := j.Plan(ctx, nil, nil); err != nil {
					b.Fatal(err)
				}
				sum, err := j.Run(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(sum.Bytes)
			}
		})
	}
}
