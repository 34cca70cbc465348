//go:build cgo

package libav

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

func parseTB(t testing.TB, s string) video.Rational {
	t.Helper()
	a, b, ok := strings.Cut(s, "/")
	num, err1 := strconv.ParseInt(a, 10, 64)
	den, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("bad time base %q", s)
	}
	return video.Rational{Num: num, Den: den}
}

// verifyCut checks an episode container against the source with ffprobe
// alone: the source packets presented inside [from, to) (selected here,
// independently of Split's run), in decode order, must equal the output's
// packets in count, size, flags and SHA-256, with PTS and DTS shifted by
// the first one's PTS; the output starts at 0 and decodes without error.
func verifyCut(t *testing.T, src string, e video.Episode, o video.Output) {
	t.Helper()
	srcStream, outStream := ffprobeStream(t, src), ffprobeStream(t, o.Path)
	for _, k := range []string{"codec_name", "codec_tag_string", "time_base", "extradata_hash", "width", "height"} {
		if srcStream[k] != outStream[k] {
			t.Errorf("episode %d: stream %s: output %q, source %q", e.Index, k, outStream[k], srcStream[k])
		}
	}
	if outStream["start_time"] != "0.000000" {
		t.Errorf("episode %d: output start_time %q, want 0.000000", e.Index, outStream["start_time"])
	}
	tb := parseTB(t, srcStream["time_base"])
	const tol = 1_000_000 // 1 ms
	var want []testtool.Packet
	for _, p := range testtool.FFprobePackets(t, src) {
		if ns := tb.NS(p.PTS); ns >= e.FromNS-tol && ns < e.ToNS-tol {
			want = append(want, p)
		}
	}
	got := testtool.FFprobePackets(t, o.Path)
	if len(got) != len(want) || len(got) != o.Packets || int64(len(got)) != e.Frames {
		t.Fatalf("episode %d: output has %d packets, source interval %d, Split reported %d, metadata %d frames",
			e.Index, len(got), len(want), o.Packets, e.Frames)
	}
	offset := want[0].PTS
	minPTS := got[0].PTS
	var end int64
	for i := range want {
		w, g := want[i], got[i]
		if g.Size != w.Size || g.Hash != w.Hash || g.Flags != w.Flags {
			t.Fatalf("episode %d packet %d: size %d/%d flags %s/%s hash %s/%s", e.Index, i, g.Size, w.Size, g.Flags, w.Flags, g.Hash, w.Hash)
		}
		if g.PTS != w.PTS-offset || g.DTS != w.DTS-offset {
			t.Fatalf("episode %d packet %d: pts %d dts %d, want %d %d (source %d %d shifted by %d)",
				e.Index, i, g.PTS, g.DTS, w.PTS-offset, w.DTS-offset, w.PTS, w.DTS, offset)
		}
		minPTS = min(minPTS, g.PTS)
		end = max(end, g.PTS+g.Duration)
	}
	if minPTS != 0 {
		t.Errorf("episode %d: first PTS %d, want 0", e.Index, minPTS)
	}
	if o.OffsetPTS != offset {
		t.Errorf("episode %d: Split shifted by %d, the first source packet of the interval is at %d", e.Index, o.OffsetPTS, offset)
	}
	if span := tb.NS(end); span != o.SpanNS {
		t.Errorf("episode %d: span per ffprobe %d ns, Split reported %d ns", e.Index, span, o.SpanNS)
	}
	if fi, err := os.Stat(o.Path); err != nil || fi.Size() != o.Bytes {
		t.Errorf("episode %d: %s: stat %v, size vs reported %d", e.Index, o.Path, err, o.Bytes)
	}
	if boxes := topLevelBoxes(t, o.Path); strings.Join(boxes, ",") != "ftyp,moov,mdat" {
		t.Errorf("episode %d: top-level boxes %v, want ftyp,moov,mdat (+faststart)", e.Index, boxes)
	}
	testtool.FFmpegDecodes(t, o.Path)
}

