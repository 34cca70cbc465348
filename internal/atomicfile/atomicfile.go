// Package atomicfile writes files that appear whole or not at all: a file is
// written under a temporary name in its final directory, synced, closed,
// renamed into place, and the directory is synced so the rename survives a
// crash. A failure or an Abort removes the temporary file.
//
// It is the one place bpconvert does this; every output file (tables,
// indexes, manifests, video containers) goes through it. WriteNew is the
// one exception, for files inside a directory that is itself published
// whole. It is not for directories (see package stage) and does not lock
// anything.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// File is an output file being written under a temporary name. Write to it
// (it is an *os.File), then call Commit; Abort (safe to defer) removes the
// temporary file unless Commit succeeded.
type File struct {
	*os.File
	final string
	done  bool
}

// Create opens a new temporary file beside path. The file is created with
// perm and the process umask, as os.Create would create path itself (0o644
// under umask 022), so outputs are readable by the same users whatever route
// wrote them.
func Create(path string, perm fs.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	for range 100 {
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, err
		}
		tmp := filepath.Join(dir, "."+base+"."+hex.EncodeToString(rnd[:])+".tmp")
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &File{File: f, final: path}, nil
	}
	return nil, &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
}

// TempName returns the temporary file's path.
func (f *File) TempName() string { return f.File.Name() }

// Commit syncs and closes the file, renames it to its final name and syncs
// the directory. After an error the temporary file is removed.
func (f *File) Commit() error {
	if f.done {
		return errors.New("atomicfile: " + f.final + ": already finished")
	}
	f.done = true
	tmp := f.File.Name()
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.final)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(f.final))
}

// CommitNoReplace is Commit that fails, with an error matching
// fs.ErrExist, when the final name exists: the file is linked to it rather
// than renamed over it, so of two writers racing for one name only one
// wins. The temporary file is removed either way.
func (f *File) CommitNoReplace() error {
	if f.done {
		return errors.New("atomicfile: " + f.final + ": already finished")
	}
	f.done = true
	tmp := f.File.Name()
	defer os.Remove(tmp)
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, f.final)
	}
	if err != nil {
		return err
	}
	return SyncDir(filepath.Dir(f.final))
}

// Abort closes and removes the temporary file. It does nothing after Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	os.Remove(f.File.Name())
}

// WriteFile writes data to path atomically (see the package comment), with
// perm and the umask as os.WriteFile would.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// WriteNew copies r into a new file at path, which must not exist (an error
// matching fs.ErrExist otherwise), then syncs and closes it. Unlike
// WriteFile it writes in place, not under a temporary name, and a failure
// leaves what was written behind: it is for files inside a directory that
// is published whole (such as a staging directory), whose removal clears
// them.
func WriteNew(path string, r io.Reader) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// SyncDir fsyncs a directory so renames inside it survive a crash. File
// systems that cannot sync a directory (EINVAL) are accepted.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
