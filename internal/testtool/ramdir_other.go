//go:build !linux

package testtool

// ramRoom is 0 off Linux: RAMDir then always returns t.TempDir().
func ramRoom(string) int64 { return 0 }

// memAvailable is 0 off Linux.
func memAvailable() int64 { return 0 }
