package filelock

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMkdirTempSweeps: making a directory removes the ones of its prefix
// that killed processes left (unlocked and old) and nothing else: not one
// a live process holds, not one just made, not another prefix's; release
// removes the new one.
func TestMkdirTempSweeps(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const prefix = "bpconvert-finalize-"
	old := time.Now().Add(-2 * staleAfter)
	cases := []struct {
		name   string
		age    time.Time
		locked bool
		kept   bool
	}{
		{name: prefix + "killed", age: old, kept: false},
		{name: prefix + "live", age: old, locked: true, kept: true},
		{name: prefix + "just-made", age: time.Now(), kept: true},
		{name: "other-program", age: old, kept: true},
	}
	for _, c := range cases {
		dir := filepath.Join(root, c.name)
		if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "out", "t.parquet"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if c.locked {
			lock, err := LockDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { lock.Close() })
		}
		if err := os.Chtimes(dir, c.age, c.age); err != nil {
			t.Fatal(err)
		}
	}
	dir, release, err := MkdirTemp(root, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		_, err := os.Stat(filepath.Join(root, c.name))
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept %v, want %v (%v)", c.name, kept, c.kept, err)
		}
	}
	if filepath.Dir(dir) != root {
		t.Fatalf("join directory %s is not under %s", dir, root)
	}
	// The new directory is held: a sweep, however late, leaves it.
	sweep(root, prefix, time.Now().Add(time.Hour))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("a sweep removed the held directory: %v", err)
	}
	release()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("release left %s: %v", dir, err)
	}
}
