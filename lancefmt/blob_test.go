package lancefmt

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
	"google.golang.org/protobuf/encoding/protowire"
)

// TestBlobsMatchWrittenPayloads reads every blob column of the fixtures and
// compares sizes and SHA-256 with the payloads the generator wrote, and the
// storage kind with Lance's size thresholds.
func TestBlobsMatchWrittenPayloads(t *testing.T) {
	t.Parallel()
	for _, set := range fixtureSets {
		t.Run(set.name, func(t *testing.T) { blobsMatchWrittenPayloads(t, set.dir(t)) })
	}
}

// blobsMatchWrittenPayloads checks the blob columns of one fixture
// directory.
func blobsMatchWrittenPayloads(t *testing.T, dir string) {
	tested := 0
	for _, name := range datasetNames(t, dir) {
		exp := loadExpected(t, dir, name)
		if len(exp.Blobs) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ds, err := Open(context.Background(), filepath.Join(dir, name+".lance"), OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ids := scanAll(t, ds, []string{"id"}, 3)["id"]
			for col, want := range exp.Blobs {
				bs, err := ds.Blobs(context.Background(), col)
				if err != nil {
					t.Fatal(err)
				}
				row := 0
				seen := map[BlobLocation]bool{}
				for bs.Next() {
					b := bs.Blob()
					if row >= len(ids) {
						t.Fatalf("more blobs than rows (%d)", len(ids))
					}
					id := ids[row].(string)
					w, ok := want[id]
					if !ok {
						t.Fatalf("row %d: id %s not expected", row, id)
					}
					row++
					if w == nil {
						if !b.Null {
							t.Errorf("id %s: blob not null", id)
						}
						continue
					}
					if exp.StorageVersion == "legacy" && w.Size == 0 && b.Null {
						// Legacy files cannot tell an empty value from a null one.
						continue
					}
					if b.Null || b.Size != w.Size {
						t.Errorf("id %s: null %v size %d, want size %d", id, b.Null, b.Size, w.Size)
						continue
					}
					r, err := b.ReaderAt()
					if err != nil {
						t.Fatalf("id %s: %v", id, err)
					}
					h := sha256.New()
					if n, err := io.Copy(h, r); err != nil || n != w.Size {
						t.Fatalf("id %s: read %d bytes: %v", id, n, err)
					}
					if got := hex.EncodeToString(h.Sum(nil)); got != w.SHA256 {
						t.Errorf("id %s: sha256 %s, want %s", id, got, w.SHA256)
					}
					wantKind := BlobInline
					if ds.Schema().Field(col).BlobVersion() == 2 {
						switch {
						case w.Size > 4<<20:
							wantKind = BlobDedicated
						case w.Size > 64<<10:
							wantKind = BlobPacked
						}
					}
					if b.Kind != wantKind {
						t.Errorf("id %s: kind %s, want %s", id, b.Kind, wantKind)
					}
					if b.Size > 0 {
						if seen[b.Location] {
							t.Errorf("id %s: location %+v shared with another row", id, b.Location)
						}
						seen[b.Location] = true
					}
					tested++
				}
				if err := bs.Err(); err != nil {
					t.Fatal(err)
				}
				bs.Close()
				if row != len(ids) {
					t.Errorf("%d blobs for %d rows", row, len(ids))
				}
			}
		})
	}
	if tested == 0 {
		t.Fatal("no blob was compared")
	}
}

func TestBlobSidecarName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   uint32
		want string
	}{
		{1, "10000000000000000000000000000000.blob"},
		{2, "01000000000000000000000000000000.blob"},
		{3, "11000000000000000000000000000000.blob"},
		{1 << 31, "00000000000000000000000000000001.blob"},
	} {
		if got := blobSidecarName(tc.id); got != tc.want {
			t.Errorf("blobSidecarName(%d) = %s, want %s", tc.id, got, tc.want)
		}
	}
}

// pbMsg builds a protobuf message from (field, value) pairs: uint64 values
// are varints, []byte values are length-delimited.
func pbMsg(kv ...any) []byte {
	var b []byte
	for i := 0; i < len(kv); i += 2 {
		num := protowire.Number(kv[i].(int))
		switch v := kv[i+1].(type) {
		case uint64:
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		case []byte:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendBytes(b, v)
		}
	}
	return b
}

