// Package srctree reads a source dataset as a tree of files named by
// slash-separated paths relative to its root: a directory on this machine
// (regular files only, and no symbolic link may lead out of it, see
// internal/srcfile) or a prefix in object storage (s3://BUCKET/PREFIX),
// listed once when the tree is opened and read with ranged requests.
//
// A remote file's small reads (a parquet footer, an MP4 box header) are
// rounded up to aligned blocks that are kept for the reads that follow,
// and runs of sequential reads (libav demuxing a camera file, the column
// chunks of a row group read in turn) are fetched ahead in growing
// requests; the Files of one object open at once share what they fetched,
// and a plan's exact reads are kept for the conversion that follows it;
// Stream reads a file front to back with objstore's read-ahead. So a
// converter that reads a dataset by name reads it the same way from a
// bucket as from a disk, once.
//
// It is for sources only: it never writes. Converters that read a
// dataset's files by name (LeRobot, Parquet) use it instead of paths.
package srctree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
)

// ErrNotDir is matched by Open's error for a local root that is not a
// directory.
var ErrNotDir = errors.New("not a directory")

// LocalError is the error of Open and OpenSource for a location on this
// machine that cannot be opened (a missing path, one that is not a
// directory): a caller words it as a problem with the path, where a
// store's failure to list a bucket is the store's. Err is the cause.
type LocalError struct{ Err error }

func (e *LocalError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *LocalError) Unwrap() error { return e.Err }

// Tree is an opened source dataset. Its methods are safe for concurrent
// use.
type Tree struct {
	loc string // the root: an absolute directory, or s3://BUCKET[/PREFIX]

	stats *objstore.Stats // the Options.Stats the tree was opened with

	// a local root
	root, rootReal string

	// a remote root
	store  objstore.Store // the bucket's
	prefix string         // the root's key prefix: "" or ending in "/"
	files  []Entry        // every object under the root, by name
	byName map[string]int

	// file is the one file a tree opened by OpenSource for a single file
	// holds by name: locally fileReal is where its links lead (anywhere,
	// as the file was named itself); in a bucket the tree's other objects
	// were not listed, and are looked up by name when asked for (looked).
	file, fileReal string

	mu     sync.Mutex
	failed error
	looked map[string]Entry

	cache cache // what the open files of a remote tree share
}

// Entry describes a file (or, in a local Walk, a directory).
type Entry struct {
	// Name is relative to the root, slash-separated.
	Name string
	// Size is the file's length in bytes.
	Size int64
	// Mode holds the file's type bits: 0 for a regular file (always, in a
	// bucket), fs.ModeDir for a directory, others for the irregular files
	// a local Walk meets.
	Mode fs.FileMode
	// ModTime is when the file was last written.
	ModTime time.Time
	// Path is the file to open on this machine, its symbolic links
	// resolved, for a local tree (from Stat); "" otherwise.
	Path string
	// ETag is the store's tag of a remote file's content when it was
	// listed ("" locally): its reads are of that version.
	ETag string
}

// File is an open file of a tree: ranged reads at any offset.
type File interface {
	io.ReaderAt
	// Size is the file's length in bytes.
	Size() int64
	Close() error
}

// Open opens the dataset at loc: a local directory, or s3://BUCKET[/PREFIX],
// whose objects are listed now (o.Stats, when set, counts the requests and
// bytes of the listing and of every read). A missing bucket and refused
// credentials are the store's errors (objstore.ErrNoBucket,
// objstore.ErrDenied); a prefix holding nothing is an empty tree. A local
// location that cannot be opened gives a *LocalError.
func Open(ctx context.Context, loc string, o objstore.Options) (*Tree, error) {
	if objstore.IsRemote(loc) {
		return openRemote(ctx, loc, o)
	}
	t, err := openLocalDir(loc, o)
	if err != nil {
		return nil, &LocalError{Err: err}
	}
	return t, nil
}

// openLocalDir opens the local directory loc.
func openLocalDir(loc string, o objstore.Options) (*Tree, error) {
	abs, err := filepath.Abs(loc)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: %w", loc, ErrNotDir)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	return &Tree{loc: abs, root: abs, rootReal: real, stats: o.Stats}, nil
}

