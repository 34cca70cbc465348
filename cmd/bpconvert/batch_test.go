package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// wdsShards writes n WebDataset shards with GNU tar, each holding members
// samples of one .bin of size bytes (random, so no two are alike) and one
// .cls, and returns their paths.
func wdsShards(t *testing.T, dir string, n, members, size int) []string {
	t.Helper()
	testtool.Require(t, "tar")
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	var out []string
	b := make([]byte, size)
	for s := range n {
		in := filepath.Join(dir, fmt.Sprintf("in%d", s))
		for m := range members {
			key := fmt.Sprintf("%06d", s*members+m)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			writeTree(t, in, map[string]string{key + ".bin": string(b), key + ".cls": fmt.Sprint(m % 7)})
		}
		shard := filepath.Join(dir, fmt.Sprintf("shard-%06d.tar", s))
		if out, err := exec.Command("tar", "-C", in, "--sort=name", "--format=gnu", "-cf", shard, ".").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v %s", err, out)
		}
		os.RemoveAll(in)
		out = append(out, shard)
	}
	return out
}

// treeBytes maps every file under root (relative slash path) to its size
// and SHA-256.
func treeBytes(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = fmt.Sprintf("%d bytes, sha256 %x", len(b), sha256.Sum256(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails unless two trees hold the same files with the same bytes.
func sameTree(t *testing.T, got, want string) {
	t.Helper()
	g, w := treeBytes(t, got), treeBytes(t, want)
	for name, b := range w {
		if gb, ok := g[name]; !ok {
			t.Errorf("%s: missing %s", got, name)
		} else if gb != b {
			t.Errorf("%s: %s differs from a clean run's (%s; clean %s)", got, name, gb, b)
		}
	}
	for name := range g {
		if _, ok := w[name]; !ok {
			t.Errorf("%s: extra file %s", got, name)
		}
	}
}

// TestRetryOfFinishedRun is what an Airflow retry of a task that succeeded
// does: the same command again exits 0 with status already_done and writes
// its summary file again; the same DST with another option or a changed
// source is refused with exit 2 naming the difference, and DST is untouched.
func TestRetryOfFinishedRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shards := wdsShards(t, root, 2, 5, 1000)
	dst := filepath.Join(root, "out")
	sum := filepath.Join(root, "summary.json")
	args := append(append([]string{"convert-wds"}, shards...), dst, "--yes", "--json", "--summary-file", sum)
	r := bp(t, args...)
	if r.code != 0 {
		t.Fatalf("first run: %+v", r)
	}
	if doc := lastJSON(t, r); doc["status"] != "ok" {
		t.Fatalf("first run status %v", doc["status"])
	}
	first := treeBytes(t, dst)
	if _, ok := first[".bpconvert.json"]; !ok {
		t.Fatalf("no run record in %s: %v", dst, first)
	}
	os.Remove(sum)

	r = bp(t, args...)
	if r.code != 0 {
		t.Fatalf("retry: exit %d\n%s", r.code, r.stderr)
	}
	doc := lastJSON(t, r)
	if doc["status"] != "already_done" || doc["exit_code"] != float64(0) {
		t.Fatalf("retry: %v", doc)
	}
	b, err := os.ReadFile(sum)
	if err != nil || !strings.Contains(string(b), `"already_done"`) {
		t.Fatalf("retry did not write its summary file: %v %s", err, b)
	}

	// A shell glob gives the shards in another order: still the same run.
	r = bp(t, "convert-wds", shards[1], shards[0], dst, "--yes", "--json")
	if r.code != 0 || lastJSON(t, r)["status"] != "already_done" {
		t.Fatalf("retry with sources reordered: %+v", r)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
		prep func()
	}{
		{"other option", append(append([]string{"convert-wds"}, shards...), dst, "--max-members", "3"), "--max-members", nil},
		{"fewer sources", []string{"convert-wds", shards[0], dst}, "is gone", nil},
		{"other command", []string{"pack", filepath.Join(root, "files"), dst}, "already exists", func() {
			writeTree(t, filepath.Join(root, "files"), map[string]string{"a.txt": "a"})
		}},
		{"changed source", append(append([]string{"convert-wds"}, shards...), dst), shards[1] + " changed", func() {
			later := time.Now().Add(time.Hour)
			os.Chtimes(shards[1], later, later)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prep != nil {
				tc.prep()
			}
			r := bp(t, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want 2 and %q in:\n%s", r.code, tc.want, r.stderr)
			}
			if got := treeBytes(t, dst); len(got) != len(first) {
				t.Fatalf("DST changed: %d files, was %d", len(got), len(first))
			}
		})
	}
}

// TestSummaryFileCheckedFirst: a --summary-file that cannot be written is a
// usage error before any work, so a finished conversion never fails on it.
func TestSummaryFileCheckedFirst(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shards := wdsShards(t, root, 1, 2, 100)
	for _, args := range [][]string{
		{"convert-wds", shards[0], filepath.Join(root, "out"), "--yes", "--json"},
		{"pack", filepath.Dir(shards[0]), filepath.Join(root, "out")},
	} {
		r := bp(t, append(args, "--summary-file", filepath.Join(root, "no", "dir", "s.json"))...)
		if r.code != 2 || !strings.Contains(r.stderr, "--summary-file") {
			t.Fatalf("%s: exit %d, want 2 naming --summary-file:\n%s", args[0], r.code, r.stderr)
		}
		if exists(filepath.Join(root, "out")) || exists(filepath.Join(root, ".out.bpconvert-staging")) {
			t.Fatalf("%s: work was done before the summary file was checked", args[0])
		}
	}
}

// packShards lists the complete pack shards in dir.
func packShards(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "pack-*.zip"))
	return m
}

// waitShards waits up to a minute, looking every millisecond, for n complete
// pack shards in staging's media directory, and says whether they came
// before the run ended (final exists) or the minute passed.
func waitShards(staging string, n int, final string) bool {
	ended := false
	met := testtool.WaitFor(60*time.Second, time.Millisecond, func() bool {
		if len(packShards(filepath.Join(staging, "media"))) >= n {
			return true
		}
		ended = exists(final)
		return ended
	})
	return met && !ended
}

// TestSeveralSources: convert-wds takes the shards a shell glob gives.
func TestSeveralSources(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shards := wdsShards(t, root, 3, 2, 10)
	dst := filepath.Join(root, "out")
	r := bp(t, append(append([]string{"convert-wds"}, shards...), dst, "--yes", "--json")...)
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	var doc struct {
		Blobs int `json:"blobs"`
	}
	json.Unmarshal([]byte(r.stdout), &doc)
	if doc.Blobs != 12 {
		t.Fatalf("packed %d blobs from 3 shards of 2 samples with 2 fields, want 12\n%s", doc.Blobs, r.stdout)
	}
	r = bp(t, "convert-wds", shards[0], "-", filepath.Join(root, "out2"))
	if r.code != 2 {
		t.Fatalf("stdin among several sources: exit %d\n%s", r.code, r.stderr)
	}
}
