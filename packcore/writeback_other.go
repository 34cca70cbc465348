//go:build !linux

package packcore

import "os"

// startWriteback does nothing where sync_file_range is not available; the
// fsync that completes a shard does all the work.
func startWriteback(f *os.File, off, n int64) {}

// dropCache does nothing where posix_fadvise is not available.
func dropCache(f *os.File) {}
