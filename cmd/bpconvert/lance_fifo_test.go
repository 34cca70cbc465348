package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLanceFIFO: a Lance dataset whose manifest or data file is a FIFO is
// refused at once (exit 3, naming the file) by convert-lance and
// lance-inspect, never read: a read of a FIFO would block beyond signals.
func TestLanceFIFO(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "..", "lancefmt", "testdata", "lance", "s_blob_2_1.lance")
	for _, victim := range []string{"manifest", "data"} {
		t.Run(victim, func(t *testing.T) {
			ds := filepath.Join(t.TempDir(), "ds.lance")
			if out, err := exec.Command("cp", "-r", src, ds).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			pattern := filepath.Join(ds, "_versions", "*.manifest")
			if victim == "data" {
				pattern = filepath.Join(ds, "data", "*.lance")
			}
			files, _ := filepath.Glob(pattern)
			if len(files) == 0 {
				t.Fatalf("no %s", pattern)
			}
			for _, f := range files {
				os.Remove(f)
				if err := syscall.Mkfifo(f, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, args := range [][]string{
				{"convert-lance", ds, filepath.Join(t.TempDir(), "out"), "--yes"},
				{"lance-inspect", ds},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				cmd := exec.CommandContext(ctx, binPath, args...)
				out, err := cmd.CombinedOutput()
				blocked := ctx.Err() != nil
				cancel()
				if blocked {
					t.Fatalf("%s blocked on the FIFO", args[0])
				}
				code := -1
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				if code != 3 || !strings.Contains(string(out), "not a regular file") || !strings.Contains(string(out), "ds.lance") {
					t.Fatalf("%s: exit %d, want 3 naming the file:\n%s", args[0], code, out)
				}
			}
		})
	}
}
