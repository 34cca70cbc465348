//go:build linux || darwin

package main

import "golang.org/x/sys/unix"

// statFree returns the bytes free to an unprivileged user on the file
// system holding dir, or -1.
func statFree(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
