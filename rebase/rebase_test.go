package rebase

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
)

// TestRename: a reference of the dataset's pack directory, under any base,
// gets the new one, key and shard name kept; a string that names a shard
// outside a media directory, or a shard the dataset lacks, is refused.
func TestRename(t *testing.T) {
	t.Parallel()
	shards := map[string]bool{"pack-0000.zip": true, "pack-0001.zip": true}
	for _, c := range []struct {
		ref, to, want, err string
	}{
		{"zip://a/b.png::media/pack-0000.zip", "/data/ds", "zip://a/b.png::/data/ds/media/pack-0000.zip", ""},
		{"zip://a/b.png::/old/ds/media/pack-0001.zip", "", "zip://a/b.png::media/pack-0001.zip", ""},
		{"zip://k::s3://bucket/ds/media/pack-0000.zip", "https://host/x/", "zip://k::https://host/x/media/pack-0000.zip", ""},
		{"zip://k::../ds/media/pack-0000.zip", "s3://b/p", "zip://k::s3://b/p/media/pack-0000.zip", ""},
		{"zip://k::media/pack-0000.zip", "./ds", "zip://k::ds/media/pack-0000.zip", ""},
		{"zip://k::other/pack-0000.zip", "/x", "", "outside a media/ directory"},
		{"zip://k::media/pack-0009.zip", "/x", "", "pack-0009.zip, which is not in"},
		{"media/pack-0000.zip", "/x", "", "not a blob reference"},
	} {
		to := c.to
		if to != "" {
			to = cleanBase(t, to)
		}
		p := &Plan{Dataset: "/ds", To: to, shards: shards}
		got, err := p.rename(c.ref)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("rename(%q) = %q, %v; want an error with %q", c.ref, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("rename(%q) onto %q = %q, %v; want %q", c.ref, c.to, got, err, c.want)
		}
	}
}

// TestWhere: the plan's sentence names the base and the references' form.
func TestWhere(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ base, want string }{
		{"", "relative to the dataset root (zip://KEY::media/pack-NNNN.zip)"},
		{"/data/ds", "from /data/ds (zip://KEY::/data/ds/media/pack-NNNN.zip), in any directory"},
		{"s3://b/ds", "from s3://b/ds (zip://KEY::s3://b/ds/media/pack-NNNN.zip), once the dataset is there"},
		{"../ds", "relative to the directory a reader works in"},
	} {
		if got := Where(c.base); !strings.Contains(got, c.want) {
			t.Errorf("Where(%q) = %q, want it to contain %q", c.base, got, c.want)
		}
	}
}

// TestTableNames: files inside a *.lance directory belong to that Lance
// table, and names an interrupted run left are recognised at any depth.
func TestTableNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rel, dir string
		ok       bool
	}{
		{"table.lance/_versions/1.manifest", "table.lance", true},
		{"meta/frames.lance/data/x.lance", "meta/frames.lance", true},
		{"data/x.lance", "", false},
		{"samples.parquet", "", false},
	} {
		if dir, ok := lanceDir(c.rel); dir != c.dir || ok != c.ok {
			t.Errorf("lanceDir(%q) = %q, %v", c.rel, dir, ok)
		}
	}
	for rel, want := range map[string]bool{".rebase-samples.parquet": true, "data/.rebase-x.parquet": true, ".rebase-table.lance/data/a.lance": true, "data/rebase-x": false} {
		if isTemp(rel) != want {
			t.Errorf("isTemp(%q) = %v", rel, !want)
		}
	}
}

func cleanBase(t *testing.T, base string) string {
	t.Helper()
	b, err := convert.CheckRefBase(base)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSameBytes compares files of equal and unequal contents and sizes,
// across the 1 MiB blocks it reads.
func TestSameBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := strings.Repeat("abcdefgh", 300_000) // 2.4 MB: three blocks
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"", "", true},
		{"x", "x", true},
		{big, big, true},
		{big, big[:len(big)-1] + "z", false},
		{big, big + "a", false},
		{"x", "y", false},
	} {
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		if err := os.WriteFile(pa, []byte(c.a), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pb, []byte(c.b), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := sameBytes(pa, pb); err != nil || got != c.want {
			t.Errorf("sameBytes of %d and %d bytes = %v, %v; want %v", len(c.a), len(c.b), got, err, c.want)
		}
	}
}

// TestRemoveTemps: what an interrupted run left is removed, outside the
// pack directory only, and a table directory left under its exchange name
// while the table itself is missing is put back.
func TestRemoveTemps(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, p := range []string{".rebase-samples.parquet", "data/.rebase-x.parquet", ".rebase-table.lance/data/a.lance",
		".rebase-old-t2.lance/_versions/1.manifest", "media/.rebase-keep", "data/x.parquet"} {
		p = filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeTemps(t.Context(), root); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{".rebase-samples.parquet": false, "data/.rebase-x.parquet": false, ".rebase-table.lance": false,
		".rebase-old-t2.lance": false, "t2.lance/_versions/1.manifest": true, "media/.rebase-keep": true, "data/x.parquet": true} {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", p, err == nil, want)
		}
	}
}
