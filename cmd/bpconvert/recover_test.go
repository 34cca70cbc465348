package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPartRecovery walks the ways a split conversion goes wrong under a
// scheduler and checks that each is recovered with the commands the errors
// name, never by deleting by hand: a part fails on a truncated tar, the
// file is restored and that part rerun; finalize then names the parts made
// before the restore, they are rerun with --restart, and the joined output
// matches one undivided run. Rerunning with another N leaves two splits;
// finalize names the command that removes the older one.
func TestPartRecovery(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shards := wdsShards(t, root, 3, 6, 3000)
	whole := filepath.Join(root, "whole")
	flags := []string{"--yes", "--json", "--max-pack-bytes", "20KB"}
	if r := bp(t, append(append(append([]string{"convert-wds"}, shards...), whole), flags...)...); r.code != 0 {
		t.Fatalf("whole run: %+v", r)
	}
	good, err := os.ReadFile(shards[2])
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root, "dst")
	part := func(p string, extra ...string) result {
		return bp(t, append(append(append(append([]string{"convert-wds"}, shards...), dst, "--part", p), flags...), extra...)...)
	}
	// Shard 3 (part 3/3's) is cut short: parts 1 and 2 succeed, part 3
	// fails as invalid input.
	if err := os.WriteFile(shards[2], good[:len(good)/2+100], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"1/3", "2/3"} {
		if r := part(p); r.code != 0 {
			t.Fatalf("part %s: %+v", p, r)
		}
	}
	if r := part("3/3"); r.code != 3 {
		t.Fatalf("part 3/3 on a truncated tar: %+v", r)
	}
	// Restored; the failed part is rerun (as a retry or a cleared task).
	if err := os.WriteFile(shards[2], good, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := part("3/3"); r.code != 0 {
		t.Fatalf("part 3/3 after the restore: %+v", r)
	}
	r := bp(t, "finalize", dst, "--json")
	doc := lastJSON(t, r)
	if r.code != 2 || !strings.Contains(r.stderr, "parts 1/3 and 2/3 were made from sources that have changed since: source file "+shards[2]+" changed") ||
		!strings.Contains(fmt.Sprint(doc["hint"]), "rerun parts 1/3 and 2/3 with the same command plus --restart") {
		t.Fatalf("finalize after the restore: %+v", r)
	}
	// The parts finalize names: a plain rerun says to add --restart.
	if r := part("1/3"); r.code != 2 || !strings.Contains(lastJSON(t, r)["hint"].(string), "add --restart to convert the part again") {
		t.Fatalf("part 1/3 rerun without --restart: %+v", r)
	}
	for _, p := range []string{"1/3", "2/3"} {
		if r := part(p, "--restart"); r.code != 0 || lastJSON(t, r)["status"] != "ok" {
			t.Fatalf("part %s --restart: %+v", p, r)
		}
	}
	if r := bp(t, "finalize", dst, "--json"); r.code != 0 || lastJSON(t, r)["blobs"] != float64(3*6*2) {
		t.Fatalf("finalize: %+v", r)
	}
	sameMembers(t, filepath.Join(dst, "media"), filepath.Join(whole, "media"))
	if r := bp(t, "verify", dst, "--against", strings.Join(shards, "::")); r.code != 0 {
		t.Fatalf("verify --against: %+v", r)
	}

	// A changed N: a 2-part split, then a 3-part one over the same DST.
	dst2 := filepath.Join(root, "resplit")
	split := func(p string) {
		t.Helper()
		if r := bp(t, append(append(append([]string{"convert-wds"}, shards...), dst2, "--part", p), flags...)...); r.code != 0 {
			t.Fatalf("part %s: %+v", p, r)
		}
	}
	split("1/2")
	split("2/2")
	for _, p := range []string{"1/3", "2/3", "3/3"} {
		split(p)
	}
	r = bp(t, "finalize", dst2, "--json")
	hint := fmt.Sprint(lastJSON(t, r)["hint"])
	m := regexp.MustCompile("`(rm -rf [^`]*)`").FindStringSubmatch(hint)
	if r.code != 2 || !strings.Contains(r.stderr, "holds parts of 2 splits (2 of 2 parts, 3 of 3 parts)") || m == nil || !strings.Contains(hint, "all but the 3-part split") {
		t.Fatalf("finalize over two splits: %+v", r)
	}
	if out, err := exec.Command("sh", "-c", m[1]).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", m[1], err, out)
	}
	if r := bp(t, "finalize", dst2, "--json"); r.code != 0 {
		t.Fatalf("finalize after the hint's command: %+v", r)
	}
	sameMembers(t, filepath.Join(dst2, "media"), filepath.Join(whole, "media"))
}

// TestRetrySummaries: a retry that finds its work done, and a run that
// resumes, report the totals of what the destination holds for that run
// (the whole output, a part before finalize, a part after it), not zeros
// or only what the run itself wrote.
func TestRetrySummaries(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shards := wdsShards(t, root, 4, 5, 2000)
	flags := []string{"--yes", "--json", "--max-pack-bytes", "20KB"}
	whole := filepath.Join(root, "whole")
	conv := func(dst string, extra ...string) map[string]any {
		t.Helper()
		r := bp(t, append(append(append(append([]string{"convert-wds"}, shards...), dst), flags...), extra...)...)
		if r.code != 0 {
			t.Fatalf("%+v", r)
		}
		return lastJSON(t, r)
	}
	first := conv(whole)
	figures := func(doc map[string]any) string {
		return fmt.Sprintf("blobs %v bytes %v shards %v", doc["blobs"], doc["bytes"], doc["shards"])
	}
	if again := conv(whole); again["status"] != "already_done" || figures(again) != figures(first) {
		t.Fatalf("already done: %s, first run %s", figures(again), figures(first))
	}
	dst := filepath.Join(root, "split")
	var parts []map[string]any
	for _, p := range []string{"1/2", "2/2"} {
		parts = append(parts, conv(dst, "--part", p))
	}
	if parts[0]["blobs"].(float64)+parts[1]["blobs"].(float64) != first["blobs"] {
		t.Fatalf("parts wrote %v and %v blobs, the whole run %v", parts[0]["blobs"], parts[1]["blobs"], first["blobs"])
	}
	for _, when := range []string{"before finalize", "after finalize"} {
		if when == "after finalize" {
			if r := bp(t, "finalize", dst); r.code != 0 {
				t.Fatalf("finalize: %+v", r)
			}
		}
		for i, p := range []string{"1/2", "2/2"} {
			again := conv(dst, "--part", p)
			if again["status"] != "already_done" || figures(again) != figures(parts[i]) || again["part"] != p {
				t.Fatalf("part %s %s: %s, part %v; its run: %s", p, when, figures(again), again["part"], figures(parts[i]))
			}
		}
	}
}
