package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// TestParquetCLI runs convert-parquet on tables written by DuckDB through
// fixtures/parquet/gen.mjs (see that file for how), generated once into
// the test's temporary directory.
func TestParquetCLI(t *testing.T) {
	t.Parallel()
	root := parquetFixtureRoot(t)
	t.Run("dry run writes nothing", func(t *testing.T) { testParquetDryRun(t, root) })
	t.Run("yes converts", func(t *testing.T) { testParquetYes(t, root) })
	t.Run("exit codes", func(t *testing.T) { testParquetExitCodes(t, root) })
}

// parquetFixtures are the tables fixtures/parquet/gen.mjs writes with
// DuckDB, once per test process.
var parquetFixtures = testtool.Generated{Project: "parquet", Script: "gen.mjs"}

func parquetFixtureRoot(t *testing.T) string { return parquetFixtures.Dir(t) }

// hfDiskFixtures are Hugging Face save_to_disk datasets written with Arrow JS
// (fixtures/parquet/hfdisk.mjs).
var hfDiskFixtures = testtool.Generated{Project: "parquet", Script: "hfdisk.mjs"}

func testParquetDryRun(t *testing.T, root string) {
	dst := filepath.Join(t.TempDir(), "out")
	r := bp(t, "convert-parquet", filepath.Join(root, "hf"), dst, "--dry-run", "--json")
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
	got := map[string]plan.Action{}
	for _, e := range p.Entries {
		if e.Selectable {
			got[e.Name] = e.Action
		}
	}
	for _, name := range []string{"image", "audio", "frames"} {
		if got[name] != plan.ActionExtract {
			t.Errorf("entry %s: action %q, want extract (entries %v)", name, got[name], got)
		}
	}
	if p.Source.Format != "Parquet" || p.Dest != dst {
		t.Errorf("source %+v, dest %s", p.Source, p.Dest)
	}
	if exists(dst) || exists(stage.Path(dst)) {
		t.Fatal("--dry-run wrote the destination or a staging directory")
	}
}

func testParquetYes(t *testing.T, root string) {
	dst := filepath.Join(t.TempDir(), "out")
	r := bp(t, "convert-parquet", filepath.Join(root, "plain"), dst, "--yes", "--json", "--column", "jpg", "--field", "meta.thumb", "--max-pack-bytes", "256KiB")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	doc := lastJSON(t, r)
	blobs, _ := doc["blobs"].(float64)
	shards, _ := doc["shards"].(float64)
	if doc["status"] != "ok" || blobs == 0 || shards < 2 {
		t.Fatalf("summary %v", doc)
	}
	set, err := packcore.OpenSet(filepath.Join(dst, "media"), packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Len() != int(blobs) {
		t.Errorf("packs hold %d members, summary says %v", set.Len(), blobs)
	}
	if !exists(filepath.Join(dst, "part-00000.parquet")) {
		t.Error("table not written")
	}
	if v := bp(t, "verify", filepath.Join(dst, "media")); v.code != exitOK {
		t.Errorf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
}

func testParquetExitCodes(t *testing.T, root string) {
	cases := []struct {
		name     string
		src      string
		dst      string // relative to the fixture root; default a new temp dir
		args     []string
		wantCode int
		wantErr  string
		wantHint string
	}{
		{name: "not parquet", src: "bad/notparquet.parquet", args: []string{"--yes"}, wantCode: exitInvalid, wantErr: "not a readable parquet file"},
		{name: "truncated footer", src: "bad/truncated.parquet", args: []string{"--yes", "--dry-run"}, wantCode: exitInvalid, wantErr: "truncated.parquet"},
		{name: "column not binary", src: "plain", args: []string{"--yes", "--column", "txt"}, wantCode: exitInvalid, wantErr: "expected a binary field"},
		{name: "path escapes root", src: "escape", args: []string{"--yes"}, wantCode: exitInvalid, wantErr: `row 0: column "image"`},
		{name: "no selection without metadata", src: "plain", args: []string{"--yes"}, wantCode: exitUsage, wantErr: "no payload columns selected", wantHint: "--column NAME"},
		{name: "unknown column", src: "plain", args: []string{"--yes", "--column", "nope"}, wantCode: exitUsage, wantHint: "--dry-run"},
		{name: "no prompt without a terminal", src: "hf", wantCode: exitUsage, wantErr: "refusing to prompt"},
		{name: "destination inside source", src: "hf", dst: "hf/converted", args: []string{"--yes"}, wantCode: exitUsage, wantErr: "disjoint"},
		{name: "reference base that no reference can carry", src: "hf", args: []string{"--yes", "--ref-base", "s3://b/x::y"}, wantCode: exitUsage, wantErr: "-ref-base"},
		{name: "destination exists", src: "hf", dst: "plain", args: []string{"--yes"}, wantCode: exitUsage, wantHint: "new destination"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			if tc.dst != "" {
				dst = filepath.Join(root, tc.dst)
			}
			existed := exists(dst)
			args := append([]string{"convert-parquet", filepath.Join(root, tc.src), dst}, tc.args...)
			r := bp(t, args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, tc.wantCode, r.stderr)
			}
			if !strings.Contains(r.stderr, "bpconvert: error: ") || !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q does not mention %q", r.stderr, tc.wantErr)
			}
			if tc.wantHint != "" && (!strings.Contains(r.stderr, "bpconvert: hint: ") || !strings.Contains(r.stderr, tc.wantHint)) {
				t.Errorf("stderr %q has no hint mentioning %q", r.stderr, tc.wantHint)
			}
			if !existed && exists(dst) {
				t.Errorf("destination %s exists after a failed run", dst)
			}
			if exists(stage.Path(dst)) {
				t.Errorf("staging directory left behind")
			}
		})
	}
}
