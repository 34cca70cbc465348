package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestKillAndRerun kills a pack with SIGKILL mid-shard, re-runs it into the
// same destination, and checks that the re-run succeeds and writes exactly
// what a clean run writes.
func TestKillAndRerun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("packs 1 GiB three times; skipped with -short")
	}
	root := t.TempDir()
	src := filepath.Join(root, "src")
	writeTree(t, src, map[string]string{"a/first.txt": "first", "m/small.txt": "s", "z/last.txt": "last"})
	sparseFile(t, filepath.Join(src, "m/big.bin"), 1<<30, []int64{0, 1 << 29, 1<<30 - 1})

	dst := filepath.Join(root, "dst")
	cmd := exec.Command(binPath, "pack", src, dst, "--max-pack-bytes", "256MiB")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(root, ".dst.bpconvert-staging")
	if !testtool.WaitFor(30*time.Second, 10*time.Millisecond, func() bool { return hasTempShard(staging) }) {
		cmd.Process.Kill()
		t.Fatal("pack never started a shard")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !exists(staging) || exists(dst) {
		t.Fatalf("after SIGKILL: staging %v, dst %v (want a stale staging dir and no dst)", exists(staging), exists(dst))
	}

	if r := bp(t, "pack", src, dst, "--max-pack-bytes", "256MiB"); r.code != 0 {
		t.Fatalf("re-run: %+v", r)
	}
	clean := filepath.Join(root, "clean")
	if r := bp(t, "pack", src, clean, "--max-pack-bytes", "256MiB"); r.code != 0 {
		t.Fatalf("clean run: %+v", r)
	}
	a, err := os.ReadFile(filepath.Join(dst, "pack.manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(clean, "pack.manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatalf("re-run output differs from a clean run:\n%s\n%s", a, b)
	}
	if exists(staging) {
		t.Fatal("staging directory left after the re-run")
	}
	if r := bp(t, "verify", dst); r.code != 0 {
		t.Fatalf("verify: %+v", r)
	}
}
