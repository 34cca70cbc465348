package dsverify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"
)

// place is a location a check reads, opened once (srctree): the dataset
// verified, or the source compared with it. Every file is read through
// the tree: a local one directly, one in object storage with ranged reads
// (tables, footers) or streamed with reads fetched ahead (tars, files
// compared whole). name is the root as it was given, which messages use.
type place struct {
	t    *srctree.Tree
	name string
}

// openPlace opens loc, local or in a bucket: a directory or a prefix with
// objects under it as a tree (file ""), a single file or object as the
// tree of the directory that holds it (file its name there). A location in
// a bucket that names nothing is an empty tree (Empty), for the caller to
// say so in its words; a local one that names nothing gives the error of
// its stat, naming loc.
func openPlace(ctx context.Context, loc string, o objstore.Options) (p place, file string, err error) {
	t, err := srctree.Open(ctx, loc, o)
	if errors.Is(err, srctree.ErrNotDir) || (err == nil && t.Empty()) {
		// a single file, or an object (found without listing again)
		var one *srctree.Tree
		var name string
		var serr error
		if err == nil {
			one, name, serr = t.Object(ctx)
		} else {
			one, name, serr = srctree.OpenSource(ctx, loc, o)
		}
		switch {
		case serr == nil:
			return place{t: one, name: parentName(loc, name)}, name, nil
		case err == nil && errors.Is(serr, fs.ErrNotExist):
			return place{t: t, name: loc}, "", nil
		}
		err = serr
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe == err {
			if abs, aerr := filepath.Abs(loc); aerr == nil && pe.Path == abs {
				err = &fs.PathError{Op: pe.Op, Path: loc, Err: pe.Err}
			}
		}
		return place{}, "", err
	}
	return place{t: t, name: loc}, "", nil
}

// parentName names the directory that holds file, the last element of
// loc, as loc names it.
func parentName(loc, file string) string {
	d := strings.TrimSuffix(strings.TrimSuffix(loc, "/"), file)
	if d == "" {
		return "."
	}
	if t := strings.TrimRight(d, "/"); t != "" {
		return t
	}
	return "/"
}

// parent names the directory that holds the place's root.
func (p place) parent() string {
	loc := p.t.Location()
	if p.t.Remote() {
		if i := strings.LastIndex(loc, "/"); i > len("s3://") {
			return loc[:i]
		}
		return loc
	}
	return filepath.Dir(loc)
}

// join names rel, slash-separated and relative to the root, as the root's
// name is written: with slashes in a bucket, with the system's separator on
// this machine.
func (p place) join(rel string) string {
	if p.t.Remote() {
		return strings.TrimSuffix(p.name, "/") + "/" + strings.TrimPrefix(path.Clean(rel), "/")
	}
	return filepath.Join(p.name, filepath.FromSlash(rel))
}

// file is the file rel of the place.
func (p place) file(rel string) treeFile { return treeFile{t: p.t, rel: rel, name: p.join(rel)} }

// relOf returns the name in the tree of a location that the tree named by
// Path (a reader over the tree hands such locations back: lancefmt's blob
// locations), false for one outside it.
func (p place) relOf(loc string) (string, bool) {
	root := strings.TrimSuffix(p.t.Path(""), "/")
	rel, ok := strings.CutPrefix(loc, root+"/")
	return rel, ok && rel != ""
}

// storeKey is the key of rel ("." for the root) in the store of a place in
// a bucket, with the store.
func (p place) storeKey(rel string) (objstore.Store, string) {
	st, prefix := p.t.Store()
	if rel == "." || rel == "" {
		return st, strings.TrimSuffix(prefix, "/")
	}
	return st, prefix + rel
}

// treeFile is a file of an opened place: rel in its tree, and name for
// messages.
type treeFile struct {
	t    *srctree.Tree
	rel  string
	name string
}

// String is the file's name in messages.
func (f treeFile) String() string { return f.name }

// openTree opens the file through its tree: a local one at the tree's path
// of it, its links followed wherever they lead (as the file was named: a
// dataset may link anywhere, and the open names what it found there), an
// object with ranged reads. The error names the file.
func (f treeFile) openTree(ctx context.Context) (srctree.File, error) {
	r, err := f.t.OpenEntry(ctx, srctree.Entry{Name: f.rel, Path: f.t.Path(f.rel)})
	if err != nil {
		return nil, srcfile.Named("open", f.name, err)
	}
	return r, nil
}

// openFile is an open file: positioned reads, and a reader front to back.
type openFile struct {
	*io.SectionReader
	f srctree.File
}

// Close closes the file.
func (o *openFile) Close() error { return o.f.Close() }

// stream returns a reader of the whole file, front to back: the file
// itself when local, reads fetched ahead when remote. Close it before the
// file.
func (o *openFile) stream(ctx context.Context) io.ReadCloser { return srctree.Stream(ctx, o.f) }

// open opens the file for positioned reads.
func (f treeFile) open(ctx context.Context) (*openFile, error) {
	r, err := f.openTree(ctx)
	if err != nil {
		return nil, err
	}
	return &openFile{SectionReader: io.NewSectionReader(r, 0, r.Size()), f: r}, nil
}

// section opens the n bytes of the file from off for reading front to back.
// Close it.
func (f treeFile) section(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	r, err := f.t.OpenSection(ctx, f.rel, off, n)
	if err != nil {
		return nil, srcfile.Named("open", f.name, err)
	}
	return readCloser{srctree.Stream(ctx, r), r}, nil
}

// stream opens the file for reading front to back: the file itself when
// local, reads fetched ahead when remote. Close it.
func (f treeFile) stream(ctx context.Context) (io.ReadCloser, error) {
	r, err := f.openTree(ctx)
	if err != nil {
		return nil, err
	}
	return readCloser{srctree.Stream(ctx, r), r}, nil
}

// readAll reads the whole regular file, of at most max bytes: one request
// when remote.
func (f treeFile) readAll(ctx context.Context, max int64) ([]byte, error) {
	r, err := f.openTree(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.name, srcfile.Cause(err))
	}
	defer r.Close()
	if r.Size() > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", f.name, max)
	}
	b := make([]byte, r.Size())
	if n, err := r.ReadAt(b, 0); n < len(b) {
		return nil, fmt.Errorf("%s: %w", f.name, err)
	}
	return b, nil
}

// exists reports whether the file is there: a regular file, or another
// kind but a directory (a FIFO, a link that leads out of the tree), which
// the open that follows refuses or reads by name, without blocking.
func (f treeFile) exists() bool {
	_, err := f.t.Stat(f.rel)
	return err == nil || errors.Is(err, srcfile.ErrOutside) || errors.Is(err, srcfile.ErrNotRegular) && !f.isDir()
}

func (f treeFile) isDir() bool {
	d, _ := f.t.IsDir(f.rel)
	return d
}

// readCloser closes a stream and the file under it.
type readCloser struct {
	io.ReadCloser
	f io.Closer
}

func (r readCloser) Close() error {
	r.ReadCloser.Close()
	return r.f.Close()
}
