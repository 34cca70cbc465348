package lancefmt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestManifestVersionFromName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    uint64
		ok   bool
	}{
		{"1.manifest", 1, true},
		{"42.manifest", 42, true},
		{"18446744073709551614.manifest", 1, true},
		{"18446744073709551610.manifest", 5, true},
		{"00000000000000000001.manifest", 18446744073709551614, true},
		{"d3.manifest", 0, false},
		{"_latest.manifest", 0, false},
		{"1.manifest-1234", 0, false},
		{".tmp_7.manifest_abcd", 0, false},
		{"latest_version_hint.json", 0, false},
		{".manifest", 0, false},
		{"99999999999999999999999.manifest", 0, false},
	} {
		v, ok := manifestVersionFromName(tc.name)
		if v != tc.v || ok != tc.ok {
			t.Errorf("manifestVersionFromName(%q) = %d, %v; want %d, %v", tc.name, v, ok, tc.v, tc.ok)
		}
	}
}

// TestVersions checks version discovery (V1 names for the types datasets,
// V2 names for the others) and the row count of every version.
func TestVersions(t *testing.T) {
	t.Parallel()
	for _, set := range fixtureSets {
		t.Run(set.name, func(t *testing.T) { checkVersions(t, set.dir(t)) })
	}
}

// checkVersions checks the datasets of one fixture directory.
func checkVersions(t *testing.T, dir string) {
	for _, name := range datasetNames(t, dir) {
		t.Run(name, func(t *testing.T) {
			exp := loadExpected(t, dir, name)
			path := filepath.Join(dir, name+".lance")
			ds, err := Open(context.Background(), path, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := ds.Versions()
			if len(got) != len(exp.Versions) {
				t.Fatalf("versions %v, want %d versions", got, len(exp.Versions))
			}
			last := exp.Versions[len(exp.Versions)-1].Version
			if ds.Version() != last {
				t.Errorf("latest version %d, want %d", ds.Version(), last)
			}
			for i, ev := range exp.Versions {
				if got[i] != ev.Version {
					t.Errorf("versions[%d] = %d, want %d", i, got[i], ev.Version)
				}
				dv, err := Open(context.Background(), path, OpenOptions{Version: ev.Version})
				if err != nil {
					t.Fatal(err)
				}
				if dv.Version() != ev.Version || dv.NumRows() != ev.Rows {
					t.Errorf("version %d: opened %d with %d rows, want %d rows", ev.Version, dv.Version(), dv.NumRows(), ev.Rows)
				}
				if want := dataVersion(exp.StorageVersion); dv.Manifest().DataVersion != want {
					t.Errorf("version %d: data storage version %q, want %q", ev.Version, dv.Manifest().DataVersion, want)
				}
			}
			_, err = Open(context.Background(), path, OpenOptions{Version: last + 1})
			if !errors.Is(err, ErrVersionNotFound) {
				t.Errorf("Open(version %d) error = %v, want ErrVersionNotFound", last+1, err)
			}
			ents, _ := os.ReadDir(filepath.Join(path, "_versions"))
			v2 := false
			for _, e := range ents {
				v2 = v2 || len(e.Name()) == 29
			}
			if wantV2 := !strings.HasPrefix(strings.TrimPrefix(name, "s_"), "types_"); v2 != wantV2 {
				t.Errorf("V2 manifest names = %v, want %v", v2, wantV2)
			}
		})
	}
}

// dataVersion maps a requested storage version to the manifest's.
func dataVersion(s string) string {
	if s == "legacy" {
		return "0.1"
	}
	return s
}

// TestDeletionFiles checks that both deletion file kinds were written and
// decoded.
func TestDeletionFiles(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	for _, name := range []string{"types_2_0", "types_2_1", "types_2_2"} {
		ds, err := Open(context.Background(), filepath.Join(dir, name+".lance"), OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[bool]bool{}
		for i := range ds.Fragments() {
			fr := &ds.Fragments()[i]
			if fr.Deletion == nil {
				continue
			}
			bm, err := ds.Deleted(fr)
			if err != nil {
				t.Fatalf("%s: fragment %d: %v", name, fr.ID, err)
			}
			if bm.GetCardinality() != fr.Deletion.NumDeleted || bm.GetCardinality() == 0 {
				t.Errorf("%s: fragment %d: %d deleted rows, manifest says %d", name, fr.ID, bm.GetCardinality(), fr.Deletion.NumDeleted)
			}
			kinds[fr.Deletion.Bitmap] = true
		}
		if !kinds[true] || !kinds[false] {
			t.Errorf("%s: deletion file kinds %v, want both arrow and bitmap", name, kinds)
		}
	}
}

// manifestBytes builds a framed manifest with the given reader flags and,
// as writer flags, those of them Lance pairs with a writer twin.
func manifestBytes(flags uint64) []byte {
	return manifestFlagBytes(flags, flags&pairedFlags)
}

// manifestFlagBytes builds a framed manifest with the given reader and
// writer flags.
func manifestFlagBytes(flags, writer uint64) []byte {
	var field []byte
	field = protowire.AppendTag(field, 2, protowire.BytesType)
	field = protowire.AppendString(field, "x")
	field = protowire.AppendTag(field, 3, protowire.VarintType)
	field = protowire.AppendVarint(field, 0)
	field = protowire.AppendTag(field, 4, protowire.VarintType)
	field = protowire.AppendVarint(field, ^uint64(0)) // int32 -1, sign-extended
	field = protowire.AppendTag(field, 5, protowire.BytesType)
	field = protowire.AppendString(field, "int32")
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.BytesType)
	m = protowire.AppendBytes(m, field)
	m = protowire.AppendTag(m, 3, protowire.VarintType)
	m = protowire.AppendVarint(m, 1)
	m = protowire.AppendTag(m, 9, protowire.VarintType)
	m = protowire.AppendVarint(m, flags)
	m = protowire.AppendTag(m, 10, protowire.VarintType)
	m = protowire.AppendVarint(m, writer)
	out := []byte{byte(len(m)), 0, 0, 0}
	out = append(out, m...)
	out = append(out, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 'L', 'A', 'N', 'C')
	return out
}

func TestFeatureFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flags uint64
		ok    bool
		words string // what the refusal names
	}{
		{0, true, ""},
		{1 | 2 | 4 | 8 | 16 | 32, true, ""},
		{64, false, "data overlay files"},
		{128, false, "indices with covering columns"},
		{1 << 11, true, ""},
		{1 | 2 | 8 | 1<<11, true, ""},
		{1 << 15, false, "non-reusable field ids as a reader feature"},
		{1 << 40, false, "reader feature bit 40, unknown to Lance 14 and to this reader"},
		{1<<40 | 1<<41 | 64, false, "data overlay files"},
		{1<<40 | 1<<41, false, "bit 40, 41"},
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "_versions"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "_versions", "1.manifest"), manifestBytes(tc.flags), 0o644); err != nil {
			t.Fatal(err)
		}
		ds, err := Open(context.Background(), dir, OpenOptions{})
		if tc.ok != (err == nil) {
			t.Fatalf("flags %#x: Open error = %v, want ok=%v", tc.flags, err, tc.ok)
		}
		if err != nil {
			var fe *UnsupportedFeaturesError
			if !errors.As(err, &fe) || fe.Flags != tc.flags || fe.Readable != 0 {
				t.Errorf("flags %#x: error %#v, want an UnsupportedFeaturesError for the flags", tc.flags, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.words) || strings.Contains(msg, "0x") || !strings.Contains(msg, "no earlier version") {
				t.Errorf("flags %#x: error %q does not name %q in words (without hex)", tc.flags, msg, tc.words)
			}
		}
		if err == nil && (ds.Schema().Field("x") == nil || ds.Schema().Arrow.Field(0).Type.String() != "int32") {
			t.Errorf("flags %#x: schema %v", tc.flags, ds.Schema().Arrow)
		}
	}
}

