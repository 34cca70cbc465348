package lancefmt

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestNoObjectStoreClient: the reader builds without an object store
// client; lancefmt/lancestore joins it to one.
func TestNoObjectStoreClient(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", "./lancefmt")
	cmd.Dir = testtool.RepoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/aws/") || strings.HasSuffix(dep, "/objstore") || strings.HasSuffix(dep, "/srctree") {
			t.Errorf("lancefmt depends on %s", dep)
		}
	}
}

// TestLocationPaths: locations join, split and relate as paths on this
// machine and as slash-separated URLs.
func TestLocationPaths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		base             string
		elems            []string
		join, dir, base2 string
	}{
		{"/d/ds.lance", []string{"data", "x.lance"}, "/d/ds.lance/data/x.lance", "/d/ds.lance/data", "x.lance"},
		{"ds.lance", []string{"_versions/1.manifest"}, "ds.lance/_versions/1.manifest", "ds.lance/_versions", "1.manifest"},
		{"s3://b/p/ds.lance", []string{"data", "x.lance"}, "s3://b/p/ds.lance/data/x.lance", "s3://b/p/ds.lance/data", "x.lance"},
		{"s3://b/ds.lance/", []string{"/_refs/", "tags"}, "s3://b/ds.lance/_refs/tags", "s3://b/ds.lance/_refs", "tags"},
	} {
		j := joinPath(c.base, c.elems...)
		if j != c.join || dirPath(j) != c.dir || basePath(j) != c.base2 {
			t.Errorf("joinPath(%q, %q) = %q (dir %q, base %q), want %q (%q, %q)", c.base, c.elems, j, dirPath(j), basePath(j), c.join, c.dir, c.base2)
		}
		root := strings.TrimRight(c.base, "/")
		if rel, ok := relPath(root, j); !ok || rel != strings.TrimPrefix(c.join, root+"/") {
			t.Errorf("relPath(%q, %q) = %q, %v", root, j, rel, ok)
		}
	}
	for _, c := range [][2]string{{"/d/ds.lance", "/d/other/x"}, {"s3://b/ds.lance", "s3://b/other/x"}, {"s3://b/ds.lance", "/d/x"}} {
		if rel, ok := relPath(c[0], c[1]); ok {
			t.Errorf("relPath(%q, %q) = %q, true; want false", c[0], c[1], rel)
		}
	}
}

// TestLocalStorageList: LocalStorage lists every file below a directory
// (subdirectories' too, FIFOs included) in byte order, a missing directory
// matches fs.ErrNotExist, and a FIFO is refused when opened.
func TestLocalStorageList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"b", "a/c", "a.x"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var names []string
	if err := (LocalStorage{}).List(ctx, dir, func(fi FileInfo) error {
		names = append(names, fi.Name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, " "); got != "a.x a/c b fifo" {
		t.Errorf("listed %q", got)
	}
	err := (LocalStorage{}).List(ctx, filepath.Join(dir, "none"), func(FileInfo) error { return nil })
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
	if _, err := (LocalStorage{}).Open(ctx, filepath.Join(dir, "fifo")); !errors.Is(err, srcfile.ErrNotRegular) || !strings.Contains(err.Error(), "fifo") {
		t.Errorf("a FIFO: %v", err)
	}
}
