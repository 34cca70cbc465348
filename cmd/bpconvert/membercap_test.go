package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// TestDefaultMemberCap: converters cap shards at convert.DefaultMaxMembers
// members unless --max-members says otherwise, and the plan says which cap
// applies and why it matters to readers: among its notes when the flag
// changed it, under --explain for the default.
func TestDefaultMemberCap(t *testing.T) {
	t.Parallel()
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
			dry := append(args, "--dry-run")
			if c.flags == nil {
				dry = append(dry, "--explain")
			}
			r := bp(t, append(append(dry, shards[0]), dst)...)
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

// TestGroupSplitWarned: a sample too large for what a shard has left is cut
// across shards, and the summary says so.
func TestGroupSplitWarned(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "tar")
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	files := map[string]string{"000000.a": "x"}
	for _, f := range []string{"a", "b", "c", "d", "e"} {
		files["000001."+f] = f
	}
	writeTree(t, in, files)
	shard := filepath.Join(dir, "s.tar")
	if out, err := exec.Command("tar", "-C", in, "--sort=name", "--format=gnu", "-cf", shard, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	for _, c := range []struct {
		members string
		warned  bool
	}{{"3", true}, {"8", false}} {
		r := bp(t, "convert-wds", "--yes", "--json", "--max-members", c.members, shard, filepath.Join(dir, "out"+c.members))
		if r.code != 0 || strings.Contains(r.stdout, "1 placement group (") != c.warned {
			t.Errorf("--max-members %s: exit %d, warned %v:\n%s%s", c.members, r.code, !c.warned, r.stdout, r.stderr)
		}
	}
}

// TestSamplesShareAShard: a WebDataset sample is one placement group: with
// 3-member samples and the 1,024-member cap, shards end on sample bounds
// (1,023 members) instead of cutting a sample.
func TestSamplesShareAShard(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "tar")
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	files := map[string]string{}
	for i := range 500 {
		for _, f := range []string{"a", "b", "c"} {
			files[fmt.Sprintf("%06d.%s", i, f)] = f
		}
	}
	writeTree(t, in, files)
	shard := filepath.Join(dir, "s.tar")
	if out, err := exec.Command("tar", "-C", in, "--sort=name", "--format=gnu", "-cf", shard, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	dst := filepath.Join(dir, "out")
	r := bp(t, "convert-wds", "--yes", "--json", shard, dst)
	if r.code != 0 || strings.Contains(r.stdout, "placement group") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	set, err := packcore.OpenSet(filepath.Join(dst, convert.MediaDir), packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	perShard := map[string]int{}
	sampleShard := map[string]string{}
	for m := range set.Members() {
		perShard[filepath.Base(m.Shard)]++
		sample := strings.SplitN(m.Key, ".", 2)[0]
		if s, ok := sampleShard[sample]; ok && s != m.Shard {
			t.Errorf("sample %s in %s and %s", sample, s, m.Shard)
		}
		sampleShard[sample] = m.Shard
	}
	if perShard["pack-0000.zip"] != 1023 || perShard["pack-0001.zip"] != 477 || len(perShard) != 2 {
		t.Errorf("members per shard %v, want 1,023 and 477", perShard)
	}
}