// TestFeatureFlagsOlderVersion: a refused version names the newest earlier
// version that can be read, and that version opens.
func TestFeatureFlagsOlderVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "_versions"), 0o755); err != nil {
		t.Fatal(err)
	}
	for v, flags := range map[int]uint64{1: 0, 2: 1, 3: 64, 4: 64 | 1} {
		if err := os.WriteFile(filepath.Join(dir, "_versions", fmt.Sprintf("%d.manifest", v)), manifestBytes(flags), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Open(context.Background(), dir, OpenOptions{})
	var fe *UnsupportedFeaturesError
	if !errors.As(err, &fe) || fe.Version != 4 || fe.Readable != 2 || !strings.Contains(err.Error(), "version 2, the newest before it without it, can be read") {
		t.Fatalf("Open: %v, want a refusal naming version 2", err)
	}
	if _, err := Open(context.Background(), dir, OpenOptions{Version: fe.Readable}); err != nil {
		t.Fatalf("Open version %d: %v", fe.Readable, err)
	}
}

func TestManifestFramingErrors(t *testing.T) {
	t.Parallel()
	good := manifestBytes(0)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", good[:10]},
		{"bad magic", append(append([]byte(nil), good[:len(good)-1]...), 'X')},
		{"position past end", func() []byte {
			b := append([]byte(nil), good...)
			b[len(b)-16] = 200
			return b
		}()},
		{"length past end", func() []byte {
			b := append([]byte(nil), good...)
			b[0] = 250
			return b
		}()},
	} {
		if _, err := parseManifestFile(tc.b); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := parseManifestFile(good); err != nil {
		t.Errorf("good manifest: %v", err)
	}
}

func TestUnsupportedType(t *testing.T) {
	t.Parallel()
	fields := []*Field{
		{ID: 0, ParentID: -1, Name: "ok", LogicalType: "int32"},
		{ID: 1, ParentID: -1, Name: "odd", LogicalType: "quaternion"},
	}
	if err := linkFields(fields); err != nil {
		t.Fatal(err)
	}
	s, err := newSchema(fields, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Fields) != 2 || s.Arrow.NumFields() != 1 || s.Unsupported["odd"] == nil {
		t.Fatalf("fields %d, arrow fields %d, unsupported %v", len(s.Fields), s.Arrow.NumFields(), s.Unsupported)
	}
	ds := &Dataset{dir: "d", st: LocalStorage{}, ctx: t.Context(), schema: s, manifest: &Manifest{}}
	if _, err := ds.Scan(context.Background(), ScanOptions{}); err == nil || !strings.Contains(err.Error(), `column "odd"`) {
		t.Errorf("Scan of every column: error %v, want one naming column \"odd\"", err)
	}
	if _, err := ds.Scan(context.Background(), ScanOptions{Columns: []string{"ok"}}); err != nil {
		t.Errorf("Scan of a supported column: %v", err)
	}
}
