//go:build cgo

package libav

import (
	"bytes"
	"context"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestScanMatchesFFprobe compares every packet of ScanKeyframes with what
// ffprobe reports for the same file, and the derived facts with what the
// fixture was made to have.
func TestScanMatchesFFprobe(t *testing.T) {
	t.Parallel()
	concatKeys := []int64{0, 1e9, 2e9, 2.3e9, 3.3e9, 4.3e9, 5.3e9, 6.3e9}
	cases := []struct {
		name      string
		file      func(t *testing.T) string
		codec     string
		frames    int
		keysNS    []int64 // nil: not checked
		reordered bool
		openGOP   bool
		discard   int
		others    string
	}{
		{name: "h264", file: concatPath("h264"), codec: "h264", frames: 70, keysNS: concatKeys},
		{name: "h264 B-frames", file: concatPath("h264_bframes"), codec: "h264", frames: 70, keysNS: concatKeys, reordered: true},
		{name: "mpeg4", file: concatPath("mpeg4"), codec: "mpeg4", frames: 70, keysNS: concatKeys},
		{name: "av1", file: concatPath("av1"), codec: "av1", frames: 70, keysNS: concatKeys},
		{name: "hevc", file: concatPath("hevc"), codec: "hevc", frames: 70, keysNS: concatKeys, reordered: true},
		{name: "single stream", file: func(t *testing.T) string { return singleStream(t).Path }, codec: "mpeg4", frames: 70,
			keysNS: []int64{0, 1e9, 2e9, 3e9, 4e9, 5e9, 6e9}},
		{name: "open GOP", file: openGOPFile, codec: "h264", frames: 50, reordered: true, openGOP: true,
			keysNS: []int64{0, 1e9, 2e9, 3e9, 4e9}},
		{name: "edit list trims the start", file: trimmedFile, codec: "h264", frames: 40, discard: 5,
			keysNS: []int64{0.5e9, 1.5e9, 2.5e9}},
		{name: "with audio", file: withAudioFile, codec: "mpeg4", frames: 50, others: "audio",
			keysNS: []int64{0, 1e9, 2e9, 3e9, 4e9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.file(t)
			s, err := ScanKeyframes(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if s.Codec != c.codec || s.Frames() != c.frames || s.Reordered != c.reordered || s.OpenGOP != c.openGOP ||
				strings.Join(s.OtherStreams, ",") != c.others || s.VideoStreams != 1 {
				t.Errorf("codec %s frames %d reordered %v openGOP %v others %v videos %d; want %s %d %v %v %q 1",
					s.Codec, s.Frames(), s.Reordered, s.OpenGOP, s.OtherStreams, s.VideoStreams,
					c.codec, c.frames, c.reordered, c.openGOP, c.others)
			}
			if tb := ffprobeStream(t, path)["time_base"]; s.TimeBase.String() != tb {
				t.Errorf("time base %s, ffprobe %s", s.TimeBase, tb)
			}
			want := testtool.FFprobePackets(t, path)
			if len(want) != len(s.Packets) {
				t.Fatalf("%d packets, ffprobe %d", len(s.Packets), len(want))
			}
			discard := 0
			for i, w := range want {
				g := s.Packets[i]
				if g.PTS != w.PTS || g.DTS != w.DTS || g.Duration != w.Duration || g.Size != w.Size ||
					g.Key != strings.Contains(w.Flags, "K") || g.Discard != strings.Contains(w.Flags, "D") {
					t.Fatalf("packet %d: %+v, ffprobe %+v", i, g, w)
				}
				if g.Discard {
					discard++
				}
			}
			if discard != c.discard {
				t.Errorf("%d discard-flagged packets, want %d", discard, c.discard)
			}
			if c.keysNS != nil {
				var got []int64
				for _, k := range s.Keyframes() {
					got = append(got, s.TimeBase.NS(k))
				}
				if !equalInts(got, c.keysNS) {
					t.Errorf("keyframes at %v ns, want %v", got, c.keysNS)
				}
			}
		})
	}
}

func TestScanErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := ScanKeyframes(ctx, dir+"/missing.mp4"); err == nil || !strings.Contains(err.Error(), "missing.mp4: open:") {
		t.Errorf("missing file: %v", err)
	}
	audio := simpleFile(t, "audio_only.m4a", "-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:a", "aac")
	if _, err := ScanKeyframes(ctx, audio); err == nil || !strings.HasSuffix(err.Error(), "audio_only.m4a: no video stream") {
		t.Errorf("audio only: %v", err)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func concatPath(codec string) func(t *testing.T) string {
	return func(t *testing.T) string {
		fx := concatenated(t, codec)
		if fx.Skip != "" {
			t.Skip(fx.Skip)
		}
		return fx.Path
	}
}

// openGOPFile: x264 with open-gop=1 puts leading B-frames after each
// keyframe (except the first) that reference the previous GOP.
func openGOPFile(t *testing.T) string {
	if codecArgs(t, "h264") == nil {
		t.Skip("no libx264")
	}
	return simpleFile(t, "opengop.mp4", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=5",
		"-c:v", "libx264", "-g", "10", "-keyint_min", "10", "-sc_threshold", "0", "-x264-params", "open-gop=1",
		"-pix_fmt", "yuv420p")
}

// trimmedFile: "ffmpeg -ss 1.5 -c copy" of a GOP-10 file keeps the GOP from
// 1.0 s and writes an edit list starting at 1.5 s; the demuxer returns the
// 5 packets before it flagged discard, with negative PTS.
func trimmedFile(t *testing.T) string {
	if codecArgs(t, "h264") == nil {
		t.Skip("no libx264")
	}
	src := simpleFile(t, "h264_5s.mp4", append(append([]string{"-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=5"},
		codecArgs(t, "h264")...), "-movflags", "+faststart")...)
	return simpleFile(t, "trimmed.mp4", "-ss", "1.5", "-i", src, "-c", "copy")
}

// withAudioFile: mpeg4 video plus an AAC audio stream.
func withAudioFile(t *testing.T) string {
	return simpleFile(t, "with_audio.mp4", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=5",
		"-f", "lavfi", "-i", "sine=frequency=440:duration=5", "-c:v", "mpeg4", "-g", "10", "-bf", "0", "-c:a", "aac", "-shortest")
}

// TestCheckRealFiles runs the boundary check on ffmpeg-made files whose
// structure forbids a cut.
func TestCheckRealFiles(t *testing.T) {
	t.Parallel()
	per := func(n int) []video.Episode {
		var eps []video.Episode
		for i := 0; i < n; i++ {
			eps = append(eps, video.Episode{Index: i, FromNS: int64(i) * sec, ToNS: int64(i+1) * sec, Frames: 10})
		}
		return eps
	}
	cases := []struct {
		name   string
		file   func(t *testing.T) string
		eps    []video.Episode
		reason string // expected in the first reason
	}{
		{"open GOP", openGOPFile, per(5), "episode 1: packet #20 (PTS 1.900000s) is inside the interval but outside the decode-order run #10..#18"},
		{"audio", withAudioFile, per(5), "the file has 1 stream(s) besides the video (audio)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ScanKeyframes(context.Background(), c.file(t))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := video.CheckBoundaries(s, "cam", "f.mp4", c.eps, video.Options{FPS: fixFPS})
			if err != nil {
				t.Fatal(err)
			}
			d := rep.Decide()
			if d.Split || len(d.Reasons) == 0 || !strings.Contains(d.Reasons[0], c.reason) {
				t.Fatalf("decision %+v, want a refusal %q", d, c.reason)
			}
		})
	}

	// The edit-list-trimmed file: its footage starts at 0 s after the five
	// discard-flagged packets, keyframes at 0.5, 1.5, 2.5 s.
	t.Run("discarded pre-roll", func(t *testing.T) {
		s, err := ScanKeyframes(context.Background(), trimmedFile(t))
		if err != nil {
			t.Fatal(err)
		}
		eps := []video.Episode{{Index: 0, FromNS: 0.5e9, ToNS: 1.5e9, Frames: 10}, {Index: 1, FromNS: 1.5e9, ToNS: 3.5e9, Frames: 20}}
		rep, err := video.CheckBoundaries(s, "cam", "f.mp4", eps, video.Options{FPS: fixFPS})
		if err != nil {
			t.Fatal(err)
		}
		if d := rep.Decide(); !d.Split || rep.PreRollNS != 0.5e9 || rep.FootageStartNS != 0 || rep.Episodes[0].Run.First != 10 {
			t.Fatalf("decision %+v, pre-roll %d, footage from %d, first packet #%d", d, rep.PreRollNS, rep.FootageStartNS, rep.Episodes[0].Run.First)
		}
		// from 0 s would start on a non-key picture after discarded ones
		eps[0].FromNS, eps[0].Frames = 0, 15
		rep, err = video.CheckBoundaries(s, "cam", "f.mp4", eps, video.Options{FPS: fixFPS})
		if err != nil {
			t.Fatal(err)
		}
		if d := rep.Decide(); d.Split || !strings.Contains(d.Reasons[0], "episode 0: starts at 0.000000s, not on a keyframe") {
			t.Fatalf("decision %+v", d)
		}
	})
}

// rangeLog is a reader that records the ranges read from it.
type rangeLog struct {
	r    io.ReaderAt
	mu   sync.Mutex
	read []video.Range
}

func (l *rangeLog) ReadAt(p []byte, off int64) (int, error) {
	n, err := l.r.ReadAt(p, off)
	l.mu.Lock()
	l.read = append(l.read, video.Range{Off: off, Len: int64(n)})
	l.mu.Unlock()
	return n, err
}

// TestSparseScan: the scan that leaves the sample data unread gives every
// packet exactly as a demux of the whole file does, for every codec and
// layout of the fixtures (moov first or last, B-frames, edit lists, open
// GOPs, an audio stream), and never reads a byte of an mdat payload.
func TestSparseScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	files := []struct {
		name string
		file func(t *testing.T) string
	}{
		{"h264", concatPath("h264")}, {"h264 B-frames", concatPath("h264_bframes")}, {"mpeg4", concatPath("mpeg4")},
		{"av1", concatPath("av1")}, {"hevc", concatPath("hevc")},
		{"single stream", func(t *testing.T) string { return singleStream(t).Path }},
		{"open GOP", openGOPFile}, {"edit list trims the start", trimmedFile}, {"with audio", withAudioFile},
		{"moov last", func(t *testing.T) string {
			return simpleFile(t, "moov_last.mp4", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=5",
				"-c:v", "mpeg4", "-g", "10", "-bf", "2", "-q:v", "5")
		}},
	}
	for _, c := range files {
		t.Run(c.name, func(t *testing.T) {
			path := c.file(t)
			whole, err := scanWhole(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			sparse, err := ScanKeyframes(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if sparse.Input != nil || !reflect.DeepEqual(sparse, whole) {
				t.Fatalf("sparse scan differs from the whole file's:\n got %+v\nwant %+v", sparse, whole)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			holes := video.MediaData(bytes.NewReader(b), int64(len(b)))
			if len(holes) == 0 {
				t.Fatal("no media data found")
			}
			log := &rangeLog{r: bytes.NewReader(b)}
			in, err := ScanInput(ctx, video.Input{Name: "object", R: log, Size: int64(len(b))})
			if err != nil {
				t.Fatal(err)
			}
			in.Path, in.Input = path, nil
			if !reflect.DeepEqual(in, whole) {
				t.Fatalf("sparse scan of a reader differs from the whole file's:\n got %+v\nwant %+v", in, whole)
			}
			var n, payload int64
			for _, r := range log.read {
				n += r.Len
				for _, h := range holes {
					if r.Off < h.Off+h.Len && h.Off < r.Off+r.Len {
						t.Fatalf("read [%d, %d) touches the media data [%d, %d)", r.Off, r.Off+r.Len, h.Off, h.Off+h.Len)
					}
				}
			}
			for _, h := range holes {
				payload += h.Len
			}
			t.Logf("%d of %d bytes read in %d reads (media data %d bytes)", n, len(b), len(log.read), payload)
			if n > 2*(int64(len(b))-payload) {
				t.Errorf("read %d bytes, more than twice the %d bytes outside the media data", n, int64(len(b))-payload)
			}
		})
	}
}
