//go:build windows

package filelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// TryLock locks f exclusively, failing at once (ErrLocked) when another
// handle holds a lock on it.
func TryLock(f *os.File) error {
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &windows.Overlapped{})
	if err != nil {
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return fmt.Errorf("%s: %w", f.Name(), ErrLocked)
		}
		return fmt.Errorf("%s: lock: %w", f.Name(), err)
	}
	return nil
}

// lockName is the file inside a directory whose lock stands for the
// directory's.
const lockName = ".bpconvert-dir.lock"

func openDir(dir string) (*os.File, error) {
	if info, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !info.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	return os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o644)
}
