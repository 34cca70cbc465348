package lerobot

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// testEpisode is a v3.0 episode of n frames starting at row from, in
// camera "top"'s file f at [a, b) seconds.
func testEpisode(i, from, n, f int64, a, b float64) Episode {
	return Episode{Index: i, Length: n, DataChunk: 0, DataFile: f, From: from, To: from + n,
		Videos: map[string]EpisodeVideo{"top": {Chunk: 0, File: f, From: a, To: b, HasFrom: true, HasTo: true}}}
}

func TestSelectEpisodes(t *testing.T) {
	keys := []string{"top"}
	e0 := testEpisode(0, 0, 12, 0, 0, 1.2)
	e1 := testEpisode(1, 12, 15, 0, 1.2, 2.7)
	e2 := testEpisode(2, 27, 9, 0, 2.7, 3.6)  // appended to file 0
	e2new := testEpisode(2, 27, 9, 1, 0, 0.9) // in a new file
	e3 := testEpisode(3, 36, 10, 1, 0.9, 1.9) // after e2new
	e1longer := testEpisode(1, 12, 16, 0, 1.2, 2.8)
	e1moved := e1
	e1moved.Videos = map[string]EpisodeVideo{"top": {Chunk: 0, File: 0, From: 1.25, To: 2.7, HasFrom: true, HasTo: true}}
	tests := []struct {
		name               string
		committed, current []Episode
		fresh              []int64
		err                string // a *convert.InputError naming this, when set
	}{
		{"nothing new", []Episode{e0, e1}, []Episode{e0, e1}, nil, ""},
		{"appended to the last file", []Episode{e0, e1}, []Episode{e0, e1, e2}, []int64{2}, ""},
		{"new files", []Episode{e0, e1}, []Episode{e0, e1, e2new, e3}, []int64{2, 3}, ""},
		{"first append", nil, []Episode{e0, e1}, []int64{0, 1}, ""},
		{"committed episode longer", []Episode{e0, e1}, []Episode{e0, e1longer, e2}, nil, "episode 1 changed since it was converted (length 15, now 16; dataset_to_index 27, now 28; videos/top/to_timestamp 2.7, now 2.8)"},
		{"committed episode moved", []Episode{e0, e1}, []Episode{e0, e1moved, e2}, nil, "episode 1 changed since it was converted (videos/top/from_timestamp 1.2, now 1.25)"},
		{"committed episode gone", []Episode{e0, e1}, []Episode{e0, e2}, nil, "episode 1, which the output holds, is no longer in the source's episode metadata"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fresh, err := selectEpisodes(tc.committed, tc.current, keys)
			if tc.err != "" {
				var ie *convert.InputError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v (%T), want an input error saying %q", err, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, e := range fresh {
				got = append(got, e.Index)
			}
			if !slices.Equal(got, tc.fresh) {
				t.Fatalf("new episodes %v, want %v", got, tc.fresh)
			}
		})
	}
	// The committed output must number its episodes 0 to n-1.
	if _, err := selectEpisodes([]Episode{e1}, []Episode{e0, e1}, keys); err == nil || !strings.Contains(err.Error(), "holds episode 1 where episode 0 was expected") {
		t.Fatalf("committed episodes not from 0: %v", err)
	}
}

