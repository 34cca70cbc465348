package wds

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestQuickPlan: with QuickPlan the plan does not read compressed shards
// (it counts the plain ones and says how many it left out); without it,
// it counts them all. Convert converts every shard either way.
func TestQuickPlan(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "tar", "gzip")
	root := t.TempDir()
	in := filepath.Join(root, "in")
	os.MkdirAll(in, 0o755)
	for _, n := range []string{"a.txt", "b.txt"} {
		os.WriteFile(filepath.Join(in, n), []byte(n), 0o644)
	}
	shards := filepath.Join(root, "shards")
	os.MkdirAll(shards, 0o755)
	for _, args := range [][]string{
		{"-C", in, "--format=gnu", "-cf", filepath.Join(shards, "s0.tar"), "a.txt"},
		{"-C", in, "--format=gnu", "-czf", filepath.Join(shards, "s1.tar.gz"), "b.txt"},
	} {
		if out, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
			t.Fatalf("tar: %v %s", err, out)
		}
	}
	ctx := context.Background()
	job, err := NewJob(ctx, shards, converttest.Dest(t, filepath.Join(root, "unplanned")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	converttest.RunBeforePlan(t, job, filepath.Join(root, "unplanned"))
	for _, quick := range []bool{false, true} {
		p, err := inspect(ctx, Options{src: shards, Options: convert.Options{QuickPlan: quick}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		members := int64(-1)
		for _, c := range p.Source.Counts {
			if c.Name == "members" {
				members = c.N
			}
		}
		note := strings.Contains(strings.Join(p.Source.Details, "; "), "1 compressed shard not read")
		if want := map[bool]int64{false: 2, true: 1}[quick]; members != want || note != quick {
			t.Fatalf("QuickPlan %v: %d members (want %d), note %v in %v", quick, members, want, note, p.Source.Details)
		}
		// The key check says what it read; no sentence contradicts the
		// details (a shard not read is not "decompressed").
		notes := strings.Join(p.Notes, " ")
		want := map[bool]string{
			false: "Key check: every tar header read (gzip shards decompressed to get past payloads, which takes about as long as converting them): 2 keys, no duplicates.",
			true:  "Key check: the tar headers of the 1 shard read (payloads skipped by seeking): 1 key, no duplicates. The keys of the 1 compressed shard not read are checked by the conversion as it reads them.",
		}[quick]
		if !strings.Contains(notes, want) || quick && strings.Contains(notes, "decompressed") {
			t.Fatalf("QuickPlan %v: notes lack %q or say decompressed:\n%s", quick, want, notes)
		}
		res, err := convertShards(ctx, Options{src: shards, dst: converttest.Dest(t, filepath.Join(root, "out"+map[bool]string{false: "0", true: "1"}[quick])), Options: convert.Options{QuickPlan: quick}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Pack.Members != 2 {
			t.Fatalf("QuickPlan %v: converted %d members", quick, res.Pack.Members)
		}
	}
}
