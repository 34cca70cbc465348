// Package srcfile opens the files converters read from a source dataset.
// Only regular files are read: a FIFO, socket or device given as a table,
// shard, metadata file or video is refused with an error that says what it
// is, instead of blocking a read that no signal can interrupt. Resolve keeps
// reads inside the dataset root when symbolic links point elsewhere.
//
// It is not for output files (see internal/atomicfile) and holds no state.
package srcfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotRegular is matched (errors.Is) by the errors for a source file that
// is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrOutside is matched (errors.Is) by the errors for a path whose symbolic
// links resolve outside the dataset root.
var ErrOutside = errors.New("outside the source directory")

// Kind names what a file mode is, for messages: "a FIFO", "a socket",
// "a directory", "a character device", "a block device", "a symbolic
// link", "a regular file" or "an irregular file".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file"
}

// CheckMode returns nil for a regular file and an error matching
// ErrNotRegular that names the file's kind otherwise.
func CheckMode(m fs.FileMode) error {
	if m.IsRegular() {
		return nil
	}
	return &notRegularError{kind: Kind(m)}
}

type notRegularError struct{ kind string }

func (e *notRegularError) Error() string {
	return "is " + e.kind + ", not a regular file"
}

func (e *notRegularError) Unwrap() error { return ErrNotRegular }

// Stat follows symbolic links and returns the file's information when it is
// a regular file, or an error matching ErrNotRegular.
func Stat(path string) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := CheckMode(fi.Mode()); err != nil {
		return nil, err
	}
	return fi, nil
}

// Open opens path for reading when it is a regular file. The open itself
// does not block on a FIFO (it is made non-blocking, then refused), and a
// socket or device is refused by its kind; the error matches ErrNotRegular
// and does not repeat the path, which callers name.
func Open(path string) (*os.File, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, CheckMode(fi.Mode())
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := CheckMode(fi.Mode()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads a regular file whole, refusing one larger than max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return b, nil
}

// Resolve resolves the symbolic links of path and returns the real path
// when it lies inside rootReal (a root whose own links are resolved, see
// filepath.EvalSymlinks). A path outside gives an error matching
// ErrOutside, worded as convert-parquet words it: "resolves to X, outside
// the source directory".
func Resolve(rootReal, path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	if !Within(rootReal, real) {
		return "", &outsideError{real: real}
	}
	return real, nil
}

// Within reports whether p is root or lies below it (both absolute, clean).
func Within(root, p string) bool {
	if p == root {
		return true
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

type outsideError struct{ real string }

func (e *outsideError) Error() string {
	return "resolves to " + e.real + ", " + ErrOutside.Error()
}

func (e *outsideError) Unwrap() error { return ErrOutside }
