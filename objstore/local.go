package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// Local is a store in a directory on this machine. Objects are regular
// files below the root; a put writes a temporary file beside the final one,
// syncs and renames it (links it, for IfAbsent).
type Local struct {
	root string
}

var _ Store = (*Local)(nil)

// NewLocal returns the store rooted at dir, which need not exist yet.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &Local{root: abs}, nil
}

// Root is the store's directory.
func (l *Local) Root() string { return l.root }

// Location implements Store.
func (l *Local) Location() string { return l.root }

func (l *Local) path(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return "", fmt.Errorf("object name %q: not a relative slash-separated path", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("object name %q: empty, . or .. segment", name)
		}
	}
	return filepath.Join(l.root, filepath.FromSlash(name)), nil
}

// Open implements Store. Only regular files are objects: a FIFO, socket
// or device is refused without blocking (see internal/srcfile).
func (l *Local) Open(ctx context.Context, name string) (Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	f, err := srcfile.OpenFile(p)
	if err != nil {
		return nil, srcfile.Named("open", p, err)
	}
	return f, nil
}

// Stat implements Store.
func (l *Local) Stat(ctx context.Context, name string) (Info, error) {
	p, err := l.path(name)
	if err != nil {
		return Info{}, err
	}
	st, err := srcfile.Stat(p)
	if err != nil {
		return Info{}, srcfile.Named("stat", p, err)
	}
	return Info{Name: name, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// List implements Store: regular files below the root (symbolic links to
// regular files included), in byte order of their slash-separated names.
// A root that does not exist holds none.
func (l *Local) List(ctx context.Context, prefix string, fn func(Info) error) error {
	if _, err := os.Lstat(l.root); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	files, err := srcfile.List(ctx, l.root, func(dir string) bool {
		return strings.HasPrefix(dir+"/", prefix) || strings.HasPrefix(prefix, dir+"/")
	})
	if err != nil {
		return err
	}
	for _, e := range files {
		if !e.Mode.IsRegular() || !strings.HasPrefix(e.Name, prefix) {
			continue
		}
		if err := fn(Info{Name: e.Name, Size: e.Size, ModTime: e.ModTime}); err != nil {
			return err
		}
	}
	return nil
}

// Put implements Store.
func (l *Local) Put(ctx context.Context, name string, r io.ReaderAt, size int64, o PutOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.IfMatch != "" {
		return fmt.Errorf("%s: a conditional put on an ETag needs object storage", name)
	}
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := atomicfile.Create(p, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := io.Copy(f, io.NewSectionReader(r, 0, size)); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if !o.IfAbsent {
		return f.Commit()
	}
	if err := f.CommitNoReplace(); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", p, ErrExists)
		}
		return err
	}
	return nil
}

// Delete implements Store.
func (l *Local) Delete(ctx context.Context, name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Copy implements Store: a hard link where the file system allows one, a
// copy otherwise, put under a temporary name and renamed into place.
func (l *Local) Copy(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	src, err := l.path(from)
	if err != nil {
		return err
	}
	dst, err := l.path(to)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".copy")
	os.Remove(tmp) //nolint:errcheck // a leftover of a killed copy
	if err := os.Link(src, tmp); err == nil {
		if err := os.Rename(tmp, dst); err != nil {
			os.Remove(tmp) //nolint:errcheck // failing anyway
			return err
		}
		return nil
	} else if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", src, ErrNotExist)
	}
	return PutFile(ctx, l, to, src)
}
