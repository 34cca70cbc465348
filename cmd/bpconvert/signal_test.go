package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestSignalRemovesOutput interrupts a running pack and checks the exit code
// and that neither the destination nor any staging or temporary file is
// left behind.
func TestSignalRemovesOutput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			root := t.TempDir()
			src := filepath.Join(root, "src")
			os.MkdirAll(src, 0o755)
			// A large sparse file keeps the writer busy long enough.
			f, _ := os.Create(filepath.Join(src, "big.bin"))
			f.Truncate(64 << 30)
			f.Close()
			dst := filepath.Join(root, "dst")
			cmd := exec.Command(binPath, "pack", src, dst)
			var se bytes.Buffer
			cmd.Stderr = &se
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			staging := filepath.Join(root, ".dst.bpconvert-staging")
			if !testtool.WaitFor(20*time.Second, 20*time.Millisecond, func() bool { return hasTempShard(staging) }) {
				cmd.Process.Kill()
				t.Fatal("the pack never started writing")
			}
			cmd.Process.Signal(tc.sig)
			err := cmd.Wait()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != tc.code {
				t.Fatalf("exit: %v, want %d\n%s", err, tc.code, se.String())
			}
			if !strings.Contains(se.String(), "interrupted (SIGINT)") && !strings.Contains(se.String(), "interrupted (SIGTERM)") {
				t.Errorf("stderr does not say it was interrupted:\n%s", se.String())
			}
			if exists(dst) || exists(staging) {
				t.Fatalf("left behind: dst %v, staging %v", exists(dst), exists(staging))
			}
			ents, _ := os.ReadDir(root)
			if len(ents) != 1 {
				t.Fatalf("unexpected files in %s: %v", root, ents)
			}
		})
	}
}

func hasTempShard(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			return true
		}
	}
	return false
}
