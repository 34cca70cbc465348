package parquet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// peakLine starts the line on which a child process reports its peak RSS
// in KiB.
const peakLine = "peak RSS KiB:"

// convertChild runs, in a process of its own, the conversion that the
// environment names (inspection with its evidence pass, plan, run), prints
// its peak RSS (VmHWM) and exits; without the variable it returns.
func convertChild() {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return
	}
	var cj childJob
	err := json.Unmarshal([]byte(spec), &cj)
	if err == nil {
		err = func() error {
			ctx := context.Background()
			j, err := NewJob(ctx, cj.Src, cj.Dst, Options{Columns: cj.Columns, general: cj.General})
			if err != nil {
				return err
			}
			if _, err := j.Plan(ctx, nil, nil); err != nil {
				return err
			}
			sum, err := j.Run(ctx, nil)
			if err == nil {
				fmt.Printf("members: %d\n", sum.Blobs)
			}
			return err
		}()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The process's own high-water mark (its rusage maxrss would count
	// the parent's RSS at the fork).
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Printf("%s %s\n", peakLine, strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")))
		}
	}
	os.Exit(0)
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
	spec, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("conversion: %v\n%s", err, stderr.String())
	}
	var kib, members int64
	if _, err := fmt.Sscanf(string(out), "members: %d\n"+peakLine+" %d", &members, &kib); err != nil || kib == 0 {
		t.Fatalf("the conversion printed %q, not its members and peak RSS", out)
	}
	return kib << 10, members
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
