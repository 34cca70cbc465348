package dsverify

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/packcore"
)

// writePack writes members into root/media with packcore's writer, two
// members per shard.
func writePack(t *testing.T, root string, members map[string]string, order []string) {
	t.Helper()
	w, err := packcore.Create(context.Background(), filepath.Join(root, "media"), packcore.WriterOptions{MaxMembers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range order {
		if _, err := w.Add(k, strings.NewReader(members[k]), int64(len(members[k])), ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestResolve checks every way a reference can fail to resolve, against a
// pack of three members in two shards.
func TestResolve(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writePack(t, root, map[string]string{"a.txt": "a", "b.txt": "b", "c.txt": "c"}, []string{"a.txt", "b.txt", "c.txt"})
	os.WriteFile(filepath.Join(root, "notes.zip"), []byte("not a zip"), 0o644)
	v := &Check{ctx: context.Background(), root: root, sets: map[string]*setEntry{}, opts: Options{MaxProblems: 10}}
	defer v.close()
	out, _, err := openPlace(v.ctx, root, v.storeOptions())
	if err != nil {
		t.Fatal(err)
	}
	v.out = out
	if _, _, err := v.discover(); err != nil {
		t.Fatal(err)
	}
	v.packDirs = []string{"media"}
	for _, tc := range []struct{ ref, want string }{
		{"zip://a.txt::/srv/ds/media/pack-0000.zip", ""},
		{"zip://c.txt::s3://bucket/ds/media/pack-0001.zip", ""},
		{"zip://c.txt::https://host/media/pack-0000.zip", `member "c.txt" is in media/pack-0001.zip, not in media/pack-0000.zip`},
		{"zip://a.txt::media/pack-0000.zip", ""},
		{"zip://c.txt::media/pack-0001.zip", ""},
		{"zip://c.txt::media/pack-0000.zip", `member "c.txt" is in media/pack-0001.zip, not in media/pack-0000.zip`},
		{"zip://d.txt::media/pack-0000.zip", `member "d.txt" is not in media/pack-0000.zip`},
		{"zip://a.txt::media/pack-0007.zip", "shard media/pack-0007.zip does not exist"},
		{"zip://a.txt::other/pack-0000.zip", "shard other/pack-0000.zip does not exist"},
		{"zip://a.txt::../ds/media/pack-0000.zip", ""}, // --ref-base ../ds
		{"zip://a.txt::media/../media/pack-0000.zip", "not a clean path inside the dataset"},
		{"zip://a.txt::/etc/pack-0000.zip", "ends with no pack directory of this dataset (media)"},
		{"zip://a.txt::media//pack-0000.zip", "not a clean path inside the dataset"},
		{"zip://a.txt", "not a valid reference"},
		{"zip://::media/pack-0000.zip", "not a valid reference"},
		{"zip://a.txt::notes.zip", "cannot be read"},
	} {
		if got := v.resolve(tc.ref); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("resolve(%q) = %q, want %q", tc.ref, got, tc.want)
		}
	}
	if got := sortedSet(v.bases); strings.Join(got, " ") != "../ds /srv/ds https://host s3://bucket/ds" {
		t.Errorf("reference bases %q", got)
	}
}

// TestVerifyTables reads JSON and JSON-lines tables under a dataset root,
// skipping hidden entries, and reports each bad reference with its table,
// row and column.
func TestVerifyTables(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writePack(t, root, map[string]string{"a.txt": "a", "b.txt": "b"}, []string{"a.txt", "b.txt"})
	files := map[string]string{
		"index.json":     `{"format": "x", "entries": [{"ref": "zip://a.txt::media/pack-0000.zip"}, {"ref": "zip://z.txt::media/pack-0000.zip"}]}`,
		"rows.jsonl":     "{\"img\": {\"ref\": \"zip://b.txt::media/pack-0000.zip\"}}\n\n{\"img\": {\"ref\": \"zip://b.txt::media/pack-0009.zip\"}}\n",
		".hidden/x.json": `{"ref": "zip://nothing::media/pack-0000.zip"}`,
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Verify(context.Background(), root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Problem{
		{Table: "index.json", Row: 1, Column: "entries.ref", Ref: "zip://z.txt::media/pack-0000.zip", Reason: `member "z.txt" is not in media/pack-0000.zip`},
		{Table: "rows.jsonl", Row: 1, Column: "img.ref", Ref: "zip://b.txt::media/pack-0009.zip", Reason: "shard media/pack-0009.zip does not exist"},
	}
	if len(rep.Problems) != len(want) {
		t.Fatalf("problems %+v, want %+v", rep.Problems, want)
	}
	for i := range want {
		if rep.Problems[i] != want[i] {
			t.Errorf("problem %d: %+v, want %+v", i, rep.Problems[i], want[i])
		}
	}
	if rep.Refs != 4 || rep.Members != 2 || rep.Shards != 1 || len(rep.Tables) != 2 {
		t.Errorf("report %+v", rep)
	}
	if got := rep.Problems[0].String(); got != `index.json: row 1: column entries.ref: zip://z.txt::media/pack-0000.zip: member "z.txt" is not in media/pack-0000.zip` {
		t.Errorf("String() = %q", got)
	}
}

func TestVerifyNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("x"), 0o644)
	if _, err := Verify(context.Background(), root, Options{}); !errors.Is(err, ErrNothingToVerify) {
		t.Fatalf("err %v, want ErrNothingToVerify", err)
	}
}