func TestMergeIndex(t *testing.T) {
	src := videoindex.Source{CodebaseVersion: "v3.0", FPS: 10, VideoKeys: []string{"top", "wrist"}}
	old := videoindex.New(src, []videoindex.Entry{
		{EpisodeIndex: 0, VideoKey: "top", Ref: "zip://a::media/pack-0000.zip", FromNS: 0, ToNS: 1e9, Frames: 10},
		{EpisodeIndex: 1, VideoKey: "top", Ref: "zip://b::media/pack-0000.zip", FromNS: 0, ToNS: 1e9, Frames: 10},
	})
	fresh := []videoindex.Entry{{EpisodeIndex: 2, VideoKey: "top", Ref: "zip://c::media/pack-0001.zip", FromNS: 0, ToNS: 1e9, Frames: 10}}
	all, err := mergeIndex(old, src, fresh, 2)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, e := range all {
		refs = append(refs, e.Ref)
	}
	if want := []string{"zip://a::media/pack-0000.zip", "zip://b::media/pack-0000.zip", "zip://c::media/pack-0001.zip"}; !slices.Equal(refs, want) {
		t.Fatalf("refs %v, want %v", refs, want)
	}
	// Another frame rate or camera set is another source.
	other := src
	other.FPS = 30
	var ie *convert.InputError
	if _, err := mergeIndex(old, other, fresh, 2); !errors.As(err, &ie) || !strings.Contains(err.Error(), "converted from codebase v3.0 at 10 fps") {
		t.Fatalf("other fps: %v", err)
	}
	// An entry of an episode the metadata does not hold: not our output.
	if _, err := mergeIndex(old, src, fresh, 1); err == nil || !strings.Contains(err.Error(), "has an entry for episode 1") {
		t.Fatalf("entry past the committed episodes: %v", err)
	}
}

func TestDataFiles(t *testing.T) {
	v3 := &Dataset{Version: "v3.0", DataPath: "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", ChunksSize: 1000}
	got, err := v3.dataFiles([]Episode{testEpisode(4, 0, 1, 1, 0, 1), testEpisode(5, 1, 1, 1, 1, 2), testEpisode(6, 2, 1, 2, 0, 1)})
	if want := []string{"data/chunk-000/file-001.parquet", "data/chunk-000/file-002.parquet"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("v3.0: %v %v, want %v", got, err, want)
	}
	v2 := &Dataset{Version: "v2.1", DataPath: "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet", ChunksSize: 2}
	got, err = v2.dataFiles([]Episode{{Index: 1}, {Index: 2}})
	if want := []string{"data/chunk-000/episode_000001.parquet", "data/chunk-001/episode_000002.parquet"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("v2.1: %v %v, want %v", got, err, want)
	}
	if _, err := v3.dataFiles([]Episode{{Index: 3, DataChunk: -1, DataFile: -1}}); err == nil || !strings.Contains(err.Error(), "episode 3: the episode metadata does not say which data file holds it") {
		t.Fatalf("unlocated episode: %v", err)
	}
}

func TestCheckCommittedFiles(t *testing.T) {
	a := &appendState{}
	a.holds("videos/top/file-000.mp4", 0)
	a.holds("videos/top/file-000.mp4", 1)
	a.holds("videos/top/file-001.mp4", 2)
	a.holds("data/file-000.parquet", 0)
	file := func(rel string, size int64, mtime string) convert.SourceFile {
		return convert.SourceFile{Path: "/ds/" + rel, Size: size, ModTime: mtime}
	}
	was := []convert.SourceFile{file("videos/top/file-000.mp4", 100, "t0"), file("videos/top/file-001.mp4", 50, "t0"), file("data/file-000.parquet", 10, "t0")}
	fresh := map[string]bool{"videos/top/file-001.mp4": true} // grew: episode 3 added
	tests := []struct {
		name string
		now  []convert.SourceFile
		err  string
	}{
		{"unchanged, one grown", []convert.SourceFile{file("videos/top/file-000.mp4", 100, "t0"), file("videos/top/file-001.mp4", 80, "t1"), file("data/file-000.parquet", 10, "t0")}, ""},
		{"rewritten", []convert.SourceFile{file("videos/top/file-000.mp4", 100, "t1"), file("videos/top/file-001.mp4", 80, "t1"), file("data/file-000.parquet", 10, "t0")},
			"videos/top/file-000.mp4: it holds episodes 0-1, which the output holds, and changed since they were converted (100 bytes at t0, now 100 bytes at t1)"},
		{"gone", []convert.SourceFile{file("videos/top/file-000.mp4", 100, "t0"), file("videos/top/file-001.mp4", 80, "t1")},
			"data/file-000.parquet: it held episode 0, which the output holds, and is gone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := a.checkCommittedFiles("/ds", was, tc.now, fresh)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *convert.InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want an input error saying %q", err, tc.err)
			}
		})
	}
}

