package lerobot

// The frames table is checked with MediaRef (PyPI mediaref 2.1.0, with its
// tensorcodec-av decoder, pinned in scripts/requirements/test.txt), the
// public reader of (uri, pts_ns) references, against the source camera
// files decoded by the ffmpeg CLI (testdata/mediaref_check.py says how).

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/plan"
)

// mediaRefCheck is what testdata/mediaref_check.py reports.
type mediaRefCheck struct {
	Checked    int      `json:"checked"`
	Mismatches int      `json:"mismatches"`
	Details    []string `json:"details"`
	Problems   []string `json:"problems"`
	Rows       int      `json:"rows"`
}

// runMediaRefCheck runs testdata/mediaref_check.py on the output dst of
// the source src from a directory that is neither, with the docs' recipe
// (snippet, a file) when given.
func runMediaRefCheck(t *testing.T, dst, src string, seed int, mode, snippet string) mediaRefCheck {
	t.Helper()
	py := testtool.Python(t)
	script, err := filepath.Abs(filepath.Join("testdata", "mediaref_check.py"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{script, dst, src, strconv.Itoa(seed), "100", mode}
	if snippet != "" {
		args = append(args, snippet)
	}
	cmd := exec.Command(py, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1", "HF_DATASETS_DISABLE_PROGRESS_BARS=1")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("mediaref_check.py: %v\n%s", err, stderr)
	}
	var r mediaRefCheck
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("mediaref_check.py printed %q: %v", out, err)
	}
	return r
}

// recipe writes the Python block of docs/converters.md that follows the
// line "frame i of episode e of camera c" to a file and returns its path;
// it must be at most 5 lines.
func recipe(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testtool.RepoRoot(t), "docs", "converters.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)frame `i` of episode `e` of camera `c`.*?```python\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/converters.md has no Python block after \"frame `i` of episode `e` of camera `c`\"")
	}
	// The block's first line names its inputs (DST, e, i, c), which each
	// cell replaces, and its last may print the frame's shape; the lines
	// between get the frame.
	lines := strings.Split(strings.TrimRight(string(m[1]), "\n"), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "DST, e, i, c = ") {
		lines = lines[1:]
	}
	if n := len(lines); n > 0 && strings.HasPrefix(lines[n-1], "print(") {
		lines = lines[:n-1]
	}
	code := strings.Join(lines, "\n") + "\n"
	if n := len(lines); n > 5 {
		t.Fatalf("the recipe has %d lines, more than 5:\n%s", n, code)
	}
	p := filepath.Join(t.TempDir(), "recipe.py")
	if err := os.WriteFile(p, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMediaRefFrames converts fixtures of every layout (v2.x one file per
// episode; v3.0 cut per episode and packed whole; H.264 with and without
// B-frames, HEVC, AV1 (v2.0's wrist camera), MPEG-4 part 2; streams that
// start 1.5 s after 0; 30 fps, whose frame times are not whole nanoseconds;
// the Lance-stored twin) and decodes 100 random (episode, camera, frame)
// cells of the frames table through MediaRef, through the docs' recipe and
// through blobpack's PackSet.open handed to FFmpeg's decoder (tensorcodec's
// VideoDecoder), from another directory: each must be the source camera
// file's frame, pixel for pixel, as the ffmpeg CLI decodes it. The table's schema must be
// MediaRef's Arrow form, without Hugging Face metadata (datasets loads it),
// and its rows the source tables' data rows.
func TestMediaRefFrames(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "ffmpeg", "ffprobe")
	snippet := recipe(t)
	cases := []struct {
		name, src string
		noSplit   bool
		lance     bool
	}{
		{name: "v2.0", src: "v2.0"},
		{name: "v2.1 B-frames", src: "v2.1"},
		{name: "v2.1 30 fps", src: "v2.1-30fps"},
		{name: "v2.1 HEVC", src: "v2.1-hevc"},
		{name: "v3.0 cut and whole", src: "v3.0"},
		{name: "v3.0 whole", src: "v3.0", noSplit: true},
		{name: "v3.0 offset", src: "v3.0-offset"},
		{name: "v3.0 offset whole", src: "v3.0-offset", noSplit: true},
		{name: "v3.0 Lance-stored", src: "v3.0", lance: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := dataset(t, tc.src)
			if _, err := os.Stat(src); err != nil {
				testtool.Missing(t, "no "+tc.src+" fixture: this ffmpeg has no libx265")
			}
			in := src
			if tc.lance {
				in = lanceTwin(t)
			}
			ctx := context.Background()
			ins, err := Inspect(ctx, in, Options{NoSplitEpisodes: tc.noSplit, Engine: testEngine(t, true)})
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "out")
			if !slices.ContainsFunc(ins.Plan(dst).Layout, func(o plan.Output) bool { return o.Path == FramesFile }) {
				t.Errorf("the plan's layout does not list %s", FramesFile)
			}
			res, err := Convert(ctx, ins, converttest.Dest(t, dst), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.FrameRows != ins.Dataset.TotalFrames {
				t.Errorf("frames table: %d rows, the dataset has %d frames", res.FrameRows, ins.Dataset.TotalFrames)
			}
			r := runMediaRefCheck(t, dst, src, 44+i, "ceil", snippet)
			if r.Checked != 100 || r.Rows != int(ins.Dataset.TotalFrames) || r.Mismatches != 0 || len(r.Problems) > 0 {
				t.Fatalf("MediaRef: %+v", r)
			}
		})
	}
}

// TestMediaRefRoundIsWrong shows why pts_ns is rounded up: on the 30 fps
// fixture with B-frames (time base 1/15360, a frame every 33333333.33 ns),
// decoding at the nearest nanosecond instead picks the previous frame for
// some cells, while the table holds ceil() of every pts ffprobe reads.
func TestMediaRefRoundIsWrong(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "ffmpeg", "ffprobe")
	src := dataset(t, "v2.1-30fps")
	_, dst := convertDataset(t, src)
	r := runMediaRefCheck(t, dst, src, 7, "round", "")
	if r.Checked != 100 || len(r.Problems) > 0 {
		t.Fatalf("MediaRef: %+v", r)
	}
	if r.Mismatches == 0 {
		t.Fatalf("rounding to the nearest nanosecond decoded every one of %d cells right; the fixture does not tell ceil from round", r.Checked)
	}
	t.Logf("round: %d/%d cells decode another frame", r.Mismatches, r.Checked)
}
