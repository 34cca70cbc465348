//go:build !linux

package packcore

import "os"

// writev writes a and then b to f (two writes where writev is not used).
func writev(f *os.File, a, b []byte) error {
	if _, err := f.Write(a); err != nil {
		return err
	}
	_, err := f.Write(b)
	return err
}
