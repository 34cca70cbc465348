//go:build unix

package filelock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// TryLock locks f exclusively, failing at once (ErrLocked) when another
// open file description holds a lock on it.
func TryLock(f *os.File) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("%s: %w", f.Name(), ErrLocked)
		}
		return fmt.Errorf("%s: lock: %w", f.Name(), err)
	}
	return nil
}

func openDir(dir string) (*os.File, error) { return os.Open(dir) }
