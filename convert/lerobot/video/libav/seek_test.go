//go:build cgo

package libav

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// readLog is an io.ReaderAt over a file that records the ranges read.
type readLog struct {
	f      *os.File
	mu     sync.Mutex
	ranges [][2]int64
}

func (r *readLog) ReadAt(b []byte, off int64) (int, error) {
	n, err := r.f.ReadAt(b, off)
	r.mu.Lock()
	r.ranges = append(r.ranges, [2]int64{off, off + int64(n)})
	r.mu.Unlock()
	return n, err
}

// overlap counts the bytes read inside [lo, hi).
func (r *readLog) overlap(lo, hi int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, g := range r.ranges {
		if a, b := max(g[0], lo), min(g[1], hi); b > a {
			n += b - a
		}
	}
	return n
}

// noisyConcat encodes three episodes of noise (so each packet is large,
// several times libav's read buffer per episode) with codec, one by one,
// and concatenates them by packet copy as LeRobot does; it returns the
// file and its episodes.
func noisyConcat(t *testing.T, codec string) (string, []video.Episode) {
	t.Helper()
	enc := codecArgs(t, codec)
	if enc == nil {
		t.Skip("no encoder for " + codec + " in this ffmpeg")
	}
	dir := t.TempDir()
	list := "ffconcat version 1.0\n"
	var eps []video.Episode
	acc := 0.0
	for i, n := range fixLengths {
		f := filepath.Join(dir, fmt.Sprintf("episode_%06d.mp4", i))
		src := fmt.Sprintf("%s=size=320x240:rate=%d", lavfiSources[i%len(lavfiSources)], fixFPS)
		args := append([]string{"-f", "lavfi", "-i", src, "-vf", "noise=alls=40:allf=t", "-frames:v", strconv.FormatInt(n, 10)}, enc...)
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
	out := filepath.Join(dir, "concat.mp4")
	ffmpeg(t, "-f", "concat", "-safe", "0", "-i", lp, "-c", "copy", "-movflags", "+faststart", out)
	return out, eps
}

// packetSpan returns the byte range [lo, hi) of the file holding the
// packets (per ffprobe, not bpconvert) presented in [from, to) ns.
func packetSpan(t *testing.T, path string, tb video.Rational, from, to int64) (int64, int64) {
	t.Helper()
	out := testtool.Run(t, "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts,pos,size", "-of", "csv=p=0", path)
	lo, hi := int64(-1), int64(-1)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, ",")
		if len(f) != 3 {
			t.Fatalf("ffprobe: line %q", line)
		}
		pts, _ := strconv.ParseInt(f[0], 10, 64)
		pos, _ := strconv.ParseInt(f[1], 10, 64)
		size, _ := strconv.ParseInt(f[2], 10, 64)
		if ns := tb.NS(pts); ns < from || ns >= to {
			continue
		}
		if lo < 0 || pos < lo {
			lo = pos
		}
		hi = max(hi, pos+size)
	}
	if lo < 0 {
		t.Fatalf("ffprobe: no packet in [%d, %d) ns", from, to)
	}
	return lo, hi
}

// TestSplitLaterEpisodes cuts the last two episodes of a camera file
// (what an append does with a file that grew): the containers are the
// packets of those episodes, and no byte of the first episode's packets
// is read while cutting, beyond the read buffer that opening the file fills.
func TestSplitLaterEpisodes(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "ffmpeg", "ffprobe")
	ctx := context.Background()
	for _, codec := range []string{"h264_bframes", "mpeg4"} {
		t.Run(codec, func(t *testing.T) {
			path, eps := noisyConcat(t, codec)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, _ := f.Stat()
			log := &readLog{f: f}
			s, err := ScanInput(ctx, video.Input{Name: "concat.mp4", R: log, Size: fi.Size()})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := video.CheckBoundaries(s, "cam", "concat.mp4", eps[1:], video.Options{FPS: fixFPS})
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := packetSpan(t, path, s.TimeBase, eps[0].FromNS, eps[0].ToNS)
			if hi-lo < 4*ioBufferSize {
				t.Fatalf("episode 0 spans %d bytes, too few to tell a seek from a read", hi-lo)
			}
			log.mu.Lock()
			log.ranges = nil
			log.mu.Unlock()
			outs, err := Split(ctx, rep, video.DirDest(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 2 {
				t.Fatalf("%d containers, want 2", len(outs))
			}
			for i, o := range outs {
				verifyCut(t, path, eps[1+i], o)
			}
			// Opening the file reads its header through one buffer of
			// ioBufferSize bytes, which may run into the first packets.
			if n := log.overlap(lo, hi); n > ioBufferSize {
				t.Errorf("cutting episodes 1-2 read %d bytes of episode 0's packets [%d, %d), more than the %d of the header's read buffer", n, lo, hi, ioBufferSize)
			}
		})
	}
}
