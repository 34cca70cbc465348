package lancefmt

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// blobDigests reads every blob of column with this package's reader.
func blobDigests(t *testing.T, d *Dataset, column string) []Blob {
	t.Helper()
	s, err := d.Blobs(context.Background(), column)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []Blob
	for s.Next() {
		b := *s.Blob()
		if !b.Null {
			r, err := b.ReaderAt()
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			if _, err := io.Copy(h, r); err != nil {
				t.Fatal(err)
			}
			b.URI = string(h.Sum(nil)) // the digest, for comparison
		}
		out = append(out, b)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBlobRefIDFixture makes the shared-blob fixture described in
// fixtures/lance/README.md with WriteSharedBlobDataset: the Lance-written
// blob2_2_2 dataset with rows 2 and 7 sharing one inline blob (ref_id 1),
// rows 4 and 3 one packed blob (ref_id 2) and rows 1 and 0 one inline blob
// without ref_id. It checks what this package's reader sees and that Lance
// opens the dataset and scans the shared descriptors alike.
func TestBlobRefIDFixture(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(fixtures(t), "blob2_2_2.lance")
	d, err := Open(ctx, src, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := blobDigests(t, d, "blob")
	wantKinds := []BlobKind{BlobInline, BlobInline, BlobInline, BlobInline, BlobPacked, BlobDedicated, 0, BlobInline}
	if len(before) != len(wantKinds) || !before[6].Null {
		t.Fatalf("blob2_2_2 does not have the expected layout: %+v", before)
	}
	for i, k := range wantKinds {
		if !before[i].Null && before[i].Kind != k {
			t.Fatalf("blob2_2_2 row %d is %s, want %s", i, before[i].Kind, k)
		}
	}
	dst := filepath.Join(t.TempDir(), "blobref_2_2.lance")
	groups := [][]uint64{{2, 7}, {4, 3}}
	unmarked := [][]uint64{{1, 0}}
	if err := WriteSharedBlobDataset(ctx, d, "blob", dst, groups, unmarked); err != nil {
		t.Fatal(err)
	}

	od, err := Open(ctx, dst, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := blobDigests(t, od, "blob")
	wantRef := []uint32{0, 0, 1, 2, 2, 0, 0, 1}
	wantFrom := []int{1, 1, 2, 4, 4, 5, 6, 2} // row whose source bytes each row holds
	if len(after) != len(wantRef) {
		t.Fatalf("%d blobs after the rewrite", len(after))
	}
	for i, b := range after {
		w := before[wantFrom[i]]
		if b.RefID != wantRef[i] || b.Null != w.Null || b.Kind != w.Kind || b.Size != w.Size || b.URI != w.URI {
			t.Errorf("row %d: ref %d %s null %v size %d, want ref %d and the blob of source row %d (%s, size %d)", i, b.RefID, b.Kind, b.Null, b.Size, wantRef[i], wantFrom[i], w.Kind, w.Size)
		}
	}
	for _, pair := range [][2]int{{0, 1}, {2, 7}, {3, 4}} {
		if a, b := after[pair[0]].Location, after[pair[1]].Location; a != b {
			t.Errorf("rows %d and %d are stored apart: %+v, %+v", pair[0], pair[1], a, b)
		}
	}
	if after[0].Location == after[2].Location || after[5].Location == after[4].Location {
		t.Errorf("unshared rows are stored together")
	}
	fe, err := od.ColumnEncodings(&od.Fragments()[0], []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	se, err := d.ColumnEncodings(&d.Fragments()[0], []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fe) != 1 || len(se) != 1 || !reflect.DeepEqual(fe[0].Pages, se[0].Pages) {
		t.Errorf("id pages %+v, source %+v", fe, se)
	}

	// The official reader opens it and sees the shared descriptors.
	v := testtool.ReadWithLance(t, dst, map[string]any{"columns": []string{"id", "blob"}})
	if v.NumRows != 8 || v.Scan.NumRows != 8 {
		t.Fatalf("lancedb counts %d rows (scan %d)", v.NumRows, v.Scan.NumRows)
	}
	if v.Metadata["fixture"] == "" {
		t.Errorf("schema metadata %v lacks the fixture key", v.Metadata)
	}
	want := testtool.ReadWithLance(t, src, map[string]any{"columns": []string{"id"}})
	if !reflect.DeepEqual(v.Scan.Column(t, "id"), want.Scan.Column(t, "id")) {
		t.Errorf("lancedb scan of id differs from the source")
	}
	bv := v.Scan.Values["blob"]
	if len(bv) != 8 {
		t.Fatalf("lancedb scans %d blob values", len(bv))
	}
	for _, pair := range [][2]int{{0, 1}, {2, 7}, {3, 4}} {
		if string(bv[pair[0]]) != string(bv[pair[1]]) {
			t.Errorf("lancedb: rows %d and %d differ: %s, %s", pair[0], pair[1], bv[pair[0]], bv[pair[1]])
		}
	}
	if string(bv[0]) == string(bv[2]) {
		t.Errorf("lancedb: rows 0 and 2 are equal: %s", bv[0])
	}
	var shown []string
	for _, i := range []int{0, 1, 2, 3, 4, 7} {
		shown = append(shown, string(bv[i]))
	}
	t.Logf("lancedb scans the blob column as %s; rows 0, 1, 2, 3, 4, 7: %s", v.Scan.Types["blob"], strings.Join(shown, " "))
}

func TestWriteSharedBlobDatasetErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := fixtures(t)
	d, err := Open(ctx, filepath.Join(dir, "blob2_2_2.lance"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := Open(ctx, filepath.Join(dir, "blob1_2_1.lance"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		d        *Dataset
		column   string
		groups   [][]uint64
		unmarked [][]uint64
		want     string
	}{
		{"no column", d, "nope", nil, nil, "no such column"},
		{"not blob v2", d, "id", nil, nil, "not a blob v2 column"},
		{"blob v1", v1, "blob", nil, nil, "not a blob v2 column"},
		{"one row", d, "blob", [][]uint64{{2}}, nil, "group 0 lists 1 rows"},
		{"out of range", d, "blob", [][]uint64{{2, 8}}, nil, "no row 8 in fragment 0"},
		{"other fragment", d, "blob", [][]uint64{{2, 1<<32 | 1}}, nil, "different fragments"},
		{"null row", d, "blob", [][]uint64{{2, 6}}, nil, "is null"},
		{"twice", d, "blob", [][]uint64{{2, 7}}, [][]uint64{{7, 1}}, "unmarked group 0: row 0x7 is in another group"},
		{"repeated", d, "blob", [][]uint64{{2, 2}}, nil, "in another group"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out.lance")
			err := WriteSharedBlobDataset(ctx, tc.d, tc.column, dst, tc.groups, tc.unmarked)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if ents, _ := os.ReadDir(filepath.Join(dst, "_versions")); len(ents) != 0 {
				t.Errorf("a version was committed")
			}
		})
	}
}