// topLevelBoxes lists the types of an MP4 file's top-level boxes.
func topLevelBoxes(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for len(b) >= 8 {
		size := uint64(binary.BigEndian.Uint32(b))
		hdr := uint64(8)
		if size == 1 && len(b) >= 16 {
			size, hdr = binary.BigEndian.Uint64(b[8:]), 16
		}
		if size < hdr || size > uint64(len(b)) {
			t.Fatalf("%s: bad box size %d", path, size)
		}
		if typ := string(b[4:8]); typ != "free" {
			types = append(types, typ)
		}
		b = b[size:]
	}
	return types
}

// noStrayFiles fails t when dir holds anything but the named files.
func noStrayFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, want)
	}
}

func TestSplitConcatenated(t *testing.T) {
	t.Parallel()
	for _, codec := range []string{"h264", "h264_bframes", "mpeg4", "av1", "hevc"} {
		t.Run(codec, func(t *testing.T) {
			fx := concatenated(t, codec)
			if fx.Skip != "" {
				t.Skip(fx.Skip)
			}
			ctx := context.Background()
			s, err := ScanKeyframes(ctx, fx.Path)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := video.CheckBoundaries(s, "observation.image", "concat_"+codec+".mp4", fx.Episodes, video.Options{FPS: fixFPS})
			if err != nil {
				t.Fatal(err)
			}
			if d := rep.Decide(); !d.Split {
				t.Fatalf("not splittable: %v", d.Reasons)
			}
			if rep.StartsOnKeyframes != 3 || rep.EndsOnKeyframes != 3 || rep.PreRollNS != 0 || rep.TrailingNS != 0 {
				t.Errorf("starts %d ends %d on keyframes, pre-roll %d, trailing %d; want 3 3 0 0",
					rep.StartsOnKeyframes, rep.EndsOnKeyframes, rep.PreRollNS, rep.TrailingNS)
			}
			dir := t.TempDir()
			outs, err := Split(ctx, rep, video.DirDest(dir))
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != len(fx.Episodes) {
				t.Fatalf("%d outputs for %d episodes", len(outs), len(fx.Episodes))
			}
			for i, o := range outs {
				e := fx.Episodes[i]
				if o.Episode != e || filepath.Base(o.Path) != "episode_00000"+strconv.Itoa(i)+".mp4" {
					t.Errorf("output %d: %+v at %s", i, o.Episode, o.Path)
				}
				if want := e.ToNS - e.FromNS; o.SpanNS != want {
					t.Errorf("episode %d: span %d ns, metadata interval %d ns", e.Index, o.SpanNS, want)
				}
				verifyCut(t, fx.Path, e, o)
			}
			noStrayFiles(t, dir, "episode_000000.mp4", "episode_000001.mp4", "episode_000002.mp4")

			// a second run gives the same bytes (bitexact muxing)
			dir2 := t.TempDir()
			outs2, err := Split(ctx, rep, video.DirDest(dir2))
			if err != nil {
				t.Fatal(err)
			}
			for i := range outs {
				a, _ := os.ReadFile(outs[i].Path)
				b, _ := os.ReadFile(outs2[i].Path)
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("episode %d: re-run differs (%d vs %d bytes)", i, len(a), len(b))
				}
			}
		})
	}
}

// TestSplitUnclaimedFootage cuts a subset of the episodes: the footage
// before, between and after them is reported and left out.
func TestSplitUnclaimedFootage(t *testing.T) {
	t.Parallel()
	fx := concatenated(t, "h264_bframes")
	if fx.Skip != "" {
		t.Skip(fx.Skip)
	}
	ep := fx.Episodes
	cases := []struct {
		name                    string
		eps                     []video.Episode
		preRoll, gaps, trailing int64
		files                   []string
	}{
		{"middle episode only", ep[1:2], ep[1].FromNS, 0, ep[2].ToNS - ep[1].ToNS, []string{"episode_000001.mp4"}},
		{"first and last", []video.Episode{ep[0], ep[2]}, 0, ep[2].FromNS - ep[0].ToNS, 0, []string{"episode_000000.mp4", "episode_000002.mp4"}},
	}
	ctx := context.Background()
	s, err := ScanKeyframes(ctx, fx.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := video.CheckBoundaries(s, "cam", "f.mp4", c.eps, video.Options{FPS: fixFPS})
			if err != nil {
				t.Fatal(err)
			}
			if rep.PreRollNS != c.preRoll || rep.GapsNS != c.gaps || rep.TrailingNS != c.trailing {
				t.Errorf("pre-roll %d gaps %d trailing %d, want %d %d %d", rep.PreRollNS, rep.GapsNS, rep.TrailingNS, c.preRoll, c.gaps, c.trailing)
			}
			dir := t.TempDir()
			outs, err := Split(ctx, rep, video.DirDest(dir))
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != len(c.eps) {
				t.Fatalf("%d outputs", len(outs))
			}
			for i, o := range outs {
				verifyCut(t, fx.Path, c.eps[i], o)
			}
			noStrayFiles(t, dir, c.files...)
		})
	}
}

