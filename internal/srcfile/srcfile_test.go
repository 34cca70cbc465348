package srcfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesIrregular opens every kind of file a source may hold by
// mistake; none may block, and only the regular file opens.
func TestOpenRefusesIrregular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "link-to-fifo")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, kind string
	}{
		{reg, ""},
		{fifo, "a FIFO"},
		{link, "a FIFO"},
		{sock, "a socket"},
		{dir, "a directory"},
		{"/dev/null", "a character device"},
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() {
			f, err := Open(c.path)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if c.kind == "" {
				if err != nil {
					t.Errorf("Open(%s) = %v, want success", c.path, err)
				}
				continue
			}
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.kind) {
				t.Errorf("Open(%s) = %v, want %s refused", c.path, err, c.kind)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("Open(%s) blocked", c.path)
		}
		_, err := Stat(c.path)
		if (c.kind == "") != (err == nil) {
			t.Errorf("Stat(%s) = %v", c.path, err)
		}
	}
}

// TestResolve keeps paths inside the root once links are resolved.
func TestResolve(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "in.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(outside, "x.txt"), nil, 0o644)
	os.Symlink("in.txt", filepath.Join(root, "ok-link"))
	os.Symlink("../outside/x.txt", filepath.Join(root, "file-link"))
	os.Symlink(outside, filepath.Join(root, "dir-link"))
	realRoot, _ := filepath.EvalSymlinks(root)
	cases := []struct {
		rel     string
		outside bool
	}{
		{"in.txt", false},
		{"ok-link", false},
		{"file-link", true},
		{"dir-link/x.txt", true},
	}
	for _, c := range cases {
		_, err := Resolve(realRoot, filepath.Join(root, c.rel))
		if c.outside != errors.Is(err, ErrOutside) || (!c.outside && err != nil) {
			t.Errorf("Resolve(%s) = %v, want outside %v", c.rel, err, c.outside)
		}
		if c.outside && !strings.Contains(err.Error(), "outside the source directory") {
			t.Errorf("Resolve(%s): message %q", c.rel, err)
		}
	}
}

// TestWithin checks which paths lie at or below a root, with names that
// share the root's prefix without being below it and names below it that
// begin with "..".
func TestWithin(t *testing.T) {
	cases := []struct {
		root, p string
		want    bool
	}{
		{"/data/set", "/data/set", true},
		{"/data/set", "/data/set/a/b.parquet", true},
		{"/data/set", "/data/set/..x/b", true},
		{"/data/set", "/data/set..x/b", false},
		{"/data/set", "/data/setx", false},
		{"/data/set", "/data", false},
		{"/data/set", "/data/other/set", false},
		{"/data/set", "/", false},
		{"/", "/data", true},
	}
	for _, c := range cases {
		if got := Within(c.root, c.p); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", c.root, c.p, got, c.want)
		}
	}
}
