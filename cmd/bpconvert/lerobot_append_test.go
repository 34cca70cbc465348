package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/convert/lerobot/lerobottest"
	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// growDataset writes (or grows) the LeRobot dataset at dir with
// convert/lerobot/testdata/grow.py (pyarrow tables, ffmpeg CLI videos; the
// script says how), its episodes laid out in files as groups says, each
// episode encoded once into cache so that episodes already present keep
// their packets. args are more flags of the script.
func growDataset(t *testing.T, dir, version, groups, cache string, args ...string) {
	t.Helper()
	testtool.Require(t, "ffmpeg", "ffprobe")
	script := filepath.Join(testtool.RepoRoot(t), "convert", "lerobot", "testdata", "grow.py")
	a := append([]string{script, dir, "--version", version, "--files", groups, "--cache", cache}, args...)
	out, err := exec.Command(testtool.Python(t), a...).CombinedOutput()
	if err != nil {
		t.Fatalf("grow.py %s: %v\n%s", strings.Join(a[1:], " "), err, out)
	}
}

// lerobotAppendRun runs convert-lerobot --append and returns its summary, which
// must say ok with exit 0.
func lerobotAppendRun(t *testing.T, src, dst string, args ...string) map[string]any {
	t.Helper()
	r := bp(t, append([]string{"convert-lerobot", src, dst, "--append", "--yes", "--json"}, args...)...)
	if r.code != exitOK {
		t.Fatalf("convert-lerobot --append: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return lastJSON(t, r)
}

// indexView is what a reader of the index sees of one (episode, camera):
// the member that holds it (references' shard numbers differ between an
// appended output and a single conversion), its interval and frames.
func indexView(t *testing.T, dst string) []string {
	t.Helper()
	set, ix := lerobottest.LeRobotOutput(t, dst)
	var out []string
	for _, e := range ix.Episodes {
		if _, err := set.Stat(e.Ref); err != nil {
			t.Errorf("%s: episode %d %s: %v", dst, e.EpisodeIndex, e.VideoKey, err)
		}
		key, _, err := packcore.ParseRef(e.Ref)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal([]any{e.EpisodeIndex, e.VideoKey, key, e.FromNS, e.ToNS, e.Frames})
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// episodesOf lists the episode indexes of an output's video index, once
// each.
func episodesOf(t *testing.T, dst string) []int64 {
	t.Helper()
	ix, err := videoindex.ReadFile(filepath.Join(dst, videoindex.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var eps []int64
	for _, e := range ix.Episodes {
		if !slices.Contains(eps, e.EpisodeIndex) {
			eps = append(eps, e.EpisodeIndex)
		}
	}
	slices.Sort(eps)
	return eps
}

// sameFilesIn fails t unless the files rels hold the same bytes under a and b.
func sameFilesIn(t *testing.T, a, b string, rels ...string) {
	t.Helper()
	for _, rel := range rels {
		x, err1 := os.ReadFile(filepath.Join(a, rel))
		y, err2 := os.ReadFile(filepath.Join(b, rel))
		if err1 != nil || err2 != nil || string(x) != string(y) {
			t.Errorf("%s differs between the appended output and a single conversion (%v, %v)", rel, err1, err2)
		}
	}
}

// killDuring runs the command args, which writes into dst, and kills it
// with SIGKILL once its staging directory holds a pack shard being written
// or complete, leaving the staging as a crash does (see killWhen).
func killDuring(t *testing.T, args []string, staging string) {
	t.Helper()
	media := filepath.Join(staging, "media")
	killWhen(t, nil, args, "a pack shard", func() bool { return hasTempShard(media) || len(packShards(media)) > 0 })
}

// TestLerobotAppend converts a LeRobot v3.0 dataset with --append into an
// absent destination (everything is converted), then appends to the
// output twice, after LeRobot's two ways of adding episodes: into the last
// files (episode 5 concatenated to file-001 of each camera, its rows
// written into data and episode metadata file-001), then into new files
// (episodes 6 and 7 in file-002). Each append packs only the new episodes'
// containers into new shards, the first commit's shards keep their bytes,
// verify --against the dataset passes, every episode resolves through the
// video index as in one conversion of the grown dataset (same members,
// intervals and frames; the tables and meta/ byte for byte), and a rerun
// is already done.
func TestLerobotAppend(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	src := filepath.Join(t.TempDir(), "ds")
	dst := filepath.Join(t.TempDir(), "out")
	growDataset(t, src, "v3.0", "0,1,2/3,4", cache)
	// The command a schedule runs from the first day: into an absent
	// destination, --append converts everything.
	if doc := lerobotAppendRun(t, src, dst); doc["blobs"] != 10.0 || doc["appended"] != nil {
		t.Fatalf("first run: summary %v", doc)
	}
	first := shardSums(t, filepath.Join(dst, "media"))

	for _, step := range []struct {
		groups        string
		new, held     float64
		blobs, shards float64
	}{
		{"0,1,2/3,4,5", 1, 5, 2, 1},
		{"0,1,2/3,4,5/6,7", 2, 6, 4, 1},
	} {
		growDataset(t, src, "v3.0", step.groups, cache)
		doc := lerobotAppendRun(t, src, dst)
		a, _ := doc["appended"].(map[string]any)
		if doc["status"] != "ok" || a["sources"] != step.new || a["skipped"] != step.held || a["blobs"] != step.blobs || a["shards"] != step.shards {
			t.Fatalf("%s: summary %v, want %v new episodes, %v held, %v blobs in %v new shard", step.groups, doc, step.new, step.held, step.blobs, step.shards)
		}
		sameFiles(t, step.groups+": the first commit's shards", first, shardSums(t, filepath.Join(dst, "media")))
	}
	if eps := episodesOf(t, dst); !slices.Equal(eps, []int64{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("the video index holds episodes %v", eps)
	}
	whole := likeOneConversion(t, src, dst)
	var tables []string
	for rel := range localTree(t, whole) {
		if strings.HasPrefix(rel, "data/") || strings.HasPrefix(rel, "meta/") {
			tables = append(tables, rel)
		}
	}
	if len(tables) < 8 {
		t.Fatalf("one conversion wrote %d files under data/ and meta/", len(tables))
	}
	sameFilesIn(t, dst, whole, tables...)

	r := bp(t, "convert-lerobot", src, dst, "--append", "--yes", "--json")
	if r.code != exitOK || lastJSON(t, r)["status"] != "already_done" {
		t.Fatalf("rerun: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestLerobotAppendChanged: an append to the conversion of a dataset whose
// converted episodes changed is refused before anything is written (exit
// 3), naming the episode or the file: episode 2 moved to another file, or
// a camera file holding only converted episodes rewritten.
func TestLerobotAppendChanged(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, src string)
		words  []string
	}{
		{"episode moved", func(t *testing.T, src string) { growDataset(t, src, "v3.0", "0,1/2,3,4", cache) },
			[]string{"episode 2 changed since it was converted", "data/file_index 0, now 1"}},
		{"camera file rewritten", func(t *testing.T, src string) {
			growDataset(t, src, "v3.0", "0,1,2/3,4", cache)
			p := filepath.Join(src, "videos", "observation.images.wrist", "chunk-000", "file-000.mp4")
			when := time.Now().Add(time.Hour)
			if err := os.Chtimes(p, when, when); err != nil {
				t.Fatal(err)
			}
		}, []string{"videos/observation.images.wrist/chunk-000/file-000.mp4", "it holds episodes 0-2, which the output holds, and changed since they were converted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "ds")
			dst := filepath.Join(t.TempDir(), "out")
			growDataset(t, src, "v3.0", "0,1,2/3", cache)
			if r := bp(t, "convert-lerobot", src, dst, "--yes", "--quiet"); r.code != exitOK {
				t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
			}
			before := localTree(t, dst)
			tc.change(t, src)
			r := bp(t, "convert-lerobot", src, dst, "--append", "--yes")
			if r.code != exitInvalid {
				t.Fatalf("exit %d, want %d: %s", r.code, exitInvalid, r.stderr)
			}
			for _, w := range tc.words {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			sameOutput(t, localTree(t, dst), before)
			if exists(filepath.Join(filepath.Dir(dst), ".out.bpconvert-staging")) {
				t.Error("the refused append left a staging directory")
			}
		})
	}
}

// TestLerobotAppendKilled kills an append (SIGKILL) once it has begun to
// stage a shard; the same command then ends committed: every episode in
// the index, verify --against passes, the first commit's shards keep their
// bytes.
func TestLerobotAppendKilled(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	src := filepath.Join(t.TempDir(), "ds")
	dst := filepath.Join(t.TempDir(), "out")
	growDataset(t, src, "v3.0", "0,1,2/3,4", cache, "--size", "320x240")
	if r := bp(t, "convert-lerobot", src, dst, "--yes", "--quiet", "--max-members", "1"); r.code != exitOK {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}
	first := shardSums(t, filepath.Join(dst, "media"))
	growDataset(t, src, "v3.0", "0,1,2/3,4,5/6,7,8", cache, "--size", "320x240")
	args := []string{"convert-lerobot", src, dst, "--append", "--yes", "--quiet", "--max-members", "1"}
	killDuring(t, args, filepath.Join(filepath.Dir(dst), ".out.bpconvert-staging"))
	if eps := episodesOf(t, dst); !slices.Equal(eps, []int64{0, 1, 2, 3, 4}) {
		t.Fatalf("after the kill the output holds episodes %v", eps)
	}
	if r := bp(t, "verify", dst, "--against", src); r.code != exitOK {
		t.Fatalf("verify after the kill: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	doc := lerobotAppendRun(t, src, dst, "--max-members", "1")
	if a, _ := doc["appended"].(map[string]any); a["sources"] != 4.0 {
		t.Fatalf("the rerun's summary %v", doc)
	}
	if eps := episodesOf(t, dst); !slices.Equal(eps, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("the video index holds episodes %v", eps)
	}
	if r := bp(t, "verify", dst, "--against", src); r.code != exitOK {
		t.Fatalf("verify --against: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sameFiles(t, "the first commit's shards", first, shardSums(t, filepath.Join(dst, "media")))
	indexView(t, dst) // every reference resolves
}

// TestLerobotAppendV2 appends the new episode files of a v2.1 dataset:
// the output then equals one conversion of the grown dataset.
func TestLerobotAppendV2(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	src := filepath.Join(t.TempDir(), "ds")
	dst := filepath.Join(t.TempDir(), "out")
	growDataset(t, src, "v2.1", "0,1,2", cache)
	if r := bp(t, "convert-lerobot", src, dst, "--yes", "--quiet"); r.code != exitOK {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}
	growDataset(t, src, "v2.1", "0,1,2,3,4", cache)
	doc := lerobotAppendRun(t, src, dst)
	if a, _ := doc["appended"].(map[string]any); a["sources"] != 2.0 || a["skipped"] != 3.0 || a["blobs"] != 4.0 {
		t.Fatalf("summary %v", doc)
	}
	whole := likeOneConversion(t, src, dst)
	sameFilesIn(t, dst, whole, "meta/info.json", "meta/episodes.jsonl", "meta/tasks.jsonl", "meta/episodes_stats.jsonl",
		"data/chunk-000/episode_000003.parquet", "data/chunk-000/episode_000004.parquet")
}

// likeOneConversion checks that the appended output dst verifies against
// src and that its video index equals that of one conversion of src, which
// it returns.
func likeOneConversion(t *testing.T, src, dst string) string {
	t.Helper()
	if r := bp(t, "verify", dst, "--against", src); r.code != exitOK {
		t.Fatalf("verify --against: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	if r := bp(t, "convert-lerobot", src, whole, "--yes", "--quiet"); r.code != exitOK {
		t.Fatalf("one conversion: exit %d: %s", r.code, r.stderr)
	}
	if a, b := indexView(t, dst), indexView(t, whole); !slices.Equal(a, b) {
		t.Errorf("video index after appending:\n%s\none conversion:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	return whole
}