// OpenSource opens the dataset a converter's SRC names. A local directory,
// and a location in a bucket with objects under it (s3://BUCKET/PREFIX/…),
// are opened as by Open, and file is "". A single file or object is opened
// as the tree of the directory or prefix that holds it, file its name in
// that tree; the file itself may be a symbolic link that leads anywhere
// (it was named, not found), and in a bucket the prefix is not listed: the
// object is found with one HEAD request, and others (Stat, Open, ReadFile)
// each with one when first asked for, while Walk and IsDir see the object
// alone. A location in a bucket that names neither gives an error matching
// fs.ErrNotExist that says so; a local location that cannot be opened a
// *LocalError.
func OpenSource(ctx context.Context, loc string, o objstore.Options) (t *Tree, file string, err error) {
	if !objstore.IsRemote(loc) {
		t, file, err := openLocalSource(loc, o)
		if err != nil {
			return nil, "", &LocalError{Err: err}
		}
		return t, file, nil
	}
	_, prefix, err := objstore.ParseS3(loc)
	if err != nil {
		return nil, "", err
	}
	if t, err = openRemote(ctx, loc, o); err != nil || prefix == "" || !t.Empty() {
		return t, "", err
	}
	return t.Object(ctx)
}

// Object opens, for a tree in a bucket that is empty (Empty), the object
// its location names, as OpenSource opens a single object: the tree of the
// prefix that holds it, file its name there. It costs one HEAD request;
// the prefix is not listed again. With no such object the error matches
// fs.ErrNotExist and says so; a tree that is not empty, or not in a
// bucket, names no object (an error too).
func (t *Tree) Object(ctx context.Context) (*Tree, string, error) {
	if t.store == nil || !t.Empty() || t.prefix == "" {
		return nil, "", fmt.Errorf("srctree: %s is no empty location in a bucket, naming an object", t.Location())
	}
	bucket, prefix, err := objstore.ParseS3(t.loc)
	if err != nil {
		return nil, "", err
	}
	in, err := t.store.Stat(ctx, prefix)
	if errors.Is(err, objstore.ErrNotExist) {
		return nil, "", fmt.Errorf("%w, and no object is under s3://%s/%s/", err, bucket, prefix)
	}
	if err != nil {
		return nil, "", err
	}
	one := &Tree{loc: "s3://" + bucket, store: t.store, stats: t.stats}
	file := prefix
	if dir := path.Dir(prefix); dir != "." {
		one.loc, one.prefix, file = one.loc+"/"+dir, dir+"/", path.Base(prefix)
	}
	one.file = file
	one.files = []Entry{{Name: file, Size: in.Size, ModTime: in.ModTime, ETag: in.ETag}}
	one.byName = map[string]int{file: 0}
	one.looked = map[string]Entry{}
	return one, file, nil
}

// openLocalSource is OpenSource of a location on this machine.
func openLocalSource(loc string, o objstore.Options) (*Tree, string, error) {
	abs, err := filepath.Abs(loc)
	if err != nil {
		return nil, "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, "", err
	}
	if st.IsDir() {
		t, err := openLocalDir(abs, o)
		return t, "", err
	}
	t, err := openLocalDir(filepath.Dir(abs), o)
	if err != nil {
		return nil, "", err
	}
	if t.fileReal, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, "", err
	}
	t.file = filepath.Base(abs)
	return t, t.file, nil
}

func openRemote(ctx context.Context, loc string, o objstore.Options) (*Tree, error) {
	bucket, prefix, err := objstore.ParseS3(loc)
	if err != nil {
		return nil, err
	}
	st, err := objstore.Open(ctx, "s3://"+bucket, o)
	if err != nil {
		return nil, err
	}
	t := &Tree{loc: "s3://" + bucket, store: st, byName: map[string]int{}, stats: o.Stats}
	if prefix != "" {
		t.loc += "/" + prefix
		t.prefix = prefix + "/"
	}
	err = st.List(ctx, t.prefix, func(in objstore.Info) error {
		name := strings.TrimPrefix(in.Name, t.prefix)
		if name == "" || strings.HasSuffix(name, "/") {
			return nil // a "directory" marker some tools put
		}
		t.byName[name] = len(t.files)
		t.files = append(t.files, Entry{Name: name, Size: in.Size, ModTime: in.ModTime, ETag: in.ETag})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(t.files, func(i, j int) bool { return t.files[i].Name < t.files[j].Name })
	for i, e := range t.files {
		t.byName[e.Name] = i
	}
	return t, nil
}

// Location is the root as a path or an s3:// location, never carrying a
// credential.
func (t *Tree) Location() string { return t.loc }

// Remote reports whether the tree is in object storage.
func (t *Tree) Remote() bool { return t.store != nil }

// Stats returns the counts the tree was opened with (Options.Stats of
// Open, OpenSource or OpenUnlisted): the requests and bytes that opening and reading a
// remote tree fetched so far. Nil when none were given; a local tree
// fetches nothing, so its counts stay zero.
func (t *Tree) Stats() *objstore.Stats { return t.stats }

// Store returns the store of a tree in object storage and the key prefix
// of its root there ("" for the bucket's root, else ending in "/"): a
// reader that reads objects by key (packcore's pack readers) reads the
// file rel as prefix+rel. It returns nil and "" for a local tree, whose
// files are read at Path.
func (t *Tree) Store() (objstore.Store, string) { return t.store, t.prefix }

// Empty reports whether a remote tree holds no object (always false for a
// local one).
func (t *Tree) Empty() bool { return t.store != nil && len(t.files) == 0 }

// Path names rel for people and records: a local path under the root, or
// the object's s3:// location.
func (t *Tree) Path(rel string) string {
	if t.store != nil {
		return t.loc + "/" + rel
	}
	return filepath.Join(t.root, filepath.FromSlash(rel))
}

// Err returns the first failure of the store a read met (not a missing
// object): a caller that sees a file fail to parse can tell a dataset at
// fault from a store that failed to deliver it. Nil for a local tree.
func (t *Tree) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *Tree) fail(err error) {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, objstore.ErrNotExist) {
		return
	}
	t.mu.Lock()
	if t.failed == nil {
		t.failed = err
	}
	t.mu.Unlock()
}