// blobV2Page builds a full-zip blob v2 descriptor page (5 or 6 fields) for
// the given rows; a nil row is null.
func blobV2Page(withRefID bool, rows []*blobV2Desc) ([]byte, decode.PageBuffers) {
	flat := func(bits uint64) []byte { return pbMsg(decode.CompressFlat, pbMsg(1, bits)) }
	fe := func(enc []byte, num int, bits uint64) []byte { return pbMsg(1, enc, num, bits) }
	var vps []any
	for _, f := range [][]byte{fe(flat(8), 2, 8), fe(flat(64), 2, 64), fe(flat(64), 2, 64), fe(flat(32), 2, 32),
		fe(pbMsg(decode.CompressVariable, pbMsg(1, flat(32))), 3, 32)} {
		vps = append(vps, 1, f)
	}
	if withRefID {
		vps = append(vps, 1, fe(flat(32), 2, 32))
	}
	raw := pbMsg(2, uint64(1), 4, uint64(32), 5, uint64(len(rows)), 6, uint64(len(rows)),
		7, pbMsg(decode.CompressVariablePackedStruct, pbMsg(vps...)), 8, []byte{decode.LayerAllValidItem, decode.LayerNullableItem})
	var data []byte
	for _, r := range rows {
		if r == nil {
			data = append(data, 1)
			continue
		}
		var v []byte
		v = append(v, r.kind)
		v = binary.LittleEndian.AppendUint64(v, r.position)
		v = binary.LittleEndian.AppendUint64(v, r.size)
		v = binary.LittleEndian.AppendUint32(v, r.blobID)
		v = binary.LittleEndian.AppendUint32(v, uint32(len(r.uri)))
		v = append(v, r.uri...)
		if withRefID {
			v = binary.LittleEndian.AppendUint32(v, r.refID)
		}
		data = append(data, 0)
		data = binary.LittleEndian.AppendUint32(data, uint32(len(v)))
		data = append(data, v...)
	}
	return raw, decode.PageBuffers{data}
}

// TestBlobV2Descriptors decodes 5- and 6-field (ref_id) descriptors and
// checks that rows sharing a ref_id resolve to one physical location.
func TestBlobV2Descriptors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ext := filepath.Join(dir, "ext.bin")
	if err := os.WriteFile(ext, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := []*blobV2Desc{
		{kind: 0, position: 64, size: 5, refID: 42},
		{kind: 0, position: 64, size: 5, refID: 42},
		nil,
		{kind: 1, position: 10, size: 100, blobID: 1, refID: 7},
		{kind: 2, position: 0, size: 3 << 20, blobID: 2},
		{kind: 3, position: 2, size: 0, uri: "file://" + ext},
		{kind: 0, position: 0, size: 0},
	}
	ds := &Dataset{dir: dir, st: LocalStorage{}, ctx: t.Context(), manifest: &Manifest{}}
	file := &dataFile{path: filepath.Join(dir, "data", "abc.lance"), meta: &fileMeta{size: 1000}}
	inline := func(pos, size uint64) (Blob, error) {
		return Blob{Size: int64(size), Location: BlobLocation{Path: file.path, Offset: int64(pos), Size: int64(size)}}, nil
	}
	for _, withRef := range []bool{false, true} {
		raw, bufs := blobV2Page(withRef, rows)
		sp, err := decode.FullZip(raw, bufs, len(rows))
		if err != nil {
			t.Fatal(err)
		}
		descs, err := parseBlobV2Descriptors(sp, raw)
		if err != nil {
			t.Fatalf("ref_id %v: %v", withRef, err)
		}
		if len(descs) != len(rows) {
			t.Fatalf("%d descriptors, want %d", len(descs), len(rows))
		}
		var blobs []Blob
		for i, d := range descs {
			if (d == nil) != (rows[i] == nil) {
				t.Fatalf("row %d: null %v, want %v", i, d == nil, rows[i] == nil)
			}
			if d == nil {
				blobs = append(blobs, Blob{Null: true})
				continue
			}
			b, err := ds.resolveBlobV2(d, file, nil, inline)
			if err != nil {
				t.Fatalf("row %d: %v", i, err)
			}
			blobs = append(blobs, b)
		}
		wantRef := func(i int) uint32 {
			if withRef {
				return rows[i].refID
			}
			return 0
		}
		for _, tc := range []struct {
			row  int
			kind BlobKind
			loc  BlobLocation
		}{
			{0, BlobInline, BlobLocation{file.path, 64, 5}},
			{1, BlobInline, BlobLocation{file.path, 64, 5}},
			{3, BlobPacked, BlobLocation{filepath.Join(dir, "data", "abc", "10000000000000000000000000000000.blob"), 10, 100}},
			{4, BlobDedicated, BlobLocation{filepath.Join(dir, "data", "abc", "01000000000000000000000000000000.blob"), 0, 3 << 20}},
			{5, BlobExternal, BlobLocation{ext, 2, 8}},
			{6, BlobInline, BlobLocation{}},
		} {
			b := blobs[tc.row]
			if b.Kind != tc.kind || b.Location != tc.loc || b.RefID != wantRef(tc.row) || b.Size != tc.loc.Size {
				t.Errorf("ref_id %v: row %d: %+v, want kind %s at %+v ref %d", withRef, tc.row, b, tc.kind, tc.loc, wantRef(tc.row))
			}
		}
		if blobs[0].Location != blobs[1].Location {
			t.Errorf("rows sharing a ref_id have different locations")
		}
	}
}

