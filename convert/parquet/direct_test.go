package parquet

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// directTables writes the tables of fixtures/parquet/direct.py (pyarrow)
// under a new temporary directory and returns it.
func directTables(t *testing.T) string {
	t.Helper()
	py := testtool.Python(t)
	dir := t.TempDir()
	cmd := exec.Command(py, filepath.Join(fixtureDir, "direct.py"), dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("direct.py: %v\n%s", err, stderr.String())
	}
	return dir
}

// TestDirectMatchesGeneral converts tables whose payload columns are read
// value by value (direct.go) twice, on that path and on the general one
// (every column decoded into Arrow batches), with each media option, and
// requires the two outputs to be the same files byte for byte: the
// rewritten table, every shard, the manifest, the card. The tables
// (fixtures/parquet/direct.py, pyarrow) cover nulls and empty values,
// dictionary-encoded and plain pages, pages over 1 MiB (read as a stream),
// data page v2, snappy, zstd and no compression, a required large_binary
// column with no other leaf, two payload columns in one table, media
// structs with null structs, null bytes with a path to a file, required
// structs, and an empty row group.
func TestDirectMatchesGeneral(t *testing.T) {
	root := directTables(t)
	for _, tc := range []struct {
		src     string
		columns []string
	}{
		{"plain", []string{"img"}},
		{"only", []string{"blob"}},
		{"hf", []string{"image"}},
		{"hf", []string{"image", "thumb"}},
		{"hf", []string{"thumb"}},
		{"hfreq", []string{"image"}},
	} {
		for _, o := range []Options{{}, {Media: MediaString}, {KeepPath: true}, {Media: MediaString, KeepPath: true}} {
			name := tc.src + "/" + strings.Join(tc.columns, "+") + "/" + string(o.Media)
			if o.KeepPath {
				name += "/keep-path"
			}
			t.Run(name, func(t *testing.T) {
				src := filepath.Join(root, tc.src)
				var outs [2]string
				for i, general := range []bool{false, true} {
					opts := o
					opts.general, opts.poison = general, true
					ins, err := Inspect(context.Background(), src, opts)
					if err != nil {
						t.Fatal(err)
					}
					sel, err := ins.Select(tc.columns, nil)
					if err != nil {
						t.Fatal(err)
					}
					outs[i] = filepath.Join(t.TempDir(), "out")
					res, err := Convert(context.Background(), ins, sel, converttest.Dest(t, outs[i]), opts, nil)
					if err != nil {
						t.Fatal(err)
					}
					if want := 1 - i; res.direct != want {
						t.Fatalf("general=%v: %d tables read value by value, want %d", general, res.direct, want)
					}
				}
				sameTree(t, outs[0], outs[1])
			})
		}
	}
}

// sameTree fails t unless directories a and b hold the same files with the
// same bytes.
func sameTree(t *testing.T, a, b string) {
	t.Helper()
	files := func(root string) map[string][]byte {
		m := map[string][]byte{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			b, err := os.ReadFile(p)
			m[rel] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	fa, fb := files(a), files(b)
	for rel, ba := range fa {
		bb, ok := fb[rel]
		switch {
		case !ok:
			t.Errorf("%s: only in the direct path's output", rel)
		case !bytes.Equal(ba, bb):
			t.Errorf("%s: %d bytes on the direct path, %d on the general one, contents differ", rel, len(ba), len(bb))
		}
	}
	for rel := range fb {
		if _, ok := fa[rel]; !ok {
			t.Errorf("%s: only in the general path's output", rel)
		}
	}
	if len(fa) < 3 {
		t.Errorf("the output holds %d files", len(fa))
	}
}
