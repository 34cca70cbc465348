package lerobot

// The datasets stored as Lance are the twins of the v3.0 fixture that
// fixtures/lance14/lerobot.py writes at test time with pylance 14.0.3 (the
// layout LeRobot's Lance backend reads and lerobot-lancedb writes; the
// script says how), and their tables are compared with pyarrow by
// fixtures/lance14/lerobot_tables.py.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

var (
	twinMu   sync.Mutex
	twinDir  string
	twinMade = map[string]string{}
)

// lanceTwin returns the Lance-stored twin of the v3.0 fixture that
// lerobot.py writes with args, made once per test process (read only).
func lanceTwin(t *testing.T, args ...string) string {
	t.Helper()
	src := dataset(t, "v3.0")
	twinMu.Lock()
	defer twinMu.Unlock()
	name := strings.Join(args, " ")
	if p, ok := twinMade[name]; ok {
		return p
	}
	if twinDir == "" {
		d, err := os.MkdirTemp("", "bpconvert-lerobot-lance-")
		if err != nil {
			t.Fatal(err)
		}
		twinDir = d
	}
	p := filepath.Join(twinDir, fmt.Sprintf("twin-%d", len(twinMade)))
	testtool.LeRobotLance(t, src, p, args...)
	twinMade[name] = p
	return p
}

// copyLanceTwin copies a twin into a directory the test may change.
func copyLanceTwin(t *testing.T, args ...string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "twin")
	testtool.CopyTree(t, lanceTwin(t, args...), dst)
	return dst
}

func removeTwins() {
	if twinDir != "" {
		os.RemoveAll(twinDir)
	}
}

