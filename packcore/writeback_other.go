//go:build !linux

package packcore

import "os"

// startWriteback does nothing where sync_file_range is not available; the
// fsync that completes a shard does all the work.
func startWriteback(f *os.File, off, n int64) {}
