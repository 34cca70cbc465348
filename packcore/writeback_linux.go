package packcore

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to begin writing a range of f to disk
// without waiting for it. Errors are ignored: the fsync that completes the
// shard reports any real failure.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
