// Package lancestore opens Lance datasets wherever they are stored: a
// directory on this machine, read by lancefmt itself, or a prefix in
// object storage (s3://BUCKET/PREFIX), read through srctree: the
// prefix is listed once when the dataset is opened, and every file is read
// with ranged requests (small reads such as a data file's footer rounded to
// 16 KiB blocks that are kept for the reads that follow, sequential runs
// such as a page copy or a value scan, several at once, fetched ahead in
// requests that grow to 8 MiB, the next one in flight). A read larger than
// 8 MiB is fetched as such a run, so no more than a few requests' worth of
// a file is held besides what the reader asked for.
//
// It is the one place that joins the Lance reader to an object store
// client: package lancefmt builds without one. It does not write.
package lancestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"
)

// ErrEmpty is matched by Open's error for a prefix in object storage that
// holds no object; the error matches fs.ErrNotExist too.
var ErrEmpty = errors.New("holds no objects")

type emptyError struct{ loc string }

func (e *emptyError) Error() string {
	return fmt.Sprintf("lance: %s %s; a Lance dataset holds _versions/ and data/", e.loc, ErrEmpty)
}
func (e *emptyError) Is(target error) bool { return target == ErrEmpty || target == fs.ErrNotExist }

// Open opens the dataset at loc, a local directory or s3://BUCKET/PREFIX
// (opened as srctree.Open opens it; see OpenTree), at the version o
// chooses. stats, when not nil, counts the requests and bytes that reading
// a dataset in object storage sends and fetches: the listing, the manifest
// and every later read. A local path is read by lancefmt itself, whose
// errors name it as given.
func Open(ctx context.Context, loc string, o lancefmt.OpenOptions, stats *objstore.Stats) (*lancefmt.Dataset, error) {
	t, err := srctree.Open(ctx, loc, objstore.Options{Stats: stats})
	var local *srctree.LocalError
	switch {
	case errors.As(err, &local) || err == nil && !t.Remote():
		// lancefmt says what is wrong with the directory.
		o.Storage = nil
		return lancefmt.Open(ctx, loc, o)
	case err != nil:
		return nil, fmt.Errorf("lance: %w", err)
	}
	return OpenTree(ctx, t, "", o)
}

// OpenTree opens the dataset at rel (slash-separated; "" for the root) of
// the source tree t, at the version o chooses (o.Storage is set here): a
// local tree is read by lancefmt itself, a tree in a bucket through t (see
// OpenIn), which counts what it fetches in the Stats it was opened with. A
// missing bucket and refused credentials are the store's errors
// (objstore.ErrNoBucket, objstore.ErrDenied); a prefix that holds nothing
// gives an error matching ErrEmpty.
func OpenTree(ctx context.Context, t *srctree.Tree, rel string, o lancefmt.OpenOptions) (*lancefmt.Dataset, error) {
	if !t.Remote() {
		o.Storage = nil
		loc := t.Location()
		if rel != "" {
			loc = t.Path(rel)
		}
		return lancefmt.Open(ctx, loc, o)
	}
	if t.Empty() {
		return nil, &emptyError{loc: t.Location()}
	}
	return OpenIn(ctx, t, rel, o)
}

// OpenIn opens the dataset at rel (slash-separated; "" for the root) inside
// the source tree t, reading through t (see Storage).
func OpenIn(ctx context.Context, t *srctree.Tree, rel string, o lancefmt.OpenOptions) (*lancefmt.Dataset, error) {
	o.Storage = Storage(t)
	loc := t.Location()
	if rel != "" {
		loc = t.Path(rel)
	}
	return lancefmt.Open(ctx, loc, o)
}

// Storage returns the lancefmt.Storage that reads the files of t: a file's
// location is t.Path of its name (an s3:// URL for a tree in a bucket). A
// location outside t is refused: a manifest in a bucket cannot make the
// reader open another prefix, bucket or a file of this machine.
func Storage(t *srctree.Tree) lancefmt.Storage { return &treeStorage{t: t} }

// Err returns the first failure of the store that a read of ds met (not a
// missing object), when ds is read from object storage: a caller that sees
// a file fail to parse can tell a dataset at fault from a store that failed
// to deliver it. Nil for a local dataset.
func Err(ds *lancefmt.Dataset) error {
	if ts, ok := ds.Storage().(*treeStorage); ok {
		return ts.t.Err()
	}
	return nil
}

type treeStorage struct {
	t *srctree.Tree
}

// rel returns the name inside the tree of the location loc.
func (s *treeStorage) rel(op, loc string) (string, error) {
	root := s.t.Location()
	if loc == root {
		return "", nil
	}
	if !s.t.Remote() {
		root = strings.TrimSuffix(root, "/")
		if rel, ok := strings.CutPrefix(loc, root+"/"); ok {
			return rel, nil
		}
	} else if rel, ok := strings.CutPrefix(loc, root+"/"); ok {
		return rel, nil
	}
	return "", &fs.PathError{Op: op, Path: loc, Err: fmt.Errorf("outside %s, where the dataset is read from", root)}
}

// Open implements lancefmt.Storage.
func (s *treeStorage) Open(ctx context.Context, name string) (lancefmt.File, error) {
	rel, err := s.rel("open", name)
	if err != nil {
		return nil, err
	}
	f, err := s.t.Open(ctx, rel)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// List implements lancefmt.Storage.
func (s *treeStorage) List(ctx context.Context, dir string, fn func(lancefmt.FileInfo) error) error {
	rel, err := s.rel("list", dir)
	if err != nil {
		return err
	}
	prefix := ""
	if rel != "" {
		prefix = rel + "/"
	}
	return s.t.Walk(ctx, rel, func(e srctree.Entry) error {
		if e.Mode.IsDir() || e.Name == rel {
			return nil
		}
		return fn(lancefmt.FileInfo{Name: strings.TrimPrefix(e.Name, prefix), Size: e.Size, ModTime: e.ModTime})
	})
}
