package convert

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestShardIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		i    int
		ok   bool
	}{
		{"pack-0000.zip", 0, true},
		{"pack-0012.zip", 12, true},
		{"pack-10000.zip", 10000, true},
		{"pack-12.zip", 0, false},
		{"pack-00x1.zip", 0, false},
		{"pack-+001.zip", 0, false},
		{"other-0001.zip", 0, false},
		{"pack-0001.zip.tmp", 0, false},
		{".pack-0001.zip", 0, false},
	} {
		if i, ok := shardIndex(tc.name); i != tc.i || ok != tc.ok {
			t.Errorf("shardIndex(%q) = %d, %v; want %d, %v", tc.name, i, ok, tc.i, tc.ok)
		}
	}
}

func TestContiguous(t *testing.T) {
	for _, tc := range []struct {
		have []int
		want int
	}{
		{nil, 0},
		{[]int{1, 2}, 0},
		{[]int{0, 2, 3}, 1},
		{[]int{2, 0, 1}, 3},
	} {
		have := map[int]bool{}
		for _, i := range tc.have {
			have[i] = true
		}
		if got := contiguous(have); got != tc.want {
			t.Errorf("contiguous(%v) = %d, want %d", tc.have, got, tc.want)
		}
	}
}

// TestClearForResumeTemporaries: a resumed staging directory keeps its
// record and complete shards, and loses what a killed run left half
// written: the manifest's temporary file, and every other file.
func TestClearForResumeTemporaries(t *testing.T) {
	dir := t.TempDir()
	files := map[string]bool{ // kept?
		RecordName:                               true,
		"media/pack-0000.zip":                    true,
		"media/.pack.manifest.json.0a1b2c3d.tmp": false,
		"samples.parquet":                        false,
		".samples.spool":                         false,
	}
	for rel := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := clearForResume(dir, MediaDir); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, filepath.ToSlash(rel))
		}
		return err
	})
	for rel, keep := range files {
		if slices.Contains(left, rel) != keep {
			t.Errorf("%s: kept %v, want %v (left: %v)", rel, !keep, keep, left)
		}
	}
	for _, rel := range []string{"media/.pack.manifest.json.0a1b2c3d.tmp", "tables/.x.parquet.01.tmp"} {
		if !IsTemp(rel) {
			t.Errorf("IsTemp(%q) = false", rel)
		}
	}
	for _, rel := range []string{"media/pack.manifest.json", "media/pack-0000.zip", ".bpconvert.json", "data/x.tmp"} {
		if IsTemp(rel) {
			t.Errorf("IsTemp(%q) = true", rel)
		}
	}
}