func TestExternalBlobPath(t *testing.T) {
	t.Parallel()
	ds := &Dataset{st: LocalStorage{}, ctx: t.Context(), manifest: &Manifest{BasePaths: []BasePath{{ID: 3, Path: "/mnt/blobs"}}}}
	for _, tc := range []struct {
		id   uint32
		uri  string
		want string
		ok   bool
	}{
		{0, "/abs/file.bin", "/abs/file.bin", true},
		{0, "file:///abs/x%20y.bin", "/abs/x y.bin", true},
		{0, "s3://bucket/key", "", false},
		{3, "sub/a.bin", "/mnt/blobs/sub/a.bin", true},
		{4, "a.bin", "", false},
	} {
		got, err := ds.externalBlobPath(tc.id, tc.uri)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("externalBlobPath(%d, %q) = %q, %v; want %q ok=%v", tc.id, tc.uri, got, err, tc.want, tc.ok)
		}
	}
}

func TestCheckManagedPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"_blobs/0a0b.blob", true},
		{"data/x/10000000000000000000000000000000.blob", true},
		{"", false},
		{"s3://bucket/_blobs/a.blob", false},
		{`_blobs\a.blob`, false},
		{"/_blobs/a.blob", false},
		{"_blobs/", false},
		{"_blobs//a.blob", false},
		{"_blobs/./a.blob", false},
		{"../a.blob", false},
	} {
		if err := checkManagedPath(tc.path); (err == nil) != tc.ok {
			t.Errorf("checkManagedPath(%q) = %v, want ok=%v", tc.path, err, tc.ok)
		}
	}
}

// TestManagedBlobBase: a managed descriptor's object lies under the base
// path its blob_id names, root or not; kind 4 with an unbound id 0 lies
// under the dataset's root (as Lance 14 writes it), kind 5 (under a
// target base) must name a bound base, and neither may name an unbound one.
func TestManagedBlobBase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{"root/_blobs/a.blob", "ext/_blobs/a.blob", "extroot/_blobs/a.blob"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), make([]byte, 100), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ds := &Dataset{st: LocalStorage{}, ctx: t.Context(), dir: filepath.Join(dir, "root"), manifest: &Manifest{BasePaths: []BasePath{
		{ID: 1, Path: filepath.Join(dir, "ext")},
		{ID: 2, Path: "file://" + filepath.Join(dir, "extroot"), IsDatasetRoot: true},
	}}}
	for _, tc := range []struct {
		kind uint8
		id   uint32
		want string // the object's path under dir, "" for an error
	}{
		{4, 0, "root/_blobs/a.blob"},
		{4, 1, "ext/_blobs/a.blob"},
		{5, 1, "ext/_blobs/a.blob"},
		{5, 2, "extroot/_blobs/a.blob"},
		{5, 0, ""},
		{4, 7, ""},
		{5, 7, ""},
	} {
		b, err := ds.managedBlob(&blobV2Desc{kind: tc.kind, position: 10, size: 20, blobID: tc.id, uri: "_blobs/a.blob"})
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("kind %d, base %d: resolved to %s, want an error", tc.kind, tc.id, b.Location.Path)
		case tc.want != "" && err != nil:
			t.Errorf("kind %d, base %d: %v", tc.kind, tc.id, err)
		case tc.want != "" && (b.Location.Path != filepath.Join(dir, tc.want) || b.Kind != BlobManaged || b.Location.Offset != 10 || b.Location.Size != 20):
			t.Errorf("kind %d, base %d: %+v, want %s", tc.kind, tc.id, b, tc.want)
		}
	}
}
