//go:build cgo

package libav

// Test fixtures are made at test time by the ffmpeg CLI (Debian 12's
// FFmpeg 5.1: libx264, libx265, the native mpeg4 encoder, libsvtav1 or
// libaom-av1 when present), shaped like LeRobot camera files: 160x120 at 10 fps,
// episodes of 23, 30 and 17 frames, each encoded on its own (so each starts
// on a keyframe) and then concatenated by packet copy with the concat
// demuxer and +faststart, as LeRobot v3.0 does; from/to are the cumulative
// sums of the episode files' stream durations, as LeRobot computes them.
// The commands are in the functions below; they follow
// shared/research/lerobot-video/make_fixture_videos.sh.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

const fixFPS = 10

// sec is one second in nanoseconds.
const sec = int64(1e9)

// fixLengths are the episode lengths in frames: not multiples of the GOP
// (10), so every episode ends with a short GOP, as real recordings do.
var fixLengths = []int64{23, 30, 17}

var (
	fixMu    sync.Mutex
	fixRoot  string
	fixCache = map[string]*cacheEntry{}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixRoot != "" {
		_ = os.RemoveAll(fixRoot)
	}
	os.Exit(code)
}

// fixtureDir returns a directory shared by the tests of this run.
func fixtureDir(t testing.TB) string {
	t.Helper()
	fixMu.Lock()
	defer fixMu.Unlock()
	if fixRoot == "" {
		d, err := os.MkdirTemp("", "bpconvert-video-fixtures-")
		if err != nil {
			t.Fatal(err)
		}
		fixRoot = d
	}
	return fixRoot
}

// cacheEntry is one cached fixture.
type cacheEntry struct {
	once sync.Once
	v    any
}

// cached runs make once per name and test binary; tests running in
// parallel that ask for the same fixture wait for the one making it.
func cached[T any](t testing.TB, name string, make func() T) T {
	t.Helper()
	fixMu.Lock()
	e, ok := fixCache[name]
	if !ok {
		e = &cacheEntry{}
		fixCache[name] = e
	}
	fixMu.Unlock()
	e.once.Do(func() { e.v = make() })
	v, ok := e.v.(T)
	if !ok {
		t.Fatalf("fixture %s was not made (the test that made it first failed)", name)
	}
	return v
}