// TestSplitEndInsideGOP: without B-frames an end inside a GOP is cut
// exactly by leaving out the packets after it.
func TestSplitEndInsideGOP(t *testing.T) {
	t.Parallel()
	fx := concatenated(t, "h264")
	if fx.Skip != "" {
		t.Skip(fx.Skip)
	}
	ctx := context.Background()
	s, err := ScanKeyframes(ctx, fx.Path)
	if err != nil {
		t.Fatal(err)
	}
	e := video.Episode{Index: 7, FromNS: 1_000_000_000, ToNS: 1_550_000_000, Frames: 6} // ends between 1.5 and 1.6
	rep, err := video.CheckBoundaries(s, "cam", "f.mp4", []video.Episode{e}, video.Options{FPS: fixFPS})
	if err != nil {
		t.Fatal(err)
	}
	if rep.EndsOnKeyframes != 0 {
		t.Errorf("end counted as on a keyframe")
	}
	outs, err := Split(ctx, rep, video.DirDest(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].DroppedTail != 4 || outs[0].SpanNS != 600_000_000 {
		t.Errorf("dropped %d, span %d; want 4 packets (1.6..1.9 s) dropped and a 0.6 s span", outs[0].DroppedTail, outs[0].SpanNS)
	}
	verifyCut(t, fx.Path, e, outs[0])
}

func TestSplitRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("boundaries miss keyframes", func(t *testing.T) {
		fx := singleStream(t)
		s, err := ScanKeyframes(ctx, fx.Path)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := video.CheckBoundaries(s, "cam", "single.mp4", fx.Episodes, video.Options{FPS: fixFPS})
		if err != nil {
			t.Fatal(err)
		}
		d := rep.Decide()
		if d.Split || len(d.Reasons) != 2 || !strings.Contains(d.Reasons[0], "episode 1: starts at 2.300000s, not on a keyframe (nearest keyframes 2.000000s before and 3.000000s after)") {
			t.Fatalf("decision %+v", d)
		}
		if rep.StartsOnKeyframes != 1 || rep.EndsOnKeyframes != 1 {
			t.Errorf("starts %d ends %d on keyframes, want 1 1", rep.StartsOnKeyframes, rep.EndsOnKeyframes)
		}
		dir := t.TempDir()
		if _, err := Split(ctx, rep, video.DirDest(dir)); !errors.Is(err, video.ErrNotSplittable) {
			t.Fatalf("Split: %v, want ErrNotSplittable", err)
		}
		noStrayFiles(t, dir)
	})

	t.Run("existing output", func(t *testing.T) {
		fx := concatenated(t, "mpeg4")
		s, err := ScanKeyframes(ctx, fx.Path)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := video.CheckBoundaries(s, "cam", "f.mp4", fx.Episodes, video.Options{FPS: fixFPS})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "episode_000002.mp4"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Split(ctx, rep, video.DirDest(dir)); !errors.Is(err, video.ErrExists) {
			t.Fatalf("Split: %v, want ErrExists", err)
		}
		noStrayFiles(t, dir, "episode_000002.mp4")
		if b, _ := os.ReadFile(filepath.Join(dir, "episode_000002.mp4")); string(b) != "mine" {
			t.Errorf("existing file changed")
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		fx := concatenated(t, "mpeg4")
		s, err := ScanKeyframes(ctx, fx.Path)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := video.CheckBoundaries(s, "cam", "f.mp4", fx.Episodes, video.Options{FPS: fixFPS})
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		dir := t.TempDir()
		if _, err := Split(cctx, rep, video.DirDest(dir)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Split: %v, want context.Canceled", err)
		}
		noStrayFiles(t, dir)
		if _, err := ScanKeyframes(cctx, fx.Path); !errors.Is(err, context.Canceled) {
			t.Fatalf("ScanKeyframes: %v, want context.Canceled", err)
		}
	})

	t.Run("file changed after the scan", func(t *testing.T) {
		fx := concatenated(t, "mpeg4")
		other := concatenated(t, "h264")
		if other.Skip != "" {
			t.Skip(other.Skip)
		}
		s, err := ScanKeyframes(ctx, fx.Path)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := video.CheckBoundaries(s, "cam", "f.mp4", fx.Episodes, video.Options{FPS: fixFPS})
		if err != nil {
			t.Fatal(err)
		}
		s.Path = other.Path // as if the file had been replaced
		dir := t.TempDir()
		_, err = Split(ctx, rep, video.DirDest(dir))
		if err == nil || !strings.Contains(err.Error(), "the file changed") {
			t.Fatalf("Split: %v, want a changed-file error", err)
		}
		noStrayFiles(t, dir)
	})
}

// TestSplitConcurrent cuts two cameras at once, as a converter may.
func TestSplitConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fxs := []concatFixture{concatenated(t, "h264_bframes"), concatenated(t, "mpeg4")}
	type result struct {
		outs []video.Output
		err  error
	}
	for _, fx := range fxs {
		if fx.Skip != "" {
			t.Skip(fx.Skip)
		}
	}
	res := make([]result, len(fxs))
	var wg sync.WaitGroup
	for i, fx := range fxs {
		dir := t.TempDir()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := ScanKeyframes(ctx, fx.Path)
			if err != nil {
				res[i].err = err
				return
			}
			rep, err := video.CheckBoundaries(s, "cam", filepath.Base(fx.Path), fx.Episodes, video.Options{FPS: fixFPS})
			if err != nil {
				res[i].err = err
				return
			}
			res[i].outs, res[i].err = Split(ctx, rep, video.DirDest(dir))
		}()
	}
	wg.Wait()
	for i, fx := range fxs {
		if res[i].err != nil {
			t.Fatal(res[i].err)
		}
		if len(res[i].outs) != len(fx.Episodes) {
			t.Fatalf("%s: %d outputs", fx.Path, len(res[i].outs))
		}
		for j, o := range res[i].outs {
			verifyCut(t, fx.Path, fx.Episodes[j], o)
		}
	}
}

