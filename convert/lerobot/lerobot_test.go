package lerobot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/convert/lerobot/lerobottest"
	"github.com/bpconvert/bpconvert/internal/testtool"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// fixLengths are the generator's episode lengths (lerobot.mjs LENGTHS) at
// fixFPS frames per second.
var fixLengths = []int64{12, 15, 9, 14, 11, 13}

const fixFPS = 10

const (
	top   = "observation.images.top"
	wrist = "observation.images.wrist"
)

func TestFormatTemplate(t *testing.T) {
	t.Parallel()
	v2 := map[string]any{"episode_chunk": int64(0), "episode_index": int64(42), "video_key": "observation.images.top"}
	cases := []struct {
		tmpl    string
		vals    map[string]any
		want    string
		wantErr string
	}{
		{"data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet", v2, "data/chunk-000/episode_000042.parquet", ""},
		{"videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4", v2, "videos/chunk-000/observation.images.top/episode_000042.mp4", ""},
		{"videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
			map[string]any{"video_key": "cam", "chunk_index": int64(1), "file_index": int64(1234)}, "videos/cam/chunk-001/file-1234.mp4", ""},
		{"e/{episode_index}/{episode_index:d}/{episode_index:4d}/{{x}}.p", v2, "e/42/42/  42/{x}.p", ""},
		{"e/{episode_index:>6d}.p", v2, "", "unsupported format spec"},
		{"e/{episode_index:06x}.p", v2, "", "unsupported format spec"},
		{"e/{video_key:>10}.p", v2, "", "unsupported format spec"},
		{"e/{chunk_index}.p", v2, "", "unknown field {chunk_index}"},
		{"e/{episode_index.p", v2, "", "unclosed"},
		{"e/episode_index}.p", v2, "", "single '}'"},
		{"../{episode_index}.p", v2, "", "not a clean path"},
		{"/abs/{episode_index}.p", v2, "", "not a clean path"},
		{"a//{episode_index}.p", v2, "", "not a clean path"},
		{"e/{video_key}.p", map[string]any{"video_key": "../x"}, "", "not a clean path"},
		{"e/{episode_index}.p", map[string]any{"episode_index": int64(-1)}, "", "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.tmpl, func(t *testing.T) {
			got, err := formatTemplate(tc.tmpl, tc.vals)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("formatTemplate = %q, %v; want an error mentioning %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("formatTemplate = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// entryNotes returns the plan entry named name, failing t when absent.
func entry(t *testing.T, p plan.Plan, name string) plan.Entry {
	t.Helper()
	for _, e := range p.Entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("plan has no entry %q", name)
	return plan.Entry{}
}

func hasNote(e plan.Entry, sub string) bool {
	return slices.ContainsFunc(e.Notes, func(n string) bool { return strings.Contains(n, sub) })
}

// TestConvertVersions converts every generated dataset and checks the
// output against the source with independent readers.
func TestConvertVersions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// actions by plan entry
		actions map[string]plan.Action
		notes   map[string]string
	}{
		{"v2.0", map[string]plan.Action{top: plan.ActionCopy, wrist: plan.ActionCopy, "data/*.parquet": plan.ActionCopy, "meta/": plan.ActionCopy},
			map[string]string{top: noteV2Copy, wrist: "checked: 6/6 episode starts land on keyframes"}},
		{"v2.1", map[string]plan.Action{top: plan.ActionCopy, wrist: plan.ActionCopy, "data/*.parquet": plan.ActionCopy},
			map[string]string{top: noteV2Copy}},
		{"v2.1-images", map[string]plan.Action{"observation.image": plan.ActionExtract, "observation.images.side": plan.ActionExtract, "data/*.parquet": plan.ActionRewrite},
			map[string]string{"data/*.parquet": "1 other file under data/ copied unchanged"}},
		{"v3.0", map[string]plan.Action{top: plan.ActionRewrite, wrist: plan.ActionCopy, "data/*.parquet": plan.ActionCopy},
			map[string]string{top: "checked: 12/12 episode boundaries land on keyframes", wrist: noteReencode}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := dataset(t, tc.name)
			ctx := context.Background()
			ins, err := Inspect(ctx, src, Options{Engine: testEngine(t, tc.name != "v2.1-images")})
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "out")
			p := ins.Plan(dst)
			for name, want := range tc.actions {
				if got := entry(t, p, name).Action; got != want {
					t.Errorf("plan entry %s: action %q, want %q", name, got, want)
				}
			}
			for name, want := range tc.notes {
				if e := entry(t, p, name); !hasNote(e, want) {
					t.Errorf("plan entry %s: notes %q lack %q", name, e.Notes, want)
				}
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("planning created %s", dst)
			}
			res, err := Convert(ctx, ins, converttest.Dest(t, dst), nil)
			if err != nil {
				t.Fatal(err)
			}
			if s := res.Summary; s.Format != "LeRobot" || s.Source != ins.Dataset.Root || s.Dest != dst ||
				s.Blobs != res.Pack.Members || s.Bytes != res.Pack.Bytes || s.Shards != int64(res.Pack.Shards) {
				t.Errorf("summary %+v does not match the result %+v", s, res)
			}
			if _, err := os.Stat(stage.Path(dst)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("staging directory left behind: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dst, cutDir)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cut directory left in the output: %v", err)
			}
			set, err := packcore.OpenSet(filepath.Join(dst, "media"), packcore.SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			if int64(set.Len()) != res.Pack.Members {
				t.Errorf("packs hold %d members, result says %d", set.Len(), res.Pack.Members)
			}
			// meta/ is copied, but info.json says where packed videos went.
			want := treeSums(t, filepath.Join(src, "meta"))
			if res.Videos > 0 {
				info, err := os.ReadFile(filepath.Join(src, "meta", "info.json"))
				if err != nil {
					t.Fatal(err)
				}
				conv, err := rewriteVideoPath(info, "media", StorageParquet)
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(conv)
				want["info.json"] = hex.EncodeToString(sum[:])
			}
			if got := treeSums(t, filepath.Join(dst, "meta")); !mapsEqual(got, want) {
				t.Errorf("meta/ differs from the source:\n got %v\nwant %v", got, want)
			}
			switch tc.name {
			case "v2.1-images":
				checkImages(t, src, dst, set)
				if _, err := os.Stat(filepath.Join(dst, videoindex.FileName)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("video_index.json written for a dataset without video: %v", err)
				}
			default:
				if got, want := treeSums(t, filepath.Join(dst, "data")), treeSums(t, filepath.Join(src, "data")); !mapsEqual(got, want) {
					t.Errorf("data/ differs from the source:\n got %v\nwant %v", got, want)
				}
				checkVideos(t, tc.name, src, dst, set)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// episodeSpans reads a v3.0 dataset's from/to timestamps per episode and
// camera with DuckDB.
func episodeSpans(t *testing.T, src string) map[string][2]float64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(src, "meta", "episodes", "chunk-000", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("episode metadata: %v %v", files, err)
	}
	out := map[string][2]float64{}
	for _, d := range dump(t, files...) {
		ep := d.col(t, "episode_index")
		for _, key := range []string{top, wrist} {
			from, to := d.col(t, "videos/"+key+"/from_timestamp"), d.col(t, "videos/"+key+"/to_timestamp")
			for _, r := range d.Rows {
				f, _ := strconv.ParseFloat(r[from].(string), 64)
				g, _ := strconv.ParseFloat(r[to].(string), 64)
				out[fmt.Sprintf("%s/%s", r[ep], key)] = [2]float64{f, g}
			}
		}
	}
	return out
}

// checkVideos checks video_index.json and every packed video.
func checkVideos(t *testing.T, version, src, dst string, set *packcore.Set) {
	ix, err := videoindex.ReadFile(filepath.Join(dst, videoindex.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if ix.Source.CodebaseVersion != version || float64(ix.Source.FPS) != fixFPS || strings.Join(ix.Source.VideoKeys, ",") != top+","+wrist {
		t.Errorf("index source %+v", ix.Source)
	}
	if len(ix.Episodes) != 2*len(fixLengths) {
		t.Fatalf("index has %d entries, want %d", len(ix.Episodes), 2*len(fixLengths))
	}
	var spans map[string][2]float64
	if version == "v3.0" {
		spans = episodeSpans(t, src)
	}
	var start int64
	wantMembers := map[string]bool{}
	for i, e := range ix.Episodes {
		ep := int64(i / 2)
		key := []string{top, wrist}[i%2]
		if e.EpisodeIndex != ep || e.VideoKey != key || e.Frames != fixLengths[ep] {
			t.Errorf("entry %d: episode %d %s frames %d; want episode %d %s frames %d", i, e.EpisodeIndex, e.VideoKey, e.Frames, ep, key, fixLengths[ep])
		}
		member, _, err := packcore.ParseRef(e.Ref)
		if err != nil {
			t.Fatal(err)
		}
		blob, err := set.Read(e.Ref)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		wantMembers[member] = true
		lengthNS := fixLengths[ep] * 1e9 / fixFPS
		switch {
		case version != "v3.0":
			rel := fmt.Sprintf("videos/chunk-000/%s/episode_%06d.mp4", key, ep)
			if member != rel || sha(blob) != fileSHA(t, filepath.Join(src, rel)) {
				t.Errorf("entry %d: member %s (want %s) or its bytes differ from the source", i, member, rel)
			}
			if e.FromNS != 0 || e.ToNS != lengthNS {
				t.Errorf("entry %d: [%d, %d), want [0, %d)", i, e.FromNS, e.ToNS, lengthNS)
			}
		case key == wrist: // one stream, boundaries off keyframes: kept whole
			rel := "videos/" + wrist + "/chunk-000/file-000.mp4"
			if member != rel || sha(blob) != fileSHA(t, filepath.Join(src, rel)) {
				t.Errorf("entry %d: member %s (want %s) or its bytes differ from the source", i, member, rel)
			}
			if e.FromNS != start*1e8 || e.ToNS != (start+fixLengths[ep])*1e8 {
				t.Errorf("entry %d: [%d, %d), want [%d, %d)", i, e.FromNS, e.ToNS, start*1e8, (start+fixLengths[ep])*1e8)
			}
		default: // concatenated h264 with B-frames: cut per episode
			file := 0
			if ep >= 3 {
				file = 1
			}
			rel := fmt.Sprintf("videos/%s/chunk-000/file-%03d.mp4", top, file)
			if want := fmt.Sprintf("videos/%s/chunk-000/file-%03d/episode_%06d.mp4", top, file, ep); member != want {
				t.Errorf("entry %d: member %s, want %s", i, member, want)
			}
			span := spans[fmt.Sprintf("%d/%s", ep, top)]
			if e.FromNS != 0 || math.Abs(float64(e.ToNS)-(span[1]-span[0])*1e9) > 1e6 {
				t.Errorf("entry %d: [%d, %d), want [0, %.0f) within 1 ms", i, e.FromNS, e.ToNS, (span[1]-span[0])*1e9)
			}
			verifyCut(t, filepath.Join(src, rel), blob, span, fixLengths[ep])
		}
		if key == wrist {
			start += fixLengths[ep]
		}
	}
	if set.Len() != len(wantMembers) {
		t.Errorf("packs hold %d members, the index names %d", set.Len(), len(wantMembers))
	}
}

// verifyCut checks an episode container against its source with ffprobe:
// the source packets presented in [from, to) seconds equal the container's
// packets in count, size, flags and SHA-256, with PTS and DTS shifted by the
// first one's PTS; the container starts at PTS 0 and decodes.
func verifyCut(t *testing.T, src string, blob []byte, span [2]float64, frames int64) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "episode.mp4")
	if err := os.WriteFile(out, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	num, den := ffprobeTimeBase(t, src)
	const tol = 1e-3
	var want []testtool.Packet
	for _, p := range testtool.FFprobePackets(t, src) {
		if s := float64(p.PTS) * float64(num) / float64(den); s >= span[0]-tol && s < span[1]-tol {
			want = append(want, p)
		}
	}
	got := testtool.FFprobePackets(t, out)
	if len(got) != len(want) || int64(len(got)) != frames {
		t.Fatalf("%s [%g, %g): container has %d packets, source interval %d, episode %d frames", src, span[0], span[1], len(got), len(want), frames)
	}
	offset := want[0].PTS
	minPTS := got[0].PTS
	for i := range want {
		w, g := want[i], got[i]
		if g.Size != w.Size || g.Hash != w.Hash || g.Flags != w.Flags {
			t.Fatalf("%s [%g, %g) packet %d: size %d/%d flags %s/%s hash %s/%s", src, span[0], span[1], i, g.Size, w.Size, g.Flags, w.Flags, g.Hash, w.Hash)
		}
		if g.PTS != w.PTS-offset || g.DTS != w.DTS-offset {
			t.Fatalf("%s packet %d: pts %d dts %d, want %d %d", src, i, g.PTS, g.DTS, w.PTS-offset, w.DTS-offset)
		}
		minPTS = min(minPTS, g.PTS)
	}
	if minPTS != 0 {
		t.Errorf("%s [%g, %g): first PTS %d, want 0", src, span[0], span[1], minPTS)
	}
	testtool.FFmpegDecodes(t, out)
}

// checkImages reads the rewritten tables back with DuckDB: image cells are
// references whose blobs equal the source bytes, nulls stay null, every
// other column is unchanged, and other files under data/ are copied.
func checkImages(t *testing.T, src, dst string, set *packcore.Set) {
	var rels []string
	for rel := range treeSums(t, filepath.Join(src, "data")) {
		if strings.HasSuffix(rel, ".parquet") {
			rels = append(rels, rel)
		}
	}
	slices.Sort(rels)
	if len(rels) != len(fixLengths) {
		t.Fatalf("source has %d tables", len(rels))
	}
	var srcFiles, dstFiles []string
	for _, rel := range rels {
		srcFiles = append(srcFiles, filepath.Join(src, "data", rel))
		dstFiles = append(dstFiles, filepath.Join(dst, "data", rel))
	}
	in, out := dump(t, srcFiles...), dump(t, dstFiles...)
	refs, nulls := 0, 0
	for i, rel := range rels {
		a, b := in[srcFiles[i]], out[dstFiles[i]]
		if strings.Join(a.Columns, ",") != strings.Join(b.Columns, ",") || len(a.Rows) != len(b.Rows) || len(a.Rows) != int(fixLengths[i]) {
			t.Fatalf("%s: columns %v / %v, rows %d / %d", rel, a.Columns, b.Columns, len(a.Rows), len(b.Rows))
		}
		for _, key := range []string{"observation.image", "observation.images.side"} {
			c := a.col(t, key)
			for r := range a.Rows {
				sv, dv := a.Rows[r][c], b.Rows[r][c]
				if sv == nil {
					if dv != nil {
						t.Errorf("%s row %d %s: null became %v", rel, r, key, dv)
					}
					nulls++
					continue
				}
				ref, ok := dv.(string)
				if !ok {
					t.Fatalf("%s row %d %s: %v is not a reference", rel, r, key, dv)
				}
				member, _, err := packcore.ParseRef(ref)
				if err != nil {
					t.Fatal(err)
				}
				if want := fmt.Sprintf("frames/%s/%s/%08d.png", key, strings.TrimSuffix(rel, ".parquet"), r); member != want {
					t.Errorf("%s row %d: member %s, want %s", rel, r, member, want)
				}
				blob, err := set.Read(ref)
				if err != nil {
					t.Fatal(err)
				}
				wantSHA := sv.(map[string]any)["bytes"].(map[string]any)["sha256"]
				if sha(blob) != wantSHA {
					t.Errorf("%s row %d %s: blob sha256 %s, source %s", rel, r, key, sha(blob), wantSHA)
				}
				refs++
			}
		}
		for _, name := range []string{"observation.state", "action", "timestamp", "frame_index", "episode_index", "index", "task_index"} {
			c := a.col(t, name)
			for r := range a.Rows {
				if fmt.Sprint(a.Rows[r][c]) != fmt.Sprint(b.Rows[r][c]) {
					t.Errorf("%s row %d %s: %v became %v", rel, r, name, a.Rows[r][c], b.Rows[r][c])
				}
			}
		}
		var hf string
		for _, kv := range b.KV {
			if kv[0] == "huggingface" {
				hf = kv[1]
			}
		}
		var meta struct {
			Info struct {
				Features map[string]map[string]any `json:"features"`
			} `json:"info"`
		}
		if err := json.Unmarshal([]byte(hf), &meta); err != nil {
			t.Fatalf("%s: huggingface metadata: %v", rel, err)
		}
		for _, key := range []string{"observation.image", "observation.images.side"} {
			if f := meta.Info.Features[key]; f["_type"] != "Value" || f["dtype"] != "string" {
				t.Errorf("%s: huggingface metadata declares %s as %v, want a string Value", rel, key, f)
			}
		}
	}
	total := int(2 * sum(fixLengths))
	if refs+nulls != total || nulls != 1 || set.Len() != refs {
		t.Errorf("%d references, %d nulls, %d members; want %d cells, 1 null, one member per reference", refs, nulls, set.Len(), total)
	}
	if fileSHA(t, filepath.Join(dst, "data", "README.txt")) != fileSHA(t, filepath.Join(src, "data", "README.txt")) {
		t.Error("data/README.txt not copied unchanged")
	}
}

func sum(xs []int64) int64 {
	var n int64
	for _, x := range xs {
		n += x
	}
	return n
}

// TestNoSplitEpisodes keeps every v3.0 file whole: each episode is addressed
// by its metadata interval into the shared blob, whose bytes equal the file.
func TestNoSplitEpisodes(t *testing.T) {
	t.Parallel()
	src := dataset(t, "v3.0")
	ctx := context.Background()
	ins, err := Inspect(ctx, src, Options{NoSplitEpisodes: true, Engine: testEngine(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	if e := entry(t, ins.Plan("x"), top); e.Action != plan.ActionCopy || !hasNote(e, "--no-split-episodes") {
		t.Errorf("plan entry %s: %s %q", top, e.Action, e.Notes)
	}
	dst := filepath.Join(t.TempDir(), "out")
	res, err := Convert(ctx, ins, converttest.Dest(t, dst), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Cut != 0 || res.Videos != 3 || res.IndexEntries != 12 {
		t.Errorf("result %+v, want 3 whole files, 12 index entries, nothing cut", res)
	}
	set, ix := lerobottest.LeRobotOutput(t, dst)
	spans := episodeSpans(t, src)
	for _, e := range ix.Episodes {
		member, _, _ := packcore.ParseRef(e.Ref)
		blob, err := set.Read(e.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if sha(blob) != fileSHA(t, filepath.Join(src, member)) {
			t.Errorf("episode %d %s: blob %s differs from the source file", e.EpisodeIndex, e.VideoKey, member)
		}
		s := spans[fmt.Sprintf("%d/%s", e.EpisodeIndex, e.VideoKey)]
		if e.FromNS != int64(math.Round(s[0]*1e9)) || e.ToNS != int64(math.Round(s[1]*1e9)) {
			t.Errorf("episode %d %s: [%d, %d), metadata says [%g, %g) s", e.EpisodeIndex, e.VideoKey, e.FromNS, e.ToNS, s[0], s[1])
		}
	}
}

// TestEpisodeShards packs with shards small enough to need several and
// checks that both cameras of every episode land in the same shard. The
// writer starts a new shard for a group once the current one is half full,
// so a group of at most half a shard (the largest episode here is about
// 22 KiB) is never split.
func TestEpisodeShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ins, err := Inspect(ctx, dataset(t, "v2.1"), Options{Options: convert.Options{PackOptions: convert.PackOptions{MaxPackBytes: 48 << 10}}, Engine: testEngine(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	res, err := Convert(ctx, ins, converttest.Dest(t, dst), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pack.Shards < 2 || res.Pack.GroupsSplit != 0 {
		t.Fatalf("%d shard(s), %d group(s) split; the test needs several shards and no split group", res.Pack.Shards, res.Pack.GroupsSplit)
	}
	set, err := packcore.OpenSet(filepath.Join(dst, "media"), packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for ep := range fixLengths {
		var shards []string
		for _, key := range []string{top, wrist} {
			m, err := set.Stat(fmt.Sprintf("videos/chunk-000/%s/episode_%06d.mp4", key, ep))
			if err != nil {
				t.Fatal(err)
			}
			shards = append(shards, m.Shard)
		}
		if shards[0] != shards[1] {
			t.Errorf("episode %d: cameras in shards %v", ep, shards)
		}
	}
}

// TestRefusals feeds inconsistent datasets to Inspect: each is refused with
// a lerobot *convert.InputError that names the problem, and nothing is
// written anywhere (the source tree is unchanged).
func TestRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		base    string
		change  func(t *testing.T, root string)
		opts    Options
		scans   bool // refused only once the camera files are read
		wantErr []string
	}{
		{name: "overlapping intervals", base: "v3.0-overlap", wantErr: []string{top, "episode 2", "overlap"}},
		{name: "missing timing column", base: "v3.0-notiming", wantErr: []string{"episode 0", "videos/" + wrist + "/to_timestamp"}},
		{name: "length disagrees with the video", base: "v2.1", change: func(t *testing.T, root string) {
			editFile(t, filepath.Join(root, "meta", "episodes.jsonl"), func(s string) string {
				return strings.Replace(s, `"length":9`, `"length":30`, 1)
			})
		}, scans: true, wantErr: []string{wrist, "episode 2", "episode_000002.mp4"}},
		{name: "unsupported version", base: "v2.1", change: func(t *testing.T, root string) {
			editFile(t, filepath.Join(root, "meta", "info.json"), func(s string) string {
				return strings.Replace(s, `"v2.1"`, `"v1.6"`, 1)
			})
		}, wantErr: []string{"unsupported codebase_version", "v1.6"}},
		{name: "unsupported template", base: "v2.0", change: func(t *testing.T, root string) {
			editFile(t, filepath.Join(root, "meta", "info.json"), func(s string) string {
				return strings.Replace(s, "episode_{episode_index:06d}.mp4", "episode_{episode_index:>6d}.mp4", 1)
			})
		}, wantErr: []string{"video_path", "unsupported format spec"}},
		{name: "missing camera file", base: "v2.0", change: func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "videos", "chunk-000", wrist, "episode_000004.mp4")); err != nil {
				t.Fatal(err)
			}
		}, wantErr: []string{wrist, "episode_000004.mp4 is missing"}},
		{name: "missing table", base: "v2.0", change: func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "data", "chunk-000", "episode_000003.parquet")); err != nil {
				t.Fatal(err)
			}
		}, wantErr: []string{"episode 3", "episode_000003.parquet is missing"}},
		{name: "unsupported storage format", base: "v3.0", change: func(t *testing.T, root string) {
			// Lance-stored datasets convert (lance_test.go); other formats do not.
			editFile(t, filepath.Join(root, "meta", "info.json"), func(s string) string {
				return strings.Replace(s, `{`, `{"storage_format": "zarr", `, 1)
			})
		}, wantErr: []string{"meta/info.json", `unsupported storage_format "zarr"`, `expected "parquet"`, `or "lance"`}},
		{name: "no info.json", base: "v2.0", change: func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "meta", "info.json")); err != nil {
				t.Fatal(err)
			}
		}, wantErr: []string{"does not look like a LeRobot dataset"}},
		{name: "no episodes.jsonl", base: "v2.0", change: func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "meta", "episodes.jsonl")); err != nil {
				t.Fatal(err)
			}
		}, wantErr: []string{"meta/episodes.jsonl is missing"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyDataset(t, tc.base)
			if tc.change != nil {
				tc.change(t, root)
			}
			before := treeSums(t, filepath.Dir(root))
			opts := tc.opts
			opts.Engine = testEngine(t, tc.scans)
			_, err := Inspect(context.Background(), root, opts)
			var ie *convert.InputError
			if !errors.As(err, &ie) || ie.Source != "lerobot" || !errors.Is(err, convert.ErrInvalidInput) {
				t.Fatalf("Inspect: %v; want a lerobot *convert.InputError", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if after := treeSums(t, filepath.Dir(root)); !mapsEqual(before, after) {
				t.Errorf("Inspect changed files next to the dataset")
			}
		})
	}
}

// TestNothingToConvert refuses options that skip every media feature.
func TestNothingToConvert(t *testing.T) {
	t.Parallel()
	cases := []struct {
		base string
		opts Options
	}{
		{"v3.0", Options{Video: VideoSkip}},
		{"v2.1-images", Options{Images: ImagesSkip}},
	}
	for _, tc := range cases {
		_, err := Inspect(context.Background(), dataset(t, tc.base), tc.opts)
		var ue *convert.UsageError
		if !errors.Is(err, ErrNothingToConvert) || !errors.As(err, &ue) || convert.Hint(err) != "drop --images skip or --video skip" {
			t.Errorf("%s %+v: %v; want a *convert.UsageError matching ErrNothingToConvert, with a hint", tc.base, tc.opts, err)
		}
	}
}

// TestToleranceFrames declares episode 2 one frame longer than its files
// (10 frames, the video holds 9): within the default tolerance of one
// frame it is accepted, with half a frame it is refused.
func TestToleranceFrames(t *testing.T) {
	t.Parallel()
	root := copyDataset(t, "v2.1")
	editFile(t, filepath.Join(root, "meta", "episodes.jsonl"), func(s string) string {
		return strings.Replace(s, `"length":9`, `"length":10`, 1)
	})
	cases := []struct {
		tolerance float64
		refused   bool
	}{
		{0, false}, // default: 1 frame
		{1, false},
		{0.5, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.tolerance), func(t *testing.T) {
			_, err := Inspect(context.Background(), root, Options{ToleranceFrames: tc.tolerance, Engine: testEngine(t, true)})
			if tc.refused != (err != nil) {
				t.Fatalf("Inspect: %v; refused want %v", err, tc.refused)
			}
			if err != nil && (!errors.Is(err, convert.ErrInvalidInput) || !strings.Contains(err.Error(), "episode 2")) {
				t.Fatalf("Inspect: %v; want an invalid-input error naming episode 2", err)
			}
		})
	}
}

// TestConvertFailureLeavesNothing makes Convert fail after packing has begun
// (a symlink under data/ is refused while copying) and checks that neither
// the destination nor a staging directory remains.
func TestConvertFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	root := copyDataset(t, "v2.0")
	if err := os.Symlink("episode_000000.parquet", filepath.Join(root, "data", "chunk-000", "link.parquet")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ins, err := Inspect(ctx, root, Options{Engine: testEngine(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := Convert(ctx, ins, converttest.Dest(t, dst), nil); !errors.Is(err, convert.ErrInvalidInput) || !strings.Contains(err.Error(), "data/chunk-000/link.parquet") {
		t.Fatalf("Convert: %v; want a refusal of link.parquet", err)
	}
	for _, p := range []string{dst, stage.Path(dst)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a failed conversion: %v", p, err)
		}
	}
}
