package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/packcore"
)

// TestDefaultMemberCap: converters cap shards at convert.DefaultMaxMembers
// members unless --max-members says otherwise, and the plan says which cap
// applies and why it matters to readers.
func TestDefaultMemberCap(t *testing.T) {
	dir := t.TempDir()
	shards := wdsShards(t, dir, 1, 1300, 16) // 2,600 members
	cases := []struct {
		name   string
		flags  []string
		shards map[string]int // members per shard
		note   string
	}{
		{"default", nil, map[string]int{"pack-0000.zip": 1024, "pack-0001.zip": 1024, "pack-0002.zip": 552},
			"at most 4.0 GiB and 1,024 members each"},
		{"raised", []string{"--max-members", "65535"}, map[string]int{"pack-0000.zip": 2600},
			"grows with the member count"},
		{"lowered", []string{"--max-members", "1000"}, map[string]int{"pack-0000.zip": 1000, "pack-0001.zip": 1000, "pack-0002.zip": 600},
			"1,000 members each"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(dir, "out-"+c.name)
			args := append([]string{"convert-wds"}, c.flags...)
			r := bp(t, append(append(args, "--dry-run", shards[0]), dst)...)
			if r.code != 0 || !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), c.note) {
				t.Fatalf("dry run: exit %d, plan lacks %q:\n%s%s", r.code, c.note, r.stdout, r.stderr)
			}
			r = bp(t, append(append(args, "--yes", "--quiet", shards[0]), dst)...)
			if r.code != 0 {
				t.Fatalf("convert: exit %d %s", r.code, r.stderr)
			}
			set, err := packcore.OpenSet(filepath.Join(dst, convert.MediaDir), packcore.SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			got := map[string]int{}
			for m := range set.Members() {
				got[filepath.Base(m.Shard)]++
			}
			if len(got) != len(c.shards) {
				t.Fatalf("shards %v, want %v", got, c.shards)
			}
			for name, n := range c.shards {
				if got[name] != n {
					t.Errorf("%s holds %d members, want %d (all: %v)", name, got[name], n, got)
				}
			}
		})
	}
}
