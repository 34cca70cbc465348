package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestYesSkipsSecondDecompression: with --yes the plan does not decompress
// compressed shards (it says so), and their keys are still checked while
// converting: a key repeated across two gzip shards stops the run with
// nothing written. --dry-run still reads them and finds it.
func TestYesSkipsSecondDecompression(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "gzip")
	dir := t.TempDir()
	tarPath := wdsShards(t, dir, 1, 20, 64)[0]
	var shards []string
	for _, name := range []string{"a.tar.gz", "b.tar.gz"} { // the same keys twice
		out, err := exec.Command("gzip", "-c", tarPath).Output()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, out, 0o644); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, p)
	}
	dst := filepath.Join(dir, "out")

	r := bp(t, "convert-wds", "--dry-run", shards[0], shards[1], dst)
	if r.code != 3 || strings.Contains(r.stdout+r.stderr, "not read for this plan") || !strings.Contains(r.stderr, "duplicate key") {
		t.Fatalf("--dry-run: exit %d, want 3 with the duplicate found by the plan:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = bp(t, "convert-wds", "--yes", shards[0], shards[1], dst)
	if r.code != 3 || !strings.Contains(r.stdout, "2 compressed shards not read for this plan") || !strings.Contains(r.stderr, "duplicate key") {
		t.Fatalf("--yes: exit %d, want 3 with the plan's note and the duplicate found while converting:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("DST left after a failed run: %v", err)
	}
	// Without duplicates, --yes converts both shards' members.
	r = bp(t, "convert-wds", "--yes", "--json", shards[0], dst)
	if r.code != 0 || !strings.Contains(r.stdout, `"members":40`) {
		t.Fatalf("--yes one shard: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
}
