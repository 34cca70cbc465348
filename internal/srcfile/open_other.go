//go:build !unix

package srcfile

import "os"

// openNonBlocking opens path for reading (systems without FIFOs in the
// file system need no more).
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
