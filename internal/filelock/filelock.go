// Package filelock takes exclusive, non-blocking advisory locks: on an open
// file (TryLock) and on a directory (LockDir), released when the returned
// file is closed. Unix systems use flock(2), Windows LockFileEx; a
// directory cannot be locked on Windows, so a lock file inside it stands in.
// MkdirTemp makes temporary directories held by such a lock, so that the
// ones a killed process leaves are told apart and removed later.
package filelock

import (
	"errors"
	"os"
)

// ErrLocked is matched by the error of a lock that another holder has.
var ErrLocked = errors.New("locked by another process")

// LockDir locks the directory dir and returns the file whose Close releases
// the lock.
func LockDir(dir string) (*os.File, error) {
	f, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	if err := TryLock(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
