package convert

import (
	"errors"
	"slices"
	"testing"
)

// TestSourceDiffs sorts one set of source files against one committed
// record the two ways an append can (Base.Sources for whole files,
// Base.Grown for files that grow in place).
func TestSourceDiffs(t *testing.T) {
	was := []SourceFile{
		{Path: "/d/a", Size: 1, ModTime: "t1"},
		{Path: "/d/b", Size: 2, ModTime: "t1"},
		{Path: "/d/c", Size: 3, ModTime: "t1"},
		{Path: "s3://b/d/e", Size: 5, ModTime: "t1 \"etag\""},
	}
	now := []SourceFile{
		{Path: "/d/a", Size: 1, ModTime: "t1"},                // unchanged
		{Path: "/d/b", Size: 4, ModTime: "t2"},                // grown
		{Path: "/d/d", Size: 9, ModTime: "t2"},                // new
		{Path: "s3://b/d/e", Size: 5, ModTime: "t3 \"etag\""}, // uploaded again, same bytes
	}
	paths := func(fs []SourceFile) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Path)
		}
		return out
	}
	newBase := func() *Base {
		d, err := ParseDest(t.TempDir(), "")
		if err != nil {
			t.Fatal(err)
		}
		return &Base{Dest: d, Record: &Record{Sources: was}}
	}

	b := newBase()
	d := b.Grown(now)
	if got, want := paths(d.New), []string{"/d/b", "/d/d"}; !slices.Equal(got, want) {
		t.Errorf("Grown: new %q, want %q", got, want)
	}
	if got, want := paths(d.Kept), []string{"/d/a", "s3://b/d/e"}; !slices.Equal(got, want) {
		t.Errorf("Grown: kept %q, want %q", got, want)
	}
	if len(d.Removed) != 0 || !slices.Equal(paths(b.Diff.New), paths(d.New)) {
		t.Errorf("Grown: removed %q; Diff kept %+v", paths(d.Removed), b.Diff)
	}

	// Whole files: the grown one is refused, naming it.
	if _, err := newBase().Sources(now, true); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("Sources with a changed file: %v", err)
	}
	unchanged := []SourceFile{now[0], was[1], now[2], now[3]}
	d, err := newBase().Sources(unchanged, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(d.Removed), []string{"/d/c"}; !slices.Equal(got, want) || !slices.Equal(paths(d.New), []string{"/d/d"}) {
		t.Errorf("Sources: %+v", d)
	}
	if _, err := newBase().Sources(unchanged, false); err == nil {
		t.Error("Sources refused no removed file without allowRemoved")
	}
}
