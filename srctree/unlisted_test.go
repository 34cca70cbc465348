package srctree_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"
)

// TestOpenUnlisted: a tree opened unlisted makes no request until a file is
// asked for, then one HEAD per file; its Store reads are counted with the
// tree's; a local location opens as OpenSource opens it, with no store.
func TestOpenUnlisted(t *testing.T) {
	t.Parallel()
	srv, local, remote := trees(t)
	ctx := context.Background()
	st := &objstore.Stats{}
	tr, file, err := srctree.OpenUnlisted(ctx, remote, srv.Reach(objstore.Options{Stats: st}))
	if err != nil || file != "" || tr.Location() != remote || !tr.Remote() {
		t.Fatalf("OpenUnlisted(%s): %q in %v, %v", remote, file, tr, err)
	}
	if n := st.Requests(); n != 0 {
		t.Fatalf("opening made %d requests, want none", n)
	}
	for range 2 {
		if e, err := tr.Stat("meta/info.json"); err != nil || e.Size != int64(len(files["meta/info.json"])) {
			t.Fatalf("Stat: %+v, %v", e, err)
		}
	}
	if _, err := tr.Stat("meta/none.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a missing object: %v", err)
	}
	if n := st.Requests(); n != 2 {
		t.Fatalf("two Stats of one object and one of a missing one made %d requests, want 2", n)
	}
	if err := tr.Walk(ctx, "", func(srctree.Entry) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Walk of an unlisted tree: %v", err)
	}
	store, key := tr.Store()
	if store == nil || key != "ds/" {
		t.Fatalf("Store: %v %q", store, key)
	}
	b, err := objstore.ReadAll(ctx, store, key+"data.txt", 1<<20)
	if err != nil || string(b) != files["data.txt"] {
		t.Fatalf("read through Store: %q, %v", b, err)
	}
	if n := st.Requests(); n <= 2 {
		t.Fatalf("%d requests after a read through the tree's store: it was not counted", n)
	}

	lt, file, err := srctree.OpenUnlisted(ctx, filepath.Join(local, "data.txt"), objstore.Options{})
	if err != nil || file != "data.txt" || lt.Location() != local || lt.Remote() {
		t.Fatalf("OpenUnlisted of a local file: %q in %v, %v", file, lt, err)
	}
	if st, _ := lt.Store(); st != nil {
		t.Fatal("a local tree has a store")
	}
	if _, _, err := srctree.OpenUnlisted(ctx, "s3://No_Bucket/x", objstore.Options{}); !errors.Is(err, objstore.ErrBadLocation) {
		t.Fatalf("a bad bucket name: %v", err)
	}
}
