package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/internal/testtool/packtest"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// TestLerobotCLI runs convert-lerobot on datasets made by
// fixtures/parquet/lerobot.mjs (ffmpeg CLI videos, DuckDB tables; see that
// file for how), generated once into the test's temporary directory.
func TestLerobotCLI(t *testing.T) {
	t.Parallel()
	root := lerobotFixtureRoot(t)
	t.Run("dry run writes nothing", func(t *testing.T) { testLerobotDryRun(t, root) })
	t.Run("yes converts", func(t *testing.T) { testLerobotYes(t, root) })
	t.Run("no manifest", func(t *testing.T) { testLerobotNoManifest(t, root) })
	t.Run("exit codes", func(t *testing.T) { testLerobotExitCodes(t, root) })
	t.Run("stored as lance", func(t *testing.T) { testLerobotLance(t, root) })
}

// testLerobotLance converts the Lance-stored twin of the v3.0 dataset that
// fixtures/lance14/lerobot.py writes (pylance 14.0.3): the dry run names
// the storage format and writes nothing, the conversion packs what the
// parquet twin's does, and a twin whose blob disagrees with file_size is
// refused with exit 3, naming the table and row.
func testLerobotLance(t *testing.T, root string) {
	twin := filepath.Join(t.TempDir(), "twin")
	testtool.LeRobotLance(t, filepath.Join(root, "v3.0"), twin)
	dst := filepath.Join(t.TempDir(), "out")
	r := bp(t, "convert-lerobot", twin, dst, "--dry-run", "--json")
	if r.code != exitOK {
		t.Fatalf("dry run: exit %d: %s", r.code, r.stderr)
	}
	p, err := plan.ParseJSON(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, r.stdout)
	}
	if p.Source.Version != "v3.0" || !slices.Contains(p.Source.Details, "stored as Lance (frames.lance, videos.lance, meta.lance)") {
		t.Errorf("source %+v", p.Source)
	}
	if exists(dst) || exists(stage.Path(dst)) {
		t.Fatal("--dry-run wrote the destination or a staging directory")
	}
	r = bp(t, "convert-lerobot", twin, dst, "--yes", "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	doc := lastJSON(t, r)
	counts, _ := doc["counts"].(map[string]any)
	if doc["status"] != "ok" || doc["blobs"] != 7.0 || counts["episode_containers"] != 6.0 || counts["index_entries"] != 12.0 || counts["rewritten_tables"] != 2.0 {
		t.Fatalf("summary %v", doc)
	}
	for _, rel := range []string{"data/chunk-000/file-000.parquet", "data/chunk-000/file-001.parquet", "meta/info.json", "video_index.json"} {
		if !exists(filepath.Join(dst, rel)) {
			t.Errorf("%s not written", rel)
		}
	}

	bad := filepath.Join(t.TempDir(), "bad")
	testtool.LeRobotLance(t, filepath.Join(root, "v3.0"), bad, "--break", "file-size")
	bdst := filepath.Join(t.TempDir(), "out")
	r = bp(t, "convert-lerobot", bad, bdst, "--yes")
	if r.code != exitInvalid || !strings.Contains(r.stderr, `bpconvert: error: lerobot: videos.lance: row 0: column "video_bytes": `) || !strings.Contains(r.stderr, "file_size says") {
		t.Errorf("file_size off by one: exit %d: %s", r.code, r.stderr)
	}
	if exists(bdst) || exists(stage.Path(bdst)) {
		t.Errorf("a refused run left %s or its staging directory", bdst)
	}
}

// lerobotFixtures are the datasets fixtures/parquet/lerobot.mjs writes
// (ffmpeg CLI videos, DuckDB tables), once per test process.
var lerobotFixtures = testtool.Generated{Project: "parquet", Script: "lerobot.mjs", Need: []string{"ffmpeg", "ffprobe"}}

func lerobotFixtureRoot(t *testing.T) string { return lerobotFixtures.Dir(t) }

func testLerobotDryRun(t *testing.T, root string) {
	dst := filepath.Join(t.TempDir(), "out")
	r := bp(t, "convert-lerobot", filepath.Join(root, "v3.0"), dst, "--dry-run", "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout is not one line:\n%s", r.stdout)
	}
	p, err := plan.ParseJSON(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, r.stdout)
	}
	if p.Source.Format != "LeRobot" || p.Source.Version != "v3.0" || p.Dest != dst || !slices.Contains(p.Source.Details, "stored as parquet") {
		t.Errorf("source %+v, dest %s", p.Source, p.Dest)
	}
	got := map[string]plan.Action{}
	for _, e := range p.Entries {
		got[e.Name] = e.Action
	}
	want := map[string]plan.Action{
		"observation.images.top":   plan.ActionRewrite, // concatenated episodes: cut
		"observation.images.wrist": plan.ActionCopy,    // one stream: kept whole
		"data/*.parquet":           plan.ActionCopy,
		"meta/":                    plan.ActionCopy,
	}
	for name, a := range want {
		if got[name] != a {
			t.Errorf("entry %s: action %q, want %q (entries %v)", name, got[name], a, got)
		}
	}
	if exists(dst) || exists(stage.Path(dst)) {
		t.Fatal("--dry-run wrote the destination or a staging directory")
	}
}

