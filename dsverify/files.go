package dsverify

import (
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
)

// files opens what a check reads by path: a local path, or an s3://BUCKET/KEY
// location, read through the bucket's store with ranged reads (tables,
// footers) or streamed with reads fetched ahead (tars, files compared
// whole). Paths under a remote dataset root are joined with slashes.
type files struct {
	ctx    context.Context
	stats  *objstore.Stats
	stores map[string]objstore.Store // by bucket
}

// openFile is an open file: positioned reads, and a reader front to back.
type openFile struct {
	*io.SectionReader
	obj    objstore.Object // nil for a local file
	closer io.Closer
}

// Close closes the file.
func (f *openFile) Close() error { return f.closer.Close() }

// stream returns a reader of the whole file, front to back: the file
// itself when local, reads fetched ahead when remote. Close it.
func (f *openFile) stream(ctx context.Context) io.ReadCloser {
	if f.obj == nil {
		return io.NopCloser(io.NewSectionReader(f.SectionReader, 0, f.Size()))
	}
	return objstore.NewSeqReader(ctx, f.obj, objstore.SeqOptions{Chunk: 4 << 20})
}

// store returns the store of an s3:// location's bucket and the key.
func (fs *files) store(loc string) (objstore.Store, string, error) {
	bucket, key, err := objstore.ParseS3(loc)
	if err != nil {
		return nil, "", err
	}
	if st, ok := fs.stores[bucket]; ok {
		return st, key, nil
	}
	st, err := objstore.Open(fs.ctx, "s3://"+bucket, objstore.Options{Stats: fs.stats})
	if err != nil {
		return nil, "", err
	}
	fs.stores[bucket] = st
	return st, key, nil
}

// open opens the file at p.
func (fs *files) open(p string) (*openFile, error) {
	if !objstore.IsRemote(p) {
		f, err := srcfile.OpenFile(p)
		if err != nil {
			return nil, srcfile.Named("open", p, err)
		}
		return &openFile{SectionReader: io.NewSectionReader(f, 0, f.Size()), closer: f}, nil
	}
	st, key, err := fs.store(p)
	if err != nil {
		return nil, err
	}
	obj, err := st.Open(fs.ctx, key)
	if err != nil {
		return nil, err
	}
	return &openFile{SectionReader: io.NewSectionReader(obj, 0, obj.Size()), obj: obj, closer: obj}, nil
}

// readAll reads a whole regular file of at most max bytes: one request when
// remote.
func (fs *files) readAll(p string, max int64) ([]byte, error) {
	if !objstore.IsRemote(p) {
		b, err := srcfile.ReadFile(p, max)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, srcfile.Cause(err))
		}
		return b, nil
	}
	st, key, err := fs.store(p)
	if err != nil {
		return nil, err
	}
	return objstore.ReadAll(fs.ctx, st, key, max)
}

// exists reports whether p names a file.
func (fs *files) exists(p string) bool {
	if !objstore.IsRemote(p) {
		return fileExists(p)
	}
	st, key, err := fs.store(p)
	if err != nil {
		return false
	}
	_, err = st.Stat(fs.ctx, key)
	return err == nil
}

// joinPath joins a slash-separated relative path onto base, a local path
// or an s3:// location.
func joinPath(base, rel string) string {
	if objstore.IsRemote(base) {
		return strings.TrimSuffix(base, "/") + "/" + strings.TrimPrefix(path.Clean(rel), "/")
	}
	return filepath.Join(base, filepath.FromSlash(rel))
}

// dirOf returns the directory of p, a local path or an s3:// location.
func dirOf(p string) string {
	if objstore.IsRemote(p) {
		if i := strings.LastIndex(strings.TrimSuffix(p, "/"), "/"); i > len("s3://") {
			return p[:i]
		}
		return p
	}
	return filepath.Dir(p)
}

// baseOf returns the last element of p.
func baseOf(p string) string {
	if objstore.IsRemote(p) {
		return path.Base(p)
	}
	return filepath.Base(p)
}
