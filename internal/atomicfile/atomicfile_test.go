package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// TestWriteNew checks that WriteNew writes the reader's bytes to a new file
// and refuses, leaving it as it is, a path that exists.
func TestWriteNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.bin")
	if err := WriteNew(p, strings.NewReader("first")); err != nil {
		t.Fatal(err)
	}
	err := WriteNew(p, strings.NewReader("second"))
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteNew: %v, want an error matching fs.ErrExist", err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "first" {
		t.Fatalf("file holds %q, want %q", b, "first")
	}
	if err := WriteNew(filepath.Join(dir, "missing", "b.bin"), strings.NewReader("x")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("WriteNew into a missing directory: %v, want an error matching fs.ErrNotExist", err)
	}
}
