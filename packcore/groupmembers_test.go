package packcore

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestGroupsKeepTogetherUnderMemberCap: placement groups of similar size are
// not cut by the member cap: a group that would not fit the members a shard
// has left starts the next shard.
func TestGroupsKeepTogetherUnderMemberCap(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		groups     []int // members in each group
		maxMembers int
		shards     []int // members in each shard
		split      int
	}{
		{"equal groups", []int{5, 5, 5, 5, 5}, 12, []int{10, 10, 5}, 0},
		{"a group per shard", []int{3, 3, 3, 3}, 4, []int{3, 3, 3, 3}, 0},
		// the larger group is not known before it comes: it is cut once,
		// and the groups after it are placed knowing it
		{"a larger group later", []int{2, 2, 2, 5, 2, 2}, 8, []int{8, 5, 2}, 1},
		{"a group larger than a shard", []int{2, 10, 2}, 6, []int{6, 6, 2}, 1},
		{"single members (no groups to keep)", []int{1, 1, 1, 1, 1}, 2, []int{2, 2, 1}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := Create(context.Background(), t.TempDir(), WriterOptions{MaxMembers: c.maxMembers, NoManifest: true})
			if err != nil {
				t.Fatal(err)
			}
			for g, n := range c.groups {
				for m := range n {
					key := fmt.Sprintf("g%02d/m%02d", g, m)
					if _, err := w.Add(key, strings.NewReader("x"), 1, fmt.Sprint("group", g)); err != nil {
						t.Fatal(err)
					}
				}
			}
			st, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, s := range st.ShardFiles {
				got = append(got, s.Members)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.shards) || st.GroupsSplit != c.split {
				t.Errorf("shards %v with %d groups split, want %v with %d", got, st.GroupsSplit, c.shards, c.split)
			}
		})
	}
}

// TestSmallGroupsFillShards: shards of many small groups fill up under the
// default rule; under the reference tool's half-full rule they close about
// half full.
func TestSmallGroupsFillShards(t *testing.T) {
	t.Parallel()
	const limit = 10_000
	for _, c := range []struct {
		fill     float64
		min, max float64 // fraction of the cap every shard but the last reaches
	}{
		{0, 0.9, 1},
		{0.5, 0.5, 0.6},
	} {
		w, err := Create(context.Background(), t.TempDir(), WriterOptions{MaxPackBytes: limit, GroupFill: c.fill, NoManifest: true})
		if err != nil {
			t.Fatal(err)
		}
		for g := range 100 {
			for m := range 2 {
				if _, err := w.Add(fmt.Sprintf("g%03d/%d", g, m), strings.NewReader(strings.Repeat("x", 100)), 100, fmt.Sprint(g)); err != nil {
					t.Fatal(err)
				}
			}
		}
		st, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if st.GroupsSplit != 0 || len(st.ShardFiles) < 3 {
			t.Fatalf("fill %v: %d shards, %d groups split", c.fill, len(st.ShardFiles), st.GroupsSplit)
		}
		for _, s := range st.ShardFiles[:len(st.ShardFiles)-1] {
			if f := float64(s.Bytes) / limit; f < c.min || f > c.max {
				t.Errorf("fill %v: %s is %d bytes, %.2f of the cap, want %.2f to %.2f", c.fill, s.Name, s.Bytes, f, c.min, c.max)
			}
		}
	}
}
