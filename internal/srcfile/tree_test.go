package srcfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestList lists a tree holding every kind of entry a source may hold:
// names in byte order across directories, links described by their
// targets and never descended, a refused directory left unread.
func TestList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{"a/b": "12", "a-c": "345", "z": "", "skip/x": "1", "deep/1/2/3": "6789"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"link-file": "a-c", "link-dir": "a", "link-none": "gone"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	rootLink := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink(dir, rootLink); err != nil {
		t.Fatal(err)
	}
	want := "a-c 0 3|a/b 0 2|deep/1/2/3 0 4|fifo p 0|link-dir d|link-file 0 3|link-none L|z 0 0"
	for _, root := range []string{dir, rootLink} {
		got, err := List(context.Background(), root, func(name string) bool { return name != "skip" })
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, e := range got {
			k := "0"
			switch {
			case e.Mode&fs.ModeNamedPipe != 0:
				k = "p"
			case e.Mode.IsDir():
				s = append(s, e.Name+" d")
				continue
			case e.Mode&fs.ModeSymlink != 0:
				s = append(s, e.Name+" L")
				continue
			}
			s = append(s, fmt.Sprintf("%s %s %d", e.Name, k, e.Size))
		}
		if g := strings.Join(s, "|"); g != want {
			t.Errorf("List(%s):\n got %s\nwant %s", root, g, want)
		}
	}
	if _, err := List(context.Background(), filepath.Join(dir, "missing"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, err := List(context.Background(), filepath.Join(dir, "z"), nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v, want not a directory", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := List(ctx, dir, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}

// TestOpenFile opens a regular file with its size and refuses a FIFO
// without blocking; Named then names the path, once.
func TestOpenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenFile(reg)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size() != 5 {
		t.Errorf("size %d, want 5", f.Size())
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = OpenFile(fifo)
	if !errors.Is(err, ErrNotRegular) || strings.Contains(err.Error(), fifo) {
		t.Fatalf("OpenFile(fifo) = %v, want refused without the path", err)
	}
	if got, want := Named("open", fifo, err).Error(), "open "+fifo+": is a FIFO, not a regular file"; got != want {
		t.Errorf("Named: %q, want %q", got, want)
	}
	_, err = OpenFile(filepath.Join(dir, "missing"))
	if got := Named("open", "x", err); got != err || strings.Count(got.Error(), dir) != 1 {
		t.Errorf("Named kept %v as %v", err, got)
	}
	if got := Cause(err); !errors.Is(got, fs.ErrNotExist) || strings.Contains(got.Error(), dir) {
		t.Errorf("Cause: %v", got)
	}
}