// TestSplitModes checks that episode containers get the mode os.Create
// would give them under the process umask (not os.CreateTemp's 0600), and
// that only they are left in the directory.
func TestSplitModes(t *testing.T) {
	t.Parallel()
	fx := concatenated(t, "h264")
	if fx.Skip != "" {
		t.Skip(fx.Skip)
	}
	ctx := context.Background()
	s, err := ScanKeyframes(ctx, fx.Path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := video.CheckBoundaries(s, "cam", "f.mp4", fx.Episodes, video.Options{FPS: fixFPS})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		umask int
		want  os.FileMode
	}{
		{0o022, 0o644},
		{0o077, 0o600},
		{0o002, 0o664},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("umask %03o", c.umask), func(t *testing.T) {
			old := syscall.Umask(c.umask)
			defer syscall.Umask(old)
			dir := t.TempDir()
			outs, err := Split(ctx, rep, video.DirDest(dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs {
				fi, err := os.Stat(o.Path)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != c.want {
					t.Errorf("%s: mode %03o, want %03o", o.Path, got, c.want)
				}
				if fi.Size() != o.Bytes {
					t.Errorf("%s: %d bytes, Split says %d", o.Path, fi.Size(), o.Bytes)
				}
			}
			noStrayFiles(t, dir, "episode_000000.mp4", "episode_000001.mp4", "episode_000002.mp4")
		})
	}
}