// convertDataset inspects and converts src with the default options into a
// new directory, returning the inspection and the output.
func convertDataset(t *testing.T, src string) (*Inspection, string) {
	t.Helper()
	ctx := context.Background()
	ins, err := Inspect(ctx, src, Options{Engine: testEngine(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := Convert(ctx, ins, dst, nil); err != nil {
		t.Fatal(err)
	}
	return ins, dst
}

// TestLanceStoredTwin converts the v3.0 fixture and its Lance-stored twin
// (its camera files inline in the data file, as Lance keeps files this
// small, or packed and dedicated into sidecar files, as it keeps larger
// ones) and finds the same output: byte-identical packs and video index,
// meta/ but info.json identical, equal tables read back by pyarrow, and
// every reference resolving to the original camera files' packets.
func TestLanceStoredTwin(t *testing.T) {
	t.Parallel()
	src := dataset(t, "v3.0")
	pqIns, pqDst := convertDataset(t, src)
	if d := pqIns.Plan("x").Source.Details; !slices.Contains(d, "stored as parquet") {
		t.Errorf("plan of the parquet twin: details %q do not name the storage format", d)
	}
	var sizes []int64
	for _, name := range []string{"observation.images.top/chunk-000/file-000.mp4", "observation.images.top/chunk-000/file-001.mp4", "observation.images.wrist/chunk-000/file-000.mp4"} {
		fi, err := os.Stat(filepath.Join(src, "videos", name))
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, fi.Size())
	}
	// Thresholds between the sizes: the smaller files packed into one
	// sidecar, the largest in one of its own.
	inline, dedicated := slices.Min(sizes)-1, slices.Max(sizes)-1
	cases := []struct {
		name  string
		args  []string
		kinds []lancefmt.BlobKind
	}{
		{"inline", nil, []lancefmt.BlobKind{lancefmt.BlobInline}},
		{"sidecars", []string{"--blob-thresholds", fmt.Sprintf("%d,%d", inline, dedicated)}, []lancefmt.BlobKind{lancefmt.BlobPacked, lancefmt.BlobDedicated}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			twin := lanceTwin(t, tc.args...)
			ins, dst := convertDataset(t, twin)
			if ins.Dataset.StorageFormat != StorageLance {
				t.Fatalf("storage format %q", ins.Dataset.StorageFormat)
			}
			var kinds []lancefmt.BlobKind
			for _, v := range ins.Dataset.lance.videos {
				if !slices.Contains(kinds, v.kind) {
					kinds = append(kinds, v.kind)
				}
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, tc.kinds) {
				t.Fatalf("blobs stored %v, the case needs %v", kinds, tc.kinds)
			}
			p := ins.Plan(dst)
			if d := p.Source.Details; !slices.Contains(d, "stored as Lance (frames.lance, videos.lance, meta.lance)") {
				t.Errorf("plan details %q do not name the storage format", d)
			}
			if e := entry(t, p, framesTable); e.Action != plan.ActionRewrite || !hasNote(e, "written as 2 parquet tables") || !hasNote(e, "observation_state -> observation.state") {
				t.Errorf("plan entry %s: %s %q", framesTable, e.Action, e.Notes)
			}
			if e := entry(t, p, metaTable); e.Action != plan.ActionSkip {
				t.Errorf("plan entry %s: %s", metaTable, e.Action)
			}
			for _, key := range []string{top, wrist} {
				want, got := entry(t, pqIns.Plan(dst), key), entry(t, p, key)
				if got.Action != want.Action || !hasNote(got, "read from the video_bytes blobs of videos.lance") {
					t.Errorf("plan entry %s: %s %q; the parquet twin's %s %q", key, got.Action, got.Notes, want.Action, want.Notes)
				}
			}
			if !slices.Equal(ins.Warnings, pqIns.Warnings) {
				t.Errorf("warnings %q, the parquet twin's %q", ins.Warnings, pqIns.Warnings)
			}

			// Everything but the tables and info.json is byte-identical.
			a, b := treeSums(t, pqDst), treeSums(t, dst)
			for rel, sum := range a {
				if strings.HasPrefix(rel, "data/") || rel == "meta/info.json" || rel == ".bpconvert.json" {
					continue
				}
				if b[rel] != sum {
					t.Errorf("%s differs from the parquet twin's output (or is missing)", rel)
				}
			}
			for rel := range b {
				if _, ok := a[rel]; !ok {
					t.Errorf("%s is not in the parquet twin's output", rel)
				}
			}
			if !slices.ContainsFunc(keys(a), func(k string) bool { return strings.HasPrefix(k, "media/pack-") }) {
				t.Fatalf("no packs in %v", keys(a))
			}

			// info.json: the same but storage_format, recorded instead.
			var infoA, infoB map[string]any
			readJSON(t, filepath.Join(pqDst, "meta", "info.json"), &infoA)
			readJSON(t, filepath.Join(dst, "meta", "info.json"), &infoB)
			rec, _ := infoB["bpconvert"].(map[string]any)
			if _, ok := infoB["storage_format"]; ok || rec["source_storage_format"] != "lance" {
				t.Errorf("info.json: storage_format %v, bpconvert %v", infoB["storage_format"], rec)
			}
			delete(rec, "source_storage_format")
			if !equalJSON(infoA, infoB) {
				t.Errorf("info.json differs from the parquet twin's beyond storage_format:\n%v\n%v", infoA, infoB)
			}

			// The tables, read by pyarrow.
			var cmp struct {
				Tables      map[string]struct{ Rows int }
				Differences []string
			}
			out := testtool.Run(t, testtool.Python(t), filepath.Join(testtool.RepoRoot(t), "fixtures", "lance14", "lerobot_tables.py"), pqDst, dst)
			if err := json.Unmarshal([]byte(out), &cmp); err != nil {
				t.Fatalf("lerobot_tables.py: %v\n%s", err, out)
			}
			if len(cmp.Differences) > 0 || len(cmp.Tables) != 2 || cmp.Tables["chunk-000/file-000.parquet"].Rows != 50 || cmp.Tables["chunk-000/file-001.parquet"].Rows != 24 {
				t.Errorf("tables: %+v", cmp)
			}

			// References resolve to the original files' packets.
			set, err := packcore.OpenSet(filepath.Join(dst, "media"), packcore.SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			checkVideos(t, "v3.0", src, dst, set)
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestLanceRefusals feeds malformed Lance-stored datasets to Inspect (and,
// for what only the rows show, Convert): each is refused with a lerobot
// *convert.InputError naming the table, row and reason, and nothing is
// written.
func TestLanceRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		breaks  []string
		change  func(t *testing.T, root string)
		scans   bool // refused once the camera files are read
		convert bool // refused while the tables are written
		wantErr []string
		hint    string
	}{
		{name: "no row for a camera file", breaks: []string{"no-wrist-row"},
			wantErr: []string{"lerobot: videos.lance: ", `no row has video_key "observation.images.wrist", chunk_index 0 and file_index 0`, "episode 0", "videos/observation.images.wrist/chunk-000/file-000.mp4"}},
		{name: "blob size is not file_size", breaks: []string{"file-size"},
			wantErr: []string{`videos.lance: row 0: column "video_bytes": the blob of observation.images.top chunk 0 file 0 is`, "file_size says"}},
		{name: "null blob", breaks: []string{"null-blob"},
			wantErr: []string{`videos.lance: row 0: column "video_bytes": null`}},
		{name: "two rows for one file", breaks: []string{"duplicate-row"},
			wantErr: []string{"videos.lance: row 3: ", "observation.images.wrist chunk 0 file 0 appears twice (rows 2 and 3)"}},
		{name: "truncated blob", breaks: []string{"truncated"}, scans: true,
			wantErr: []string{"videos.lance: ", "row 0: observation.images.top (videos/observation.images.top/chunk-000/file-000.mp4): not a complete MP4 file"},
			hint:    "the blob is not a complete MP4 file"},
		{name: "frames missing", breaks: []string{"short-frames"},
			wantErr: []string{"frames.lance: has 71 rows, but the episodes hold 74 frames"}},
		{name: "row in the wrong episode", breaks: []string{"episode-index"}, scans: true, convert: true,
			wantErr: []string{`frames.lance: row 20: column "episode_index": 5, but the episode metadata puts row 20 in episode 1`}},
		{name: "no frames.lance", change: func(t *testing.T, root string) { removeAll(t, filepath.Join(root, "frames.lance")) },
			wantErr: []string{"frames.lance: is missing from"}, hint: "frames.lance, videos.lance and meta.lance"},
		{name: "no videos.lance", change: func(t *testing.T, root string) { removeAll(t, filepath.Join(root, "videos.lance")) },
			wantErr: []string{"videos.lance: is missing from"}},
		{name: "no manifest", change: func(t *testing.T, root string) { removeAll(t, filepath.Join(root, "videos.lance", "_versions")) },
			wantErr: []string{"videos.lance: lance: "}},
		{name: "no meta/", change: func(t *testing.T, root string) { removeAll(t, filepath.Join(root, "meta")) },
			wantErr: []string{"does not look like a LeRobot dataset (meta/info.json is missing)"}, hint: "keeps meta/ beside frames.lance"},
		{name: "image features", change: func(t *testing.T, root string) {
			editFile(t, filepath.Join(root, "meta", "info.json"), func(s string) string {
				return strings.Replace(s, `"features": {`, `"features": {"observation.image": {"dtype": "image", "shape": [8, 8, 3]}, `, 1)
			})
		}, wantErr: []string{"meta/info.json: image features observation.image in a dataset stored as Lance"}, hint: "--images skip"},
		{name: "stored as Lance but v2.1", change: func(t *testing.T, root string) {
			editFile(t, filepath.Join(root, "meta", "info.json"), func(s string) string {
				return strings.Replace(s, `"v3.0"`, `"v2.1"`, 1)
			})
		}, wantErr: []string{`storage_format "lance" with codebase_version "v2.1"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, b := range tc.breaks {
				args = append(args, "--break", b)
			}
			root := copyLanceTwin(t, args...)
			if tc.change != nil {
				tc.change(t, root)
			}
			before := treeSums(t, filepath.Dir(root))
			ctx := context.Background()
			ins, err := Inspect(ctx, root, Options{Engine: testEngine(t, tc.scans)})
			dst := filepath.Join(t.TempDir(), "out")
			if tc.convert {
				if err != nil {
					t.Fatalf("Inspect: %v", err)
				}
				_, err = Convert(ctx, ins, dst, nil)
				for _, p := range []string{dst, stage.Path(dst)} {
					if _, serr := os.Lstat(p); !errors.Is(serr, os.ErrNotExist) {
						t.Errorf("%s exists after a refused conversion", p)
					}
				}
			}
			var ie *convert.InputError
			if !errors.As(err, &ie) || ie.Source != "lerobot" || !errors.Is(err, convert.ErrInvalidInput) {
				t.Fatalf("error %v; want a lerobot *convert.InputError", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if !strings.Contains(convert.Hint(err), tc.hint) {
				t.Errorf("hint %q lacks %q", convert.Hint(err), tc.hint)
			}
			if after := treeSums(t, filepath.Dir(root)); !mapsEqual(before, after) {
				t.Errorf("the dataset or its directory changed")
			}
		})
	}
}

func removeAll(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}

// TestLanceWarnings: hints the conversion does not use that disagree with
// the bytes, a meta.lance that does not repeat meta/ and rows no episode
// names are reported, and the dataset still converts.
func TestLanceWarnings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		breaks []string
		change func(t *testing.T, root string)
		want   string
	}{
		{name: "moov_offset", breaks: []string{"moov"}, want: "videos.lance: row 0: moov_offset 0 and moov_size"},
		{name: "meta differs", change: func(t *testing.T, root string) {
			editFile(t, filepath.Join(root, "meta", "stats.json"), func(s string) string { return s + "\n" })
		}, want: "meta.lance does not repeat meta/, which is what is converted"},
		{name: "no meta.lance", change: func(t *testing.T, root string) { removeAll(t, filepath.Join(root, "meta.lance")) },
			want: "meta.lance is missing"},
		{name: "a camera file no episode names", breaks: []string{"extra-row"},
			want: "videos.lance: no episode names row 3 (observation.images.wrist chunk 0 file 9); not converted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var args []string
			for _, b := range tc.breaks {
				args = append(args, "--break", b)
			}
			root := copyLanceTwin(t, args...)
			if tc.change != nil {
				tc.change(t, root)
			}
			ins, dst := convertDataset(t, root)
			if !slices.ContainsFunc(ins.Warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
				t.Errorf("warnings %q lack %q", ins.Warnings, tc.want)
			}
			if !slices.ContainsFunc(ins.Plan(dst).Warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
				t.Errorf("the plan does not show the warning %q", tc.want)
			}
		})
	}
}
