//go:build !unix

package keyindex

import (
	"errors"
	"os"
)

// createSpill makes an index's file in the system's temporary directory:
// an open file cannot lose its name here, and one left in dir would end up
// in the output.
func createSpill(_, pattern string) (*os.File, error) {
	return os.CreateTemp("", pattern)
}

// closeSpill closes and removes an index's file.
func closeSpill(f *os.File) error {
	err := f.Close()
	if rerr := os.Remove(f.Name()); err == nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	return err
}
