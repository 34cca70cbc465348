package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// TestWDSConfirm: convert-wds asks like every converter. On a terminal the
// plan is followed by "Proceed with this plan?" (tmux drives a real
// pseudo-terminal); off a terminal, without --yes, it refuses with exit 2
// and writes nothing.
func TestWDSConfirm(t *testing.T) {
	t.Parallel()
	src := filepath.Join(testtool.SharedDir(t), "data", "webdataset", "sample.tgz")

	t.Run("terminal confirms", func(t *testing.T) {
		if testing.Short() {
			t.Skip("drives a terminal; skipped with -short")
		}
		dst := filepath.Join(t.TempDir(), "out")
		r := startTmux(t, "convert-wds", src, dst)
		r.waitFor("Proceed with this plan?")
		if !strings.Contains(r.screen(), "WebDataset") {
			t.Fatalf("no plan above the prompt:\n%s", r.screen())
		}
		r.keys("y")
		if code := r.exitCode(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, r.screen())
		}
		rep, err := packcore.Verify(t.Context(), filepath.Join(dst, "media"))
		if err != nil || !rep.OK() || rep.Members == 0 {
			t.Fatalf("verify after confirming: %+v %v", rep, err)
		}
	})

	t.Run("terminal declines", func(t *testing.T) {
		if testing.Short() {
			t.Skip("drives a terminal; skipped with -short")
		}
		dst := filepath.Join(t.TempDir(), "out")
		r := startTmux(t, "convert-wds", src, dst)
		r.waitFor("Proceed with this plan?")
		r.keys("n")
		if code := r.exitCode(); code != 1 || exists(dst) {
			t.Fatalf("exit %d, dst exists %v:\n%s", code, exists(dst), r.screen())
		}
	})

	t.Run("no terminal without --yes", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "out")
		cmd := exec.Command(binPath, "convert-wds", src, dst)
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "refusing to prompt") || !strings.Contains(string(out), "--yes") {
			t.Fatalf("exit %v:\n%s", err, out)
		}
		if exists(dst) {
			t.Fatal("DST written without --yes")
		}
	})
}
