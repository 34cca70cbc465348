//go:build cgo

package libav

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// benchFile is a LeRobot-sized camera file made by ffmpeg: 640x480 at
// 30 fps, 12 episodes of 10 s, each encoded on its own by libx264
// (veryfast: B-frames, GOP 30) and concatenated by packet copy.
func benchFile(b *testing.B) concatFixture {
	b.Helper()
	testtool.Require(b, "ffmpeg", "ffprobe")
	if codecArgs(b, "h264") == nil {
		b.Skip("no libx264")
	}
	return cached(b, "bench", func() concatFixture {
		dir := filepath.Join(fixtureDir(b), "bench")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		list := "ffconcat version 1.0\n"
		var eps []video.Episode
		acc := 0.0
		for i := 0; i < 12; i++ {
			f := filepath.Join(dir, fmt.Sprintf("episode_%06d.mp4", i))
			ffmpeg(b, "-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=640x480:rate=30:duration=10,hue=h=%d", i*30),
				"-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0",
				"-pix_fmt", "yuv420p", "-movflags", "+faststart", f)
			list += fmt.Sprintf("file '%s'\n", filepath.Base(f))
			d := streamDuration(b, f)
			eps = append(eps, video.Episode{Index: i, FromNS: video.SecondsToNS(acc), ToNS: video.SecondsToNS(acc + d), Frames: 300})
			acc += d
		}
		lp := filepath.Join(dir, "list.ffconcat")
		if err := os.WriteFile(lp, []byte(list), 0o644); err != nil {
			b.Fatal(err)
		}
		out := filepath.Join(fixtureDir(b), "bench.mp4")
		ffmpeg(b, "-f", "concat", "-safe", "0", "-i", lp, "-c", "copy", "-movflags", "+faststart", out)
		return concatFixture{Path: out, Episodes: eps}
	})
}

// BenchmarkScanKeyframes is the packet-flag scan; compare with
// BenchmarkFFprobeSkipFrameNokey, the reference converter's route.
func BenchmarkScanKeyframes(b *testing.B) {
	fx := benchFile(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		s, err := ScanKeyframes(ctx, fx.Path)
		if err != nil {
			b.Fatal(err)
		}
		if n := len(s.Keyframes()); n != 120 {
			b.Fatalf("%d keyframes, want 120", n)
		}
	}
}

// BenchmarkFFprobeSkipFrameNokey runs the reference converter's keyframe
// probe: ffprobe decodes every keyframe.
func BenchmarkFFprobeSkipFrameNokey(b *testing.B) {
	fx := benchFile(b)
	b.ResetTimer()
	for b.Loop() {
		out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-skip_frame", "nokey",
			"-show_entries", "frame=pts_time", "-of", "json", fx.Path).Output()
		if err != nil {
			b.Fatal(err)
		}
		if n := strings.Count(string(out), "pts_time"); n != 120 {
			b.Fatalf("%d keyframes, want 120", n)
		}
	}
}

// BenchmarkSplit12 scans, checks and cuts the 12 episodes of one camera.
func BenchmarkSplit12(b *testing.B) {
	fx := benchFile(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		dir := b.TempDir()
		s, err := ScanKeyframes(ctx, fx.Path)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := video.CheckBoundaries(s, "cam", "bench.mp4", fx.Episodes, video.Options{FPS: 30})
		if err != nil {
			b.Fatal(err)
		}
		outs, err := Split(ctx, rep, video.DirDest(dir))
		if err != nil {
			b.Fatal(err)
		}
		if len(outs) != 12 {
			b.Fatalf("%d outputs", len(outs))
		}
	}
}

// BenchmarkSegmentMuxer12 is the reference's cut of the same file: the
// keyframe probe, then ffmpeg's segment muxer at the 11 inner boundaries.
func BenchmarkSegmentMuxer12(b *testing.B) {
	fx := benchFile(b)
	var times []string
	for _, e := range fx.Episodes[1:] {
		times = append(times, fmt.Sprintf("%.6f", float64(e.FromNS)/1e9))
	}
	b.ResetTimer()
	for b.Loop() {
		dir := b.TempDir()
		if out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-skip_frame", "nokey",
			"-show_entries", "frame=pts_time", "-of", "json", fx.Path).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		if out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-y", "-i", fx.Path, "-c", "copy", "-f", "segment",
			"-segment_times", strings.Join(times, ","), "-reset_timestamps", "1", filepath.Join(dir, "part%05d.mp4")).CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 12 {
			b.Fatalf("segment muxer wrote %d parts", len(ents))
		}
	}
}
