//go:build unix

package srcfile

import (
	"os"
	"syscall"
)

// openNonBlocking opens path with O_NONBLOCK, so opening a FIFO without a
// writer returns at once instead of waiting for one.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
