package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestModes checks that outputs get the mode os.Create would give them under
// the process umask, not os.CreateTemp's 0600.
func TestModes(t *testing.T) {
	t.Parallel()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := WriteFile(p, []byte("{}"), 0o666); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o644 {
		t.Fatalf("mode %o, want 644", got)
	}
}

// TestAbortLeavesNothing checks that an aborted file leaves neither the
// final nor the temporary name, and that a committed one replaces nothing
// half-written.
func TestAbortLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "t.parquet")
	f, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("partial"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("final name visible before commit: %v", err)
	}
	f.Abort()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
	f, err = Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("whole")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // no effect after Commit
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "whole" {
		t.Fatalf("got %q, %v", b, err)
	}
	ents, _ = os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left %v", ents)
	}
}
