package packcore

import (
	"fmt"
	"testing"
)

// TestMemberIndex: every member is found in its shard at its entry number,
// keys never added are not, and a key in two entries (two shards or one)
// is reported with both places.
func TestMemberIndex(t *testing.T) {
	t.Parallel()
	shard := func(name string, keys ...string) *shardFile {
		d := &Directory{}
		for _, k := range keys {
			d.Entries = append(d.Entries, Entry{Name: k})
		}
		return &shardFile{name: name, dir: d}
	}
	var many []string
	for i := range 30_000 {
		many = append(many, fmt.Sprintf("%04d/%08d.jpg", i/1000, i))
	}
	tests := []struct {
		name   string
		shards []*shardFile
		dup    [2]string // shard names of a duplicate, "" for none
	}{
		{"empty", []*shardFile{shard("a.zip")}, [2]string{}},
		{"one empty key", []*shardFile{shard("a.zip", "")}, [2]string{}},
		{"many", []*shardFile{shard("a.zip", many[:10_000]...), shard("b.zip", many[10_000:]...), shard("c.zip", "x")}, [2]string{}},
		{"across shards", []*shardFile{shard("a.zip", "k", "x"), shard("b.zip", "y", "x")}, [2]string{"a.zip", "b.zip"}},
		{"within a shard", []*shardFile{shard("a.zip", "x", "y", "x")}, [2]string{"a.zip", "a.zip"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := buildMemberIndex(tc.shards)
			if tc.dup[0] != "" {
				locs := x.dups["x"]
				if len(x.dups) != 1 || len(locs) != 2 || locs[0].shard.name != tc.dup[0] || locs[1].shard.name != tc.dup[1] || locs[0] == locs[1] {
					t.Fatalf("duplicates: %+v, want x in %v", x.dups, tc.dup)
				}
				for _, l := range locs {
					if got, ok := x.findIn(tc.shards, "x", l.shard); !ok || got.shard != l.shard || l.shard.dir.Entries[got.i].Name != "x" {
						t.Fatalf("findIn(x, %s) = %+v %v", l.shard.name, got, ok)
					}
				}
				return
			}
			if x.dups != nil {
				t.Fatalf("duplicate reported: %+v", x.dups)
			}
			n := 0
			for _, sf := range tc.shards {
				for i, e := range sf.dir.Entries {
					loc, ok := x.find(tc.shards, e.Name)
					if !ok || loc.shard != sf || loc.i != i {
						t.Fatalf("find(%q) = %v %v, want %s entry %d", e.Name, loc, ok, sf.name, i)
					}
					n++
				}
			}
			if x.n != n {
				t.Errorf("n = %d, want %d", x.n, n)
			}
			for _, k := range []string{"nope", "0000/00000000.jp", "X", "0030/00030000.jpg"} {
				if _, ok := x.find(tc.shards, k); ok {
					t.Errorf("find(%q) found a key never added", k)
				}
			}
		})
	}
}
