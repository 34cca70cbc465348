package parquet

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// childEnv names the variable that makes the test binary a conversion
// process (see convertChild): its value is the JSON of a childJob.
const childEnv = "BPCONVERT_TEST_CONVERT_PARQUET"

// childJob is the conversion a child process runs.
type childJob struct {
	Src, Dst string
	Columns  []string
	// General takes the general path (to see the test fail on it).
	General bool
}

// convertChild runs, in a process of its own, the conversion that the
// environment names (inspection with its evidence pass, plan, run) and
// reports the members it packed (testtool.ChildMain adds its peak RSS);
// without the variable it returns.
func convertChild() {
	testtool.ChildMain(childEnv, func(cj childJob, out io.Writer) error {
		ctx := context.Background()
		dst, err := convert.ParseDest(cj.Dst, "")
		if err != nil {
			return err
		}
		j, err := NewJob(ctx, cj.Src, dst, Options{Columns: cj.Columns, general: cj.General})
		if err != nil {
			return err
		}
		if _, err := j.Plan(ctx, nil, nil); err != nil {
			return err
		}
		sum, err := j.Run(ctx, nil)
		if err == nil {
			fmt.Fprintf(out, "members: %d\n", sum.Blobs)
		}
		return err
	})
}

// TestConvertPeakRSS converts tables that pyarrow wrote
// (fixtures/parquet/big.py: 50 KiB pseudo-random payloads, 2,000 rows a row
// group, about 100 MB, snappy; pyarrow puts the first 1,024 values of a
// row group into a dictionary page of about 52 MB and the rest into one
// plain page) in a process of its own, whose peak RSS must stay within 2 x
// the largest row group's uncompressed size + 64 MiB however many row
// groups there are: a binary column in 3 row groups and a media
// struct<bytes, path> in 2. The bound does not hold where row groups are
// decoded into Arrow batches whole or their buffers pile up (the general
// path peaked at about 450 MiB here).
func TestConvertPeakRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 500 MB of parquet")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		form string
		rows int
	}{
		{"plain", 6000},
		{"hf", 4000},
	} {
		t.Run(tc.form, func(t *testing.T) {
			src, rg := bigTable(t, dir, tc.rows, 50<<10, 2000, "snappy", tc.form)
			defer os.RemoveAll(src)
			bound := 2*rg + 64<<20
			rss, members := peakRSS(t, childJob{Src: src, Dst: filepath.Join(t.TempDir(), "out"), Columns: []string{"image"}})
			t.Logf("%d rows in row groups of at most %.1f MiB: peak RSS %.1f MiB (bound %.1f MiB)", tc.rows, mib(rg), mib(rss), mib(bound))
			if members != int64(tc.rows) {
				t.Errorf("%d members packed, want %d", members, tc.rows)
			}
			if rss > bound {
				t.Errorf("peak RSS %.1f MiB, want at most %.1f MiB", mib(rss), mib(bound))
			}
		})
	}
}

// peakRSS runs job in a child process and returns its peak RSS in bytes
// and the members it packed.
func peakRSS(t *testing.T, job childJob) (int64, int64) {
	t.Helper()
	rss, lines := testtool.RunChild(t, childEnv, job)
	var members int64
	if len(lines) != 1 {
		t.Fatalf("the conversion printed %q, not its members", lines)
	}
	if _, err := fmt.Sscanf(lines[0], "members: %d", &members); err != nil {
		t.Fatalf("the conversion printed %q, not its members", lines)
	}
	return rss, members
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