// growDataset writes (or grows) the LeRobot dataset at dir with
// testdata/grow.py (pyarrow tables, ffmpeg CLI videos; the script says
// how), its episodes laid out in files as groups says, each episode
// encoded once into cache so that episodes already present keep their
// packets.
func growDataset(t *testing.T, dir, version, groups, cache string, args ...string) {
	t.Helper()
	testtool.Require(t, "ffmpeg", "ffprobe")
	a := append([]string{filepath.Join("testdata", "grow.py"), dir, "--version", version, "--files", groups, "--cache", cache}, args...)
	out, err := exec.Command(testtool.Python(t), a...).CombinedOutput()
	if err != nil {
		t.Fatalf("grow.py %s: %v\n%s", strings.Join(a[1:], " "), err, out)
	}
}

// indexView is what a reader of a video index sees of each (episode,
// camera): the member holding it (references' shard numbers differ between
// an appended output and a single conversion), its interval and frames.
func indexView(t *testing.T, dst string) []string {
	t.Helper()
	ix, err := videoindex.ReadFile(filepath.Join(dst, videoindex.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ix.Episodes {
		key, _, err := packcore.ParseRef(e.Ref)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s %s [%d, %d) %d", e.EpisodeIndex, e.VideoKey, key, e.FromNS, e.ToNS, e.Frames))
	}
	slices.Sort(out)
	return out
}

// framesView reads a frames table (arrow-go, checked against DuckDB by
// the frames tests) as rows of index, episode, frame and per camera the
// member and pts of the cell.
func framesView(t *testing.T, dst string) []string {
	t.Helper()
	cells := map[cellKey]frameCell{}
	keys, eps, err := readFrames(context.Background(), memory.DefaultAllocator, filepath.Join(dst, FramesFile), func(ref string) (string, error) {
		key, _, err := packcore.ParseRef(ref)
		return key, err
	}, cells)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, e := range eps {
		for k := int64(0); k < e.length; k++ {
			row := fmt.Sprintf("%d %d %d", e.first+k, e.episode, k)
			for _, key := range keys {
				c := cells[cellKey{e.episode, key}]
				if k < int64(len(c.pts)) {
					row += fmt.Sprintf(" %s@%d", c.ref, c.pts[k])
				} else {
					row += " null"
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// TestAppendCommits converts a v3.0 dataset, grows it the two ways LeRobot
// grows one (new episodes in the last files, then in new files) and
// appends each growth to the output through convert.Base. Each append
// adds a shard of the new episodes' containers only and replaces or adds
// exactly the data files holding new episodes, the meta/ files that
// changed, the video index and the frames table (and the manifest and
// record); no other file of the output changes. The index and frames table
// then equal those of one conversion of the grown dataset, and so do the
// tables and meta/ files.
func TestAppendCommits(t *testing.T) {
	engine := testEngine(t, true)
	ctx := context.Background()
	cache := t.TempDir()
	src := filepath.Join(t.TempDir(), "ds")
	growDataset(t, src, "v3.0", "0,1,2/3,4", cache)
	record := func() *convert.Record {
		t.Helper()
		files, err := convert.IdentifyPaths(ctx, []string{src})
		if err != nil {
			t.Fatal(err)
		}
		return &convert.Record{Tool: "bpconvert", Command: "convert-lerobot", Options: map[string]string{}, Sources: files}
	}
	convertAll := func(dst string) {
		t.Helper()
		opts := Options{Engine: engine}
		opts.Record = record()
		ins, err := Inspect(ctx, src, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Convert(ctx, ins, converttest.Dest(t, dst), nil); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	convertAll(out)

	for _, step := range []struct {
		groups  string
		members []string
		changed []string
	}{
		{"0,1,2/3,4,5", []string{
			"videos/observation.images.top/chunk-000/file-001/episode_000005.mp4",
			"videos/observation.images.wrist/chunk-000/file-001/episode_000005.mp4"},
			[]string{"data/chunk-000/file-001.parquet", "media/pack-0001.zip",
				"meta/episodes/chunk-000/file-001.parquet", "meta/info.json", "meta/stats.json", "meta/tasks.parquet"}},
		{"0,1,2/3,4,5/6,7", []string{
			"videos/observation.images.top/chunk-000/file-002/episode_000006.mp4",
			"videos/observation.images.top/chunk-000/file-002/episode_000007.mp4",
			"videos/observation.images.wrist/chunk-000/file-002/episode_000006.mp4",
			"videos/observation.images.wrist/chunk-000/file-002/episode_000007.mp4"},
			[]string{"data/chunk-000/file-002.parquet", "media/pack-0002.zip",
				"meta/episodes/chunk-000/file-002.parquet", "meta/info.json", "meta/stats.json"}},
	} {
		t.Run(step.groups, func(t *testing.T) {
			growDataset(t, src, "v3.0", step.groups, cache)
			before := treeSums(t, out)
			rec := record()
			base, err := convert.Target{Dest: converttest.Dest(t, out), Record: rec, Append: true}.ReadBase(ctx, "")
			if err != nil || base == nil {
				t.Fatalf("base %v, %v", base, err)
			}
			base.Extend(rec) // as the CLI does: the record lists every commit
			opts := Options{Engine: engine}
			opts.Record, opts.Append, opts.Base = rec, true, base
			ins, err := Inspect(ctx, src, opts)
			if err != nil {
				t.Fatal(err)
			}
			p := ins.Plan(out)
			if a := p.Append; a == nil || a.Unit != "episodes" || a.New != len(step.members)/2 || a.BaseShards != len(base.Shards) {
				t.Errorf("plan's append %+v", a)
			}
			grown := strings.Contains(planString(t, p), "1 file(s) grew since the output was converted")
			if want := step.groups == "0,1,2/3,4,5"; grown != want {
				t.Errorf("the plan says the files grew: %v, want %v", grown, want)
			}
			if _, err := Convert(ctx, ins, converttest.Dest(t, out), nil); err != nil {
				t.Fatal(err)
			}
			after := treeSums(t, out)
			var changed []string
			for rel, sum := range after {
				if before[rel] != sum && rel != convert.RecordName && rel != "media/"+packcore.ManifestName && rel != FramesFile && rel != videoindex.FileName {
					changed = append(changed, rel)
				}
			}
			slices.Sort(changed)
			if !slices.Equal(changed, step.changed) {
				t.Errorf("the append changed %v, want %v", changed, step.changed)
			}
			set, err := packcore.OpenSet(filepath.Join(out, "media"), packcore.SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for m := range set.Members() {
				if path.Base(m.Shard) == path.Base(step.changed[1]) {
					keys = append(keys, m.Key)
				}
			}
			set.Close()
			slices.Sort(keys)
			if !slices.Equal(keys, step.members) {
				t.Errorf("the new shard holds %v, want the new episodes' containers %v", keys, step.members)
			}

			whole := filepath.Join(t.TempDir(), "whole")
			convertAll(whole)
			if a, b := indexView(t, out), indexView(t, whole); !slices.Equal(a, b) {
				t.Errorf("video index after the append:\n%s\none conversion:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
			}
			if a, b := framesView(t, out), framesView(t, whole); !slices.Equal(a, b) {
				t.Errorf("frames table after the append (%d rows) differs from one conversion's (%d rows)", len(a), len(b))
			}
			ws := treeSums(t, whole)
			for rel, sum := range ws {
				if (strings.HasPrefix(rel, "data/") || strings.HasPrefix(rel, "meta/")) && after[rel] != sum {
					t.Errorf("%s differs from one conversion's", rel)
				}
			}
		})
	}
}
