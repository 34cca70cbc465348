package lancefmt

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// openSource opens a file of the dataset for reading. Only regular files
// are read: a FIFO in place of a manifest or data file would block the
// reader forever, beyond the reach of signals, so it is refused (an error
// matching srcfile.ErrNotRegular, naming the path) without blocking.
func openSource(path string) (*os.File, error) {
	f, err := srcfile.Open(path)
	if errors.Is(err, srcfile.ErrNotRegular) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return f, err
}

// readSource reads a regular file of the dataset whole (see openSource).
func readSource(path string) ([]byte, error) {
	f, err := openSource(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
