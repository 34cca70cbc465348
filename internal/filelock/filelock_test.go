package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLocks: a second lock on a locked file or directory fails with
// ErrLocked while the first is held, and succeeds once it is released.
func TestLocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "lock")
	for _, tc := range []struct {
		name string
		lock func() (*os.File, error)
	}{
		{"file", func() (*os.File, error) {
			f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o644)
			if err != nil {
				return nil, err
			}
			if err := TryLock(f); err != nil {
				f.Close()
				return nil, err
			}
			return f, nil
		}},
		{"directory", func() (*os.File, error) { return LockDir(dir) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, err := tc.lock()
			if err != nil {
				t.Fatal(err)
			}
			if second, err := tc.lock(); !errors.Is(err, ErrLocked) {
				if second != nil {
					second.Close()
				}
				t.Fatalf("second lock while the first is held: %v, want ErrLocked", err)
			}
			first.Close()
			again, err := tc.lock()
			if err != nil {
				t.Fatalf("lock after release: %v", err)
			}
			again.Close()
		})
	}
	if _, err := LockDir(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("locked a missing directory")
	}
}