// checkName refuses a remote name that is not a clean relative path: one
// that leaves the root, like a symbolic link out of a local dataset.
func (t *Tree) checkName(op, rel string) error {
	if rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
		return &fs.PathError{Op: op, Path: rel, Err: fmt.Errorf("names no object inside %s: %w", t.loc, srcfile.ErrOutside)}
	}
	return nil
}

// resolve is where the links of the local file rel lead, inside the root
// (but for the file a single-file tree was opened for).
func (t *Tree) resolve(rel string) (string, error) {
	if t.file != "" && rel == t.file {
		return t.fileReal, nil
	}
	return srcfile.Resolve(t.rootReal, t.Path(rel))
}

// Stat describes the regular file rel. A missing file gives an error
// matching fs.ErrNotExist; a local path whose links lead out of the root
// one matching srcfile.ErrOutside, and an irregular file one matching
// srcfile.ErrNotRegular.
func (t *Tree) Stat(rel string) (Entry, error) {
	if t.store == nil {
		real, err := t.resolve(rel)
		if err != nil {
			return Entry{}, err
		}
		fi, err := srcfile.Stat(real)
		if err != nil {
			return Entry{}, err
		}
		return Entry{Name: rel, Size: fi.Size(), ModTime: fi.ModTime(), Path: real}, nil
	}
	if err := t.checkName("stat", rel); err != nil {
		return Entry{}, err
	}
	if i, ok := t.byName[rel]; ok {
		return t.files[i], nil
	}
	if t.looked == nil {
		return Entry{}, &fs.PathError{Op: "stat", Path: t.Path(rel), Err: fs.ErrNotExist}
	}
	return t.lookUp(rel)
}

// lookUp finds the object rel of a tree that was not listed, once.
func (t *Tree) lookUp(rel string) (Entry, error) {
	t.mu.Lock()
	e, ok := t.looked[rel]
	t.mu.Unlock()
	if ok {
		if e.Name == "" {
			return Entry{}, &fs.PathError{Op: "stat", Path: t.Path(rel), Err: fs.ErrNotExist}
		}
		return e, nil
	}
	in, err := t.store.Stat(context.Background(), t.prefix+rel)
	if err != nil && !errors.Is(err, objstore.ErrNotExist) {
		t.fail(err)
		return Entry{}, err
	}
	if err == nil {
		e = Entry{Name: rel, Size: in.Size, ModTime: in.ModTime, ETag: in.ETag}
	}
	t.mu.Lock()
	t.looked[rel] = e
	t.mu.Unlock()
	if e.Name == "" {
		return Entry{}, &fs.PathError{Op: "stat", Path: t.Path(rel), Err: fs.ErrNotExist}
	}
	return e, nil
}

