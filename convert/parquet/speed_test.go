package parquet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// bigTable writes one table with fixtures/parquet/big.py (pyarrow) into a
// new directory under dir and returns the directory and the largest row
// group's uncompressed size.
func bigTable(t testing.TB, dir string, rows, payload, rgRows int, codec, form string) (string, int64) {
	t.Helper()
	py := testtool.Python(t)
	src := filepath.Join(dir, form+"-"+codec)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join(fixtureDir, "big.py"), filepath.Join(src, "table.parquet"),
		strconv.Itoa(rows), strconv.Itoa(payload), strconv.Itoa(rgRows), codec, form)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("big.py: %v", err)
	}
	rg, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("big.py printed %q", out)
	}
	return src, rg
}

// BenchmarkConvertLarge converts 20,000 rows of 50 KiB payloads in row
// groups of 2,000 rows (1 GB, about 100 MB a row group), written by pyarrow,
// for each form and codec; run with -cpuprofile/-memprofile to see where the
// time goes.
func BenchmarkConvertLarge(b *testing.B) {
	rows := 20000
	if s := os.Getenv("BPCONVERT_BENCH_ROWS"); s != "" {
		rows, _ = strconv.Atoi(s)
	}
	forms := []string{"plain", "hf"}
	if s := os.Getenv("BPCONVERT_BENCH_FORMS"); s != "" {
		forms = strings.Split(s, ",")
	}
	codecs := []string{"snappy", "zstd", "none"}
	if s := os.Getenv("BPCONVERT_BENCH_CODECS"); s != "" {
		codecs = strings.Split(s, ",")
	}
	for _, form := range forms {
		for _, codec := range codecs {
			b.Run(form+"-"+codec, func(b *testing.B) {
				src, _ := bigTable(b, b.TempDir(), rows, 50<<10, 2000, codec, form)
				ctx := context.Background()
				b.SetBytes(int64(rows) * 50 << 10)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					ins, err := Inspect(ctx, src, Options{})
					if err != nil {
						b.Fatal(err)
					}
					sel, err := ins.Select([]string{"image"}, nil)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := Convert(ctx, ins, sel, converttest.Dest(b, filepath.Join(b.TempDir(), "out")), Options{}, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
