package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestDiskFull converts 8 MiB of tars into a 2 MiB file system (a tmpfs
// the test mounts): the plan (on stdout) warns that the space is short, the run stops
// with an error that names the full file system and what is free, the hint
// says the temporary output was removed, and nothing is left there.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	small := filepath.Join(root, "small")
	if err := os.Mkdir(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", small).CombinedOutput(); err != nil {
		testtool.Missing(t, "mounting a small tmpfs (needs root): "+strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", small).Run() })
	shards := wdsShards(t, root, 1, 8, 1<<20)
	dst := filepath.Join(small, "dst")
	r := bp(t, append(append([]string{"convert-wds"}, shards...), dst, "--yes")...)
	if r.code != exitFailure {
		t.Fatalf("exit %d, want %d: %s", r.code, exitFailure, r.stderr)
	}
	for _, want := range []string{
		small + " has ", " free and this run needs about 8.0 MiB there",
		"bpconvert: error: the file system of " + small + " is full",
		"bpconvert: hint: the run's temporary output was removed",
	} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("output lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	if ents, err := os.ReadDir(small); err != nil || len(ents) != 0 {
		t.Fatalf("left in the full file system: %v %v", ents, err)
	}
}