// IsDir reports whether rel is a directory: locally, one inside the root;
// in a bucket, a prefix some object lies under.
func (t *Tree) IsDir(rel string) (bool, error) {
	if t.store == nil {
		real, err := t.resolve(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		fi, err := os.Stat(real)
		if err != nil {
			return false, err
		}
		return fi.IsDir(), nil
	}
	if err := t.checkName("stat", rel); err != nil {
		return false, err
	}
	lo, _ := t.under(rel)
	return lo >= 0, nil
}

// under returns the range of t.files below dir ("" for the root), or -1s.
func (t *Tree) under(dir string) (int, int) {
	pfx := ""
	if dir != "" {
		pfx = dir + "/"
	}
	lo := sort.Search(len(t.files), func(i int) bool { return t.files[i].Name >= pfx })
	hi := lo
	for hi < len(t.files) && strings.HasPrefix(t.files[hi].Name, pfx) {
		hi++
	}
	if lo == hi {
		return -1, -1
	}
	return lo, hi
}

// Open opens the regular file rel for reading (errors as for Stat).
func (t *Tree) Open(ctx context.Context, rel string) (File, error) {
	if t.store == nil {
		real, err := t.resolve(rel)
		if err != nil {
			return nil, err
		}
		return openLocal(real)
	}
	e, err := t.Stat(rel)
	if err != nil {
		return nil, err
	}
	return t.openRemote(ctx, e)
}

// OpenSection opens the n bytes of the regular file rel from off as a file
// of their own (errors as for Open; a section past the file's end is
// refused). In a bucket its reads, and their read-ahead, stay inside the
// section: a blob of a file that holds many is fetched without the bytes
// of its neighbours.
func (t *Tree) OpenSection(ctx context.Context, rel string, off, n int64) (File, error) {
	f, err := t.Open(ctx, rel)
	if err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off > f.Size() || n > f.Size()-off {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: t.Path(rel), Err: fmt.Errorf("the section [%d, %d) passes the end of the file (%d bytes)", off, off+n, f.Size())}
	}
	if h, ok := f.(*handle); ok {
		return h.section(off, n), nil
	}
	return &localSection{SectionReader: io.NewSectionReader(f, off, n), f: f}, nil
}

// localSection is a section of a local file.
type localSection struct {
	*io.SectionReader
	f File
}

func (s *localSection) Close() error { return s.f.Close() }

// OpenEntry opens the file that Stat described as e, without resolving its
// name again: a local file at e.Path, an object of e.Size bytes.
func (t *Tree) OpenEntry(ctx context.Context, e Entry) (File, error) {
	if t.store != nil || e.Path == "" {
		return t.Open(ctx, e.Name)
	}
	return openLocal(e.Path)
}

// ReadFile reads the regular file rel whole, refusing one larger than max
// bytes: one request in a bucket.
func (t *Tree) ReadFile(ctx context.Context, rel string, max int64) ([]byte, error) {
	if t.store == nil {
		real, err := t.resolve(rel)
		if err != nil {
			return nil, err
		}
		return srcfile.ReadFile(real, max)
	}
	e, err := t.Stat(rel)
	if err != nil {
		return nil, err
	}
	if e.Size > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	obj, err := objstore.OpenListed(ctx, t.store, objstore.Info{Name: t.prefix + e.Name, Size: e.Size, ETag: e.ETag})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	b := make([]byte, e.Size)
	if _, err := obj.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && len(b) == 0) {
		t.fail(err)
		return nil, err
	}
	return b, nil
}

// Walk calls fn for every file under the directory dir ("" for the root),
// in order of name: locally every entry filepath.WalkDir meets, dir itself
// and its subdirectories included (Entry.Mode tells them apart; symbolic
// links are not followed but for the root's own, and fn may return
// fs.SkipDir for a directory), in a bucket every object. A missing dir
// gives an error matching fs.ErrNotExist before any call.
func (t *Tree) Walk(ctx context.Context, dir string, fn func(Entry) error) error {
	if t.store == nil {
		// The resolved root: WalkDir does not descend into a root that is
		// a symbolic link.
		base := t.rootReal
		if dir != "" {
			base = filepath.Join(t.rootReal, filepath.FromSlash(dir))
		}
		return filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			rel, err := filepath.Rel(t.rootReal, p)
			if err != nil {
				return err
			}
			e := Entry{Name: filepath.ToSlash(rel), Mode: d.Type()}
			if d.Type().IsRegular() {
				fi, err := d.Info()
				if err != nil {
					return err
				}
				e.Size, e.ModTime = fi.Size(), fi.ModTime()
			}
			return fn(e)
		})
	}
	if dir != "" {
		if err := t.checkName("walk", dir); err != nil {
			return err
		}
	}
	lo, hi := t.under(dir)
	if lo < 0 {
		return &fs.PathError{Op: "walk", Path: t.Path(dir), Err: fs.ErrNotExist}
	}
	for _, e := range t.files[lo:hi] {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// Stream reads f front to back: a local file directly, a remote one with
// objstore's sequential read-ahead (8 MiB reads, two ahead). Close it
// before f.
func Stream(ctx context.Context, f File) io.ReadCloser {
	if h, ok := f.(*handle); ok {
		return objstore.NewSeqReader(ctx, h.obj, objstore.SeqOptions{})
	}
	return io.NopCloser(io.NewSectionReader(f, 0, f.Size()))
}

// openLocal opens the local file at real (errors as srcfile.Open's).
func openLocal(real string) (File, error) {
	f, err := srcfile.OpenFile(real)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// recorder notes the store's failures in the tree.
type recorder struct {
	objstore.Object
	t *Tree
}

func (r *recorder) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.Object.ReadAt(p, off)
	if err != nil {
		r.t.fail(err)
	}
	return n, err
}
