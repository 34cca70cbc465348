//go:build !linux && !darwin

package main

// statFree cannot tell free space on this system: -1.
func statFree(string) int64 { return -1 }
