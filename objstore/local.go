package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
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

type localObject struct {
	*os.File
	size int64
}

func (o *localObject) Size() int64 { return o.size }

// Open implements Store. Only regular files are objects.
func (l *Local) Open(ctx context.Context, name string) (Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	return &localObject{File: f, size: st.Size()}, nil
}

// Stat implements Store.
func (l *Local) Stat(ctx context.Context, name string) (Info, error) {
	p, err := l.path(name)
	if err != nil {
		return Info{}, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return Info{}, err
	}
	if !st.Mode().IsRegular() {
		return Info{}, fmt.Errorf("%s: not a regular file", p)
	}
	return Info{Name: name, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// List implements Store: regular files below the root (symbolic links to
// regular files included), in byte order of their slash-separated names.
func (l *Local) List(ctx context.Context, prefix string, fn func(Info) error) error {
	var infos []Info
	err := filepath.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == l.root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(l.root, p)
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			if name != "." && !strings.HasPrefix(name+"/", prefix) && !strings.HasPrefix(prefix, name+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(name, prefix) {
			return nil
		}
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			return nil
		}
		infos = append(infos, Info{Name: name, Size: st.Size(), ModTime: st.ModTime()})
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	for _, in := range infos {
		if err := fn(in); err != nil {
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
