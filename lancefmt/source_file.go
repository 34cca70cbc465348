package lancefmt

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// Storage is where the files of a dataset are read from. Files are named
// by locations: the dataset's location as Open was given it, joined with
// the slash-separated paths inside it, and the directories and URIs the
// manifest names (base paths, external blobs). The default, LocalStorage,
// reads files on this machine; lancefmt/lancestore gives one for datasets
// in object storage, whose locations are s3:// URLs.
//
// Every read of a dataset goes through its Storage: ranged reads of the
// manifests, of each data file's footer and metadata, then of the pages
// and blobs a scan needs.
type Storage interface {
	// Open opens the regular file name for ranged reads. A missing file
	// gives an error matching fs.ErrNotExist; a file that is not regular
	// one matching srcfile.ErrNotRegular, without blocking.
	Open(ctx context.Context, name string) (File, error)
	// List calls fn for every file below the directory dir, at any depth,
	// in byte order of the names, which are relative to dir and
	// slash-separated. A directory that does not exist (in object
	// storage: that no object lies under) gives an error matching
	// fs.ErrNotExist.
	List(ctx context.Context, dir string, fn func(FileInfo) error) error
}

// File is a file of a dataset opened for reading: ranged reads at any
// offset.
type File interface {
	io.ReaderAt
	// Size is the file's length in bytes.
	Size() int64
	Close() error
}

// FileInfo describes a file that Storage.List found.
type FileInfo struct {
	// Name is relative to the listed directory, slash-separated.
	Name    string
	Size    int64
	ModTime time.Time
}

// LocalStorage reads datasets on this machine: locations are paths.
// Only regular files are opened: a FIFO in place of a manifest or data file
// would block the reader forever, beyond the reach of signals, so it is
// refused (an error matching srcfile.ErrNotRegular, naming the path)
// without blocking.
type LocalStorage struct{}

var _ Storage = LocalStorage{}

// Open implements Storage.
func (LocalStorage) Open(ctx context.Context, name string) (File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := srcfile.OpenFile(name)
	if err != nil {
		return nil, srcfile.Named("open", name, err)
	}
	return f, nil
}

// List implements Storage. Files of every kind are listed (a FIFO is
// refused when opened, naming it); symbolic links are described by what
// they lead to and not descended into.
func (LocalStorage) List(ctx context.Context, dir string, fn func(FileInfo) error) error {
	files, err := srcfile.List(ctx, dir, nil)
	if err != nil {
		return err
	}
	for _, e := range files {
		if err := fn(FileInfo{Name: e.Name, Size: e.Size, ModTime: e.ModTime}); err != nil {
			return err
		}
	}
	return nil
}

// isURL reports whether loc is a URL (scheme://...) rather than a path.
func isURL(loc string) bool {
	i := strings.Index(loc, "://")
	return i > 0 && !strings.ContainsAny(loc[:i], `/\.`)
}

// joinPath joins a location with slash-separated path elements: with
// slashes for a URL, as paths of this machine otherwise.
func joinPath(base string, elems ...string) string {
	if !isURL(base) {
		parts := []string{base}
		for _, e := range elems {
			parts = append(parts, filepath.FromSlash(e))
		}
		return filepath.Join(parts...)
	}
	s := strings.TrimRight(base, "/")
	for _, e := range elems {
		if e = strings.Trim(e, "/"); e != "" {
			s += "/" + e
		}
	}
	return s
}

// dirPath and basePath split a location at its last separator.
func dirPath(loc string) string {
	if !isURL(loc) {
		return filepath.Dir(loc)
	}
	return loc[:strings.LastIndex(loc, "/")]
}

func basePath(loc string) string {
	if !isURL(loc) {
		return filepath.Base(loc)
	}
	return loc[strings.LastIndex(loc, "/")+1:]
}

// relPath returns loc relative to the location dir, slash-separated, and
// whether loc lies below dir.
func relPath(dir, loc string) (string, bool) {
	if isURL(dir) {
		rel, ok := strings.CutPrefix(loc, strings.TrimRight(dir, "/")+"/")
		return rel, ok
	}
	rel, err := filepath.Rel(dir, loc)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// openFile opens the file at loc through the dataset's storage.
func (d *Dataset) openFile(ctx context.Context, loc string) (File, error) {
	return d.st.Open(ctx, loc)
}

// readFile reads the file at loc whole.
func (d *Dataset) readFile(ctx context.Context, loc string) ([]byte, error) {
	return readStorage(ctx, d.st, loc)
}

// readStorage reads the file at loc of st whole.
func readStorage(ctx context.Context, st Storage, loc string) ([]byte, error) {
	f, err := st.Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, f.Size())
	if n, err := f.ReadAt(b, 0); n < len(b) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return b, nil
}

// fileSize returns the size of the file at loc.
func (d *Dataset) fileSize(loc string) (int64, error) {
	f, err := d.st.Open(d.ctx, loc)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Size(), nil
}

// listFiles lists the files below the directory loc through the dataset's
// storage (see Storage.List).
func (d *Dataset) listFiles(ctx context.Context, loc string, fn func(FileInfo) error) error {
	return d.st.List(ctx, loc, fn)
}

// ListFiles lists the files below the directory sub of the dataset
// ("_versions", "data/…"), relative to it, through its storage: what the
// directory holds, with sizes and modification times, for callers that
// need more than the manifest says.
func (d *Dataset) ListFiles(ctx context.Context, sub string, fn func(FileInfo) error) error {
	return d.listFiles(ctx, joinPath(d.dir, sub), fn)
}