func testLerobotYes(t *testing.T, root string) {
	dst := filepath.Join(t.TempDir(), "out")
	r := bp(t, "convert-lerobot", filepath.Join(root, "v3.0"), dst, "--yes", "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	doc := lastJSON(t, r)
	counts, _ := doc["counts"].(map[string]any)
	// 6 top episodes cut into containers + 1 whole wrist file; 12 entries.
	if doc["status"] != "ok" || doc["blobs"] != 7.0 || counts["episode_containers"] != 6.0 || counts["index_entries"] != 12.0 {
		t.Fatalf("summary %v", doc)
	}
	set, ix := packtest.LeRobotOutput(t, dst)
	for _, e := range ix.Episodes {
		if _, err := set.Stat(e.Ref); err != nil {
			t.Errorf("episode %d %s: %v", e.EpisodeIndex, e.VideoKey, err)
		}
	}
	for _, p := range []string{"meta/info.json", "data/chunk-000/file-001.parquet"} {
		if !exists(filepath.Join(dst, p)) {
			t.Errorf("%s not written", p)
		}
	}
	if v := bp(t, "verify", filepath.Join(dst, "media")); v.code != exitOK {
		t.Errorf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
}

// testLerobotNoManifest converts with --no-manifest: the packs are written
// without pack.manifest.json, and still verify and resolve every reference
// of video_index.json.
func testLerobotNoManifest(t *testing.T, root string) {
	dst := filepath.Join(t.TempDir(), "out")
	r := bp(t, "convert-lerobot", filepath.Join(root, "v3.0"), dst, "--yes", "--json", "--no-manifest")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if doc := lastJSON(t, r); doc["status"] != "ok" || doc["blobs"] != 7.0 {
		t.Fatalf("summary %v", doc)
	}
	media := filepath.Join(dst, "media")
	if exists(filepath.Join(media, packcore.ManifestName)) {
		t.Fatalf("--no-manifest wrote %s", packcore.ManifestName)
	}
	shards, err := packcore.ListShards(media)
	if err != nil || len(shards) == 0 {
		t.Fatalf("shards %v, %v", shards, err)
	}
	if v := bp(t, "verify", media); v.code != exitOK {
		t.Errorf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
	set, ix := packtest.LeRobotOutput(t, dst)
	for _, e := range ix.Episodes {
		if _, err := set.Stat(e.Ref); err != nil {
			t.Errorf("episode %d %s: %v", e.EpisodeIndex, e.VideoKey, err)
		}
	}
}

func testLerobotExitCodes(t *testing.T, root string) {
	badInfo := filepath.Join(t.TempDir(), "badinfo")
	writeTree(t, badInfo, map[string]string{
		"meta/info.json": `{"codebase_version": "v1.6", "fps": 10, "data_path": "d.parquet", "features": {}}`,
	})
	cases := []struct {
		name     string
		src      string
		args     []string
		wantCode int
		wantErr  string
		wantHint string
	}{
		{name: "overlapping intervals", src: filepath.Join(root, "v3.0-overlap"), args: []string{"--yes"}, wantCode: exitInvalid, wantErr: "overlaps"},
		{name: "missing timing column", src: filepath.Join(root, "v3.0-notiming"), args: []string{"--yes"}, wantCode: exitInvalid, wantErr: "to_timestamp"},
		{name: "unsupported version", src: badInfo, args: []string{"--yes"}, wantCode: exitInvalid, wantErr: "v1.6"},
		{name: "not a dataset", src: filepath.Join(root, "v3.0", "data"), args: []string{"--yes", "--dry-run"}, wantCode: exitInvalid, wantErr: "does not look like a LeRobot dataset"},
		{name: "everything skipped", src: filepath.Join(root, "v3.0"), args: []string{"--yes", "--video", "skip"}, wantCode: exitUsage, wantErr: "nothing to convert", wantHint: "bpconvert: hint: drop --images skip or --video skip"},
		{name: "bad mode", src: filepath.Join(root, "v3.0"), args: []string{"--yes", "--images", "keep"}, wantCode: exitUsage, wantErr: "--images"},
		{name: "no prompt without a terminal", src: filepath.Join(root, "v2.1"), wantCode: exitUsage, wantErr: "refusing to prompt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			r := bp(t, append([]string{"convert-lerobot", tc.src, dst}, tc.args...)...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, tc.wantCode, r.stderr)
			}
			if !strings.Contains(r.stderr, "bpconvert: error: ") || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q does not mention %q", r.stderr, tc.wantErr)
			}
			if !strings.Contains(r.stderr, tc.wantHint) {
				t.Errorf("stderr %q lacks %q", r.stderr, tc.wantHint)
			}
			if exists(dst) || exists(stage.Path(dst)) {
				t.Errorf("destination %s or its staging directory exists after a refused run", dst)
			}
		})
	}
}
