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

// dropCache tells the kernel that f's cached pages will not be read again
// soon, so it frees them now (they are clean: the shard is synced) rather
// than reclaim them, later and at a higher cost, when memory runs short.
func dropCache(f *os.File) {
	_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
