package lance

import (
	"context"
	"crypto/sha256"
	"io"
	"math/bits"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// blobSidecarID parses the blob id out of a sidecar file name.
func blobSidecarID(t *testing.T, path string) uint32 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(path), ".blob"), 2, 32)
	if err != nil {
		t.Fatal(err)
	}
	return bits.Reverse32(uint32(v))
}

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
// fixtures/lance/README.md: the Lance-written blob2_2_2 dataset with its
// descriptor column rewritten with a sixth ref_id field, rows 2 and 7
// sharing one inline blob (ref_id 1) and rows 3 and 4 one packed blob
// (ref_id 2). It checks what this package's reader sees and logs whether
// Lance still opens the dataset.
func TestBlobRefIDFixture(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(fixtures(t), "blob2_2_2.lance")
	d, err := Open(ctx, src, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := blobDigests(t, d, "blob")
	bs, err := d.Blobs(ctx, "blob")
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	var rows []blobDescriptor
	sidecars := ""
	for bs.Next() {
		b := bs.Blob()
		r := blobDescriptor{Null: b.Null, Kind: uint8(b.Kind)}
		switch {
		case b.Null:
		case b.Kind == BlobInline:
			sr, err := b.ReaderAt()
			if err != nil {
				t.Fatal(err)
			}
			r.Payload, err = io.ReadAll(sr)
			if err != nil {
				t.Fatal(err)
			}
		case b.Kind == BlobPacked || b.Kind == BlobDedicated:
			r.Position, r.Size = uint64(b.Location.Offset), uint64(b.Location.Size)
			r.BlobID = blobSidecarID(t, b.Location.Path)
			sidecars = filepath.Dir(b.Location.Path)
		default:
			t.Fatalf("row %d: unexpected kind %s", b.Row, b.Kind)
		}
		rows = append(rows, r)
	}
	if err := bs.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 || rows[2].Kind != uint8(BlobInline) || rows[7].Kind != uint8(BlobInline) || rows[4].Kind != uint8(BlobPacked) || rows[5].Kind != uint8(BlobDedicated) {
		t.Fatalf("blob2_2_2 does not have the expected layout: %+v", rows)
	}
	// Sharing: row 7 stores row 2's bytes, row 3 row 4's packed blob.
	rows[2].RefID, rows[7].RefID = 1, 1
	rows[7].Payload = rows[2].Payload
	rows[4].RefID = 2
	rows[3] = rows[4]
	hook := func(frag uint64) ([]blobDescriptor, string, error) { return rows, sidecars, nil }
	dst := filepath.Join(t.TempDir(), "blobref_2_2.lance")
	_, err = d.Rewrite(ctx, dst, RewriteOptions{
		SchemaMetadata:  map[string]string{"fixture": "blob v2 descriptors with ref_id"},
		blobDescriptors: map[string]blobDescriptorHook{"blob": hook},
	})
	if err != nil {
		t.Fatal(err)
	}

	od, err := Open(ctx, dst, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := blobDigests(t, od, "blob")
	wantRef := []uint32{0, 0, 1, 2, 2, 0, 0, 1}
	wantFrom := []int{0, 1, 2, 4, 4, 5, 6, 2} // row whose source bytes each row holds
	if len(after) != len(wantRef) {
		t.Fatalf("%d blobs after the rewrite", len(after))
	}
	for i, b := range after {
		w := before[wantFrom[i]]
		if b.RefID != wantRef[i] || b.Null != w.Null || b.Size != w.Size || b.URI != w.URI {
			t.Errorf("row %d: ref %d null %v size %d, want ref %d and the bytes of source row %d (size %d)", i, b.RefID, b.Null, b.Size, wantRef[i], wantFrom[i], w.Size)
		}
	}
	if after[2].Location != after[7].Location || after[3].Location != after[4].Location {
		t.Errorf("shared rows are stored apart: %+v %+v / %+v %+v", after[2].Location, after[7].Location, after[3].Location, after[4].Location)
	}
	// Does the official reader still open it?
	v, err := tryVerifyWithLance(dst, map[string]any{"columns": []string{"id"}})
	switch {
	case err != nil:
		t.Logf("lancedb 0.31.0 (Lance 8.0.0) fails on the ref_id fixture: %v", err)
	case v.NumRows != 8:
		t.Errorf("lancedb counts %d rows", v.NumRows)
	default:
		t.Logf("lancedb 0.31.0 (Lance 8.0.0) opens the ref_id fixture and scans its id column (%d rows)", v.NumRows)
	}
	if v, err := tryVerifyWithLance(dst, map[string]any{"columns": []string{"id", "blob"}}); err != nil {
		t.Logf("lancedb scan of the blob column: %v", lastLines(err.Error(), 3))
	} else {
		bv := v.Scan.Values["blob"]
		if len(bv) != 8 || string(bv[2]) != string(bv[7]) || string(bv[3]) != string(bv[4]) {
			t.Errorf("lancedb does not see the shared descriptors")
		}
		var shown []string
		for _, i := range []int{2, 3, 4, 7} {
			shown = append(shown, string(v.Scan.Values["blob"][i]))
		}
		t.Logf("lancedb scans the blob column of the ref_id fixture as %s; rows 2, 3, 4, 7: %s", v.Scan.Types["blob"], strings.Join(shown, " "))
	}
}
