package srcfile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// File is a regular file opened by OpenFile, with the size it had when it
// was opened: ranged reads at any offset, as the readers of tables, shards
// and objects take them.
type File struct {
	*os.File
	size int64
}

// Size is the file's length in bytes when it was opened.
func (f *File) Size() int64 { return f.size }

// OpenFile opens path as Open does, errors as Open's (a FIFO, socket,
// device or directory is refused without blocking, and the error does not
// repeat the path), and returns it with its size.
func OpenFile(path string) (*File, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &File{File: f, size: fi.Size()}, nil
}

// Named returns err with path named, as an *fs.PathError of op, when it
// holds none (Open's refusal of a file that is not regular, ReadFile's of
// one too large); nil and errors that name their path are returned as
// they are.
func Named(op, path string, err error) error {
	var pe *fs.PathError
	if err == nil || errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// Cause strips the operation and path from an *fs.PathError, for a caller
// that names the path itself; other errors are returned as they are.
func Cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Entry is a file that List found.
type Entry struct {
	// Name is relative to the listed directory, slash-separated.
	Name string
	// Mode holds the file's type bits (0 for a regular file); for a
	// symbolic link, those of what it leads to, or its own when it leads
	// nowhere.
	Mode    fs.FileMode
	Size    int64
	ModTime time.Time
}

// List returns the files below the directory dir, at any depth, in byte
// order of their names. Files of every kind are listed (Entry.Mode tells
// them apart), directories are not; a symbolic link is described by what
// it leads to and never descended into, even when that is a directory
// (which is listed then, with fs.ModeDir). dir itself may be a link to a
// directory. enter, when not nil, is asked about each directory below dir
// by its name, and one it refuses is not read. A missing dir gives an
// error matching fs.ErrNotExist, one that is not a directory a
// *fs.PathError saying so; an error reading a directory below is returned
// as it is.
func List(ctx context.Context, dir string, enter func(name string) bool) ([]Entry, error) {
	root := dir
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// WalkDir does not descend into a root that is a link.
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			if root, err = filepath.EvalSymlinks(dir); err != nil {
				return nil, err
			}
		}
	}
	var out []Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == root && !d.IsDir() {
			return &fs.PathError{Op: "readdir", Path: dir, Err: errors.New("not a directory")}
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			if p != root && enter != nil && !enter(name) {
				return fs.SkipDir
			}
			return nil
		}
		fi, err := os.Stat(p)
		if err != nil {
			// a link that leads nowhere is described as itself
			fi, err = d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed since its directory was read
			}
			if err != nil {
				return err
			}
		}
		out = append(out, Entry{Name: name, Mode: fi.Mode().Type(), Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