func ffmpeg(t testing.TB, args ...string) {
	t.Helper()
	cmd := exec.Command("ffmpeg", append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y"}, args...)...)
	cmd.Env = append(os.Environ(), "SVT_LOG=1") // SVT-AV1 prints a banner otherwise
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func hasEncoder(t testing.TB, name string) bool {
	t.Helper()
	testtool.Require(t, "ffmpeg")
	out := cached(t, "encoders", func() string { return testtool.Run(t, "ffmpeg", "-hide_banner", "-encoders") })
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[1] == name {
			return true
		}
	}
	return false
}

// codecArgs returns the encoder arguments for a fixture codec, or nil when
// this ffmpeg lacks the encoder.
func codecArgs(t testing.TB, codec string) []string {
	t.Helper()
	switch codec {
	case "h264":
		if hasEncoder(t, "libx264") {
			return strings.Fields("-c:v libx264 -preset veryfast -g 10 -keyint_min 10 -sc_threshold 0 -bf 0 -pix_fmt yuv420p")
		}
	case "h264_bframes": // x264 medium: 3 B-frames, pyramid; negative DTS and an edit list in mp4
		if hasEncoder(t, "libx264") {
			return strings.Fields("-c:v libx264 -preset medium -g 10 -keyint_min 10 -sc_threshold 0 -pix_fmt yuv420p")
		}
	case "hevc": // closed GOPs with B-frames, tag hvc1 (LeRobot's depth-camera codec)
		if hasEncoder(t, "libx265") {
			return strings.Fields("-c:v libx265 -x265-params keyint=10:min-keyint=10:scenecut=0:open-gop=0:log-level=error -tag:v hvc1 -pix_fmt yuv420p")
		}
	case "mpeg4":
		return strings.Fields("-c:v mpeg4 -g 10 -bf 0 -q:v 5 -pix_fmt yuv420p")
	case "av1": // LeRobot's default encoder
		if hasEncoder(t, "libsvtav1") {
			return strings.Fields("-c:v libsvtav1 -g 10 -crf 30 -preset 12 -pix_fmt yuv420p")
		}
		if hasEncoder(t, "libaom-av1") {
			return strings.Fields("-c:v libaom-av1 -g 10 -keyint_min 10 -crf 30 -cpu-used 8 -row-mt 1 -pix_fmt yuv420p")
		}
	}
	return nil
}

// concatFixture is a v3.0-style camera file and its episodes.
type concatFixture struct {
	Path     string
	Episodes []video.Episode
	Skip     string // reason when the encoder is missing
}

// lavfiSources gives each episode a different picture.
var lavfiSources = []string{"testsrc", "smptebars", "mandelbrot"}

// concatenated builds concat_<codec>.mp4 from separately encoded episodes.
func concatenated(t testing.TB, codec string) concatFixture {
	t.Helper()
	testtool.Require(t, "ffmpeg", "ffprobe")
	return cached(t, "concat/"+codec, func() concatFixture {
		enc := codecArgs(t, codec)
		if enc == nil {
			return concatFixture{Skip: "no encoder for " + codec + " in this ffmpeg"}
		}
		dir := filepath.Join(fixtureDir(t), "ep-"+codec)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		list := "ffconcat version 1.0\n"
		var eps []video.Episode
		acc := 0.0 // LeRobot sums float seconds: from = sum of previous durations
		for i, n := range fixLengths {
			f := filepath.Join(dir, fmt.Sprintf("episode_%06d.mp4", i))
			src := fmt.Sprintf("%s=size=160x120:rate=%d", lavfiSources[i%len(lavfiSources)], fixFPS)
			args := append([]string{"-f", "lavfi", "-i", src, "-frames:v", strconv.FormatInt(n, 10)}, enc...)
			ffmpeg(t, append(args, "-movflags", "+faststart", f)...)
			list += fmt.Sprintf("file '%s'\n", filepath.Base(f))
			d := streamDuration(t, f)
			eps = append(eps, video.Episode{Index: i, FromNS: video.SecondsToNS(acc), ToNS: video.SecondsToNS(acc + d), Frames: n})
			acc += d
		}
		lp := filepath.Join(dir, "list.ffconcat")
		if err := os.WriteFile(lp, []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(fixtureDir(t), "concat_"+codec+".mp4")
		ffmpeg(t, "-f", "concat", "-safe", "0", "-i", lp, "-c", "copy", "-movflags", "+faststart", out)
		return concatFixture{Path: out, Episodes: eps}
	})
}

// singleStream is one encode of 70 frames (GOP 10) indexed like the
// concatenated files, so the boundaries 2.3 s and 5.3 s miss keyframes, as
// in a file that lerobot-edit-dataset re-encoded.
func singleStream(t testing.TB) concatFixture {
	t.Helper()
	testtool.Require(t, "ffmpeg", "ffprobe")
	return cached(t, "single", func() concatFixture {
		out := filepath.Join(fixtureDir(t), "single_stream.mp4")
		ffmpeg(t, "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=7", "-c:v", "mpeg4", "-g", "10", "-bf", "0",
			"-q:v", "5", "-pix_fmt", "yuv420p", "-movflags", "+faststart", out)
		return concatFixture{Path: out, Episodes: []video.Episode{
			{Index: 0, FromNS: 0, ToNS: 2_300_000_000, Frames: 23},
			{Index: 1, FromNS: 2_300_000_000, ToNS: 5_300_000_000, Frames: 30},
			{Index: 2, FromNS: 5_300_000_000, ToNS: 7_000_000_000, Frames: 17},
		}}
	})
}

// simpleFile makes a 5 s, 10 fps file by name from the extra ffmpeg args.
func simpleFile(t testing.TB, name string, args ...string) string {
	t.Helper()
	testtool.Require(t, "ffmpeg", "ffprobe")
	return cached(t, "simple/"+name, func() string {
		out := filepath.Join(fixtureDir(t), name)
		ffmpeg(t, append(args, out)...)
		return out
	})
}

func streamDuration(t testing.TB, path string) float64 {
	t.Helper()
	out := testtool.Run(t, "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=duration", "-of", "csv=p=0", path)
	d, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
	if err != nil {
		t.Fatalf("ffprobe duration of %s: %q: %v", path, out, err)
	}
	return d
}

// ffprobeStream returns stream fields of the first video stream, e.g.
// "time_base", "start_time", "codec_tag_string", "extradata_hash".
func ffprobeStream(t testing.TB, path string) map[string]string {
	t.Helper()
	out := testtool.Run(t, "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_data_hash", "sha256",
		"-show_entries", "stream=codec_name,codec_tag_string,time_base,start_time,extradata_hash,width,height",
		"-of", "default=nw=1", path)
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}
