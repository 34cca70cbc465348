package lance

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/progress"
)

// TestSharedBlobs converts a blob v2 dataset whose rows share blobs: rows 2
// and 7 through ref_id 1 (inline), rows 4 and 3 through ref_id 2 (packed
// sidecar), rows 1 and 0 by pointing at the same inline bytes without a
// ref_id. Released Lance cannot write ref_id, so the dataset is made from the
// Lance-written blob2_2_2 by lance.WriteSharedBlobDataset (see
// fixtures/lance/README.md); lancedb still opens it. Each shared blob must
// become ONE member, keyed by the first row in scan order, that every
// sharing row references.
func TestSharedBlobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, err := lancefmt.Open(ctx, filepath.Join(fixtures.Dir(t), "blob2_2_2.lance"), lancefmt.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "shared.lance")
	if err := lancefmt.WriteSharedBlobDataset(ctx, base, "blob", src, [][]uint64{{2, 7}, {4, 3}}, [][]uint64{{1, 0}}); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	j, err := NewJob(ctx, src, converttest.Dest(t, dst), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := j.Plan(ctx, nil, progress.Nop{})
	if err != nil {
		t.Fatal(err)
	}
	ev := j.sel[0].ev
	if ev.members != 4 || ev.shared.Rows != 3 || ev.shared.Blobs != 3 {
		t.Fatalf("plan evidence: %d members, sharing %+v; plan %+v", ev.members, ev.shared, p.Entries[0])
	}
	want := sourceValues(t, j, j.sel[0])
	sum, err := j.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Blobs != 4 {
		t.Fatalf("%d members written, want 4 (8 rows, 1 null, 3 sharing)", sum.Blobs)
	}
	out := officialRead(t, filepath.Join(dst, TableDir), []string{"id", "blob"})
	refs := out.Scan.Column(t, "blob")
	if len(refs) != 8 {
		t.Fatalf("%d rows", len(refs))
	}
	wantKey := map[int]string{0: "blob/000000000000", 1: "blob/000000000000", 2: "blob/000000000002", 7: "blob/000000000002",
		3: "blob/000000000003", 4: "blob/000000000003", 5: "blob/000000000005"}
	set, err := packcore.OpenSet(filepath.Join(dst, convert.MediaDir), packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for row, v := range refs {
		if row == 6 {
			if v != nil {
				t.Errorf("null row became %v", v)
			}
			continue
		}
		ref, _ := v.(string)
		key, _, err := packcore.ParseRef(ref)
		if err != nil {
			t.Fatalf("row %d: %q: %v", row, ref, err)
		}
		if got := key[:len(wantKey[row])]; got != wantKey[row] {
			t.Errorf("row %d references %s, want the member of row %s", row, key, wantKey[row])
		}
		b, err := set.Read(ref)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want[row]) {
			t.Errorf("row %d: bytes differ from the source", row)
		}
	}
}
