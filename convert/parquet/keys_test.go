package parquet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/packcore"
)

// TestParquetConvertToWithKeys converts the hf fixture through ConvertTo into
// a caller-owned directory and pack writer, with a custom key scheme, and
// checks that every non-null reference names a key of that scheme and
// resolves in the packs, and that other files are copied.
func TestParquetConvertToWithKeys(t *testing.T) {
	t.Parallel()
	root := fixtureRoot(t)
	ctx := context.Background()
	keysFn := func(id PayloadID) (string, string) {
		var b strings.Builder
		fmt.Fprintf(&b, "custom/%s/%s/%08d", strings.Join(id.Path, "."), strings.TrimSuffix(id.Table, ".parquet"), id.Row)
		for _, s := range id.Sub {
			fmt.Fprintf(&b, "_%d", s)
		}
		return b.String(), fmt.Sprintf("g-%s-%d", id.Table, id.Row)
	}
	opts := Options{Keys: keysFn, Media: MediaString} // as convert/lerobot converts
	ins, err := Inspect(ctx, filepath.Join(root, "hf"), opts)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ins.Select([]string{"frames"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := packcore.Create(ctx, filepath.Join(dir, MediaDir), packcore.WriterOptions{RefBase: MediaDir, NoLock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := ConvertTo(ctx, ins, Selection{}, dir, w, opts); err == nil {
		t.Fatal("ConvertTo accepted an empty selection")
	}
	res, err := ConvertTo(ctx, ins, sel, dir, w, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if res.Rewritten != 2 || res.Files != len(ins.Others) || res.Pack.Members != 0 {
		t.Fatalf("result %+v, want 2 rewritten tables, %d files, zero pack stats", res, len(ins.Others))
	}
	set, err := packcore.OpenSet(filepath.Join(dir, MediaDir), packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	out := filepath.Join(dir, "data", "frames", "seq.parquet")
	d := dump(t, out)[out]
	col := -1
	for i, c := range d.Columns {
		if c == "frames" {
			col = i
		}
	}
	refs := 0
	for row, r := range d.Rows {
		list, _ := r[col].([]any)
		for j, v := range list {
			ref, ok := v.(string)
			if !ok {
				continue // null element stays null
			}
			key, _, err := packcore.ParseRef(ref)
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("custom/frames/data/frames/seq/%08d_%d.", row, j)
			if !strings.HasPrefix(key, want) {
				t.Errorf("row %d element %d: key %q, want prefix %q", row, j, key, want)
			}
			if _, err := set.Stat(ref); err != nil {
				t.Errorf("row %d element %d: %v", row, j, err)
			}
			refs++
		}
	}
	if refs == 0 {
		t.Fatal("no references in the rewritten table")
	}
	if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
		t.Error("other files were not copied")
	}
}
