//go:build unix

package keyindex

import "os"

// createSpill makes an index's file in dir and removes its name at once:
// the open file lives on until it is closed, and a process that dies leaves
// nothing behind.
func createSpill(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func closeSpill(f *os.File) error { return f.Close() }
