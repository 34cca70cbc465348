package video

import (
	"errors"
	"strings"
	"testing"
)

const sec = int64(1e9)

func TestValidateEpisodes(t *testing.T) {
	t.Parallel()
	ep := func(i int, from, to float64, frames int64) Episode {
		return Episode{Index: i, FromNS: SecondsToNS(from), ToNS: SecondsToNS(to), Frames: frames}
	}
	cases := []struct {
		name string
		eps  []Episode
		o    Options
		want []string // one substring per expected problem, in order; nil = valid
	}{
		{name: "contiguous", eps: []Episode{ep(0, 0, 2.3, 23), ep(1, 2.3, 5.3, 30)}, o: Options{FPS: 10}},
		{name: "float jitter, unsorted input", eps: []Episode{ep(1, 2.3000000000000003, 5.3, 30), ep(0, 0, 2.3, 23)}, o: Options{FPS: 10}},
		{name: "one frame off is tolerated", eps: []Episode{ep(0, 0, 2.3, 24)}, o: Options{FPS: 10}},
		{name: "gap between episodes", eps: []Episode{ep(0, 0, 2, 20), ep(1, 3, 6, 30)}, o: Options{FPS: 10}},
		{name: "empty", eps: []Episode{ep(4, 1, 1, 1)}, o: Options{FPS: 10},
			want: []string{"cam: f.mp4: episode 4: empty or reversed interval [1.000000s, 1.000000s)"}},
		{name: "reversed", eps: []Episode{ep(4, 2, 1, 10)}, o: Options{FPS: 10},
			want: []string{"episode 4: empty or reversed interval [2.000000s, 1.000000s)"}},
		{name: "overlap", eps: []Episode{ep(0, 0, 2.3, 23), ep(1, 2.2, 5.2, 30)}, o: Options{FPS: 10},
			want: []string{"episode 1: interval [2.200000s, 5.200000s) overlaps episode 0's [0.000000s, 2.300000s)"}},
		{name: "overlap with an earlier, longer episode", eps: []Episode{ep(0, 0, 10, 100), ep(1, 2, 3, 10), ep(2, 4, 5, 10)}, o: Options{FPS: 10},
			want: []string{"episode 1: interval [2.000000s, 3.000000s) overlaps episode 0's", "episode 2: interval [4.000000s, 5.000000s) overlaps episode 0's"}},
		{name: "length disagrees with frames", eps: []Episode{ep(7, 0, 2.3, 25)}, o: Options{FPS: 10},
			want: []string{"episode 7: interval [0.000000s, 2.300000s) covers 23.00 frames at 10 fps but the episode has 25 (tolerance 1 frames)"}},
		{name: "looser tolerance", eps: []Episode{ep(7, 0, 2.3, 25)}, o: Options{FPS: 10, ToleranceFrames: 2}},
		{name: "tighter tolerance", eps: []Episode{ep(7, 0, 2.3, 24)}, o: Options{FPS: 10, ToleranceFrames: 0.5},
			want: []string{"covers 23.00 frames at 10 fps but the episode has 24 (tolerance 0.5 frames)"}},
		{name: "no frames", eps: []Episode{ep(3, 0, 1, 0)}, o: Options{FPS: 10}, want: []string{"episode 3: frame count 0 is not positive"}},
		{name: "negative start", eps: []Episode{ep(3, -1, 1, 20)}, o: Options{FPS: 10}, want: []string{"episode 3: interval starts before the file, at -1.000000s"}},
		{name: "duplicate", eps: []Episode{ep(3, 0, 1, 10), ep(3, 1, 2, 10)}, o: Options{FPS: 10}, want: []string{"episode 3: listed twice"}},
		{name: "no fps", eps: []Episode{ep(0, 0, 1, 10)}, o: Options{}, want: []string{"cam: f.mp4: fps 0 is not a positive number"}},
		{name: "no episodes", o: Options{FPS: 10}, want: []string{"cam: f.mp4: no episodes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateEpisodes("cam", "f.mp4", c.eps, c.o)
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected refusal: %v", err)
				}
				return
			}
			var ie *InconsistentError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInconsistent) {
				t.Fatalf("got %v, want an *InconsistentError", err)
			}
			if len(ie.Problems) != len(c.want) {
				t.Fatalf("%d problems, want %d: %v", len(ie.Problems), len(c.want), err)
			}
			for i, w := range c.want {
				if !strings.Contains(ie.Problems[i].String(), w) {
					t.Errorf("problem %d: %q, want it to contain %q", i, ie.Problems[i], w)
				}
			}
			if !strings.HasPrefix(err.Error(), "video: cam: f.mp4: ") {
				t.Errorf("error %q lacks its location", err)
			}
		})
	}
}

// gopScan is a synthetic 10 fps stream (time base 1/10: one tick per
// frame) of n frames with a keyframe every g, no reordering.
func gopScan(n, g int) *Scan {
	s := &Scan{Path: "synthetic.mp4", Codec: "h264", TimeBase: Rational{1, 10}, VideoStreams: 1}
	for i := 0; i < n; i++ {
		s.Packets = append(s.Packets, Packet{PTS: int64(i), DTS: int64(i), Duration: 1, Size: 100, Key: i%g == 0})
	}
	s.Analyze()
	return s
}

// bframeScan is like gopScan with GOPs of 10 in the decode order
// I P B B P B B P B B (closed GOPs).
func bframeScan(n int) *Scan {
	s := &Scan{Path: "synthetic.mp4", Codec: "h264", TimeBase: Rational{1, 10}, VideoStreams: 1}
	order := []int64{0, 3, 1, 2, 6, 4, 5, 9, 7, 8}
	for i := 0; i < n; i++ {
		k := int64(i / 10 * 10)
		s.Packets = append(s.Packets, Packet{PTS: k + order[i%10], DTS: int64(i) - 1, Duration: 1, Size: 100, Key: i%10 == 0})
	}
	s.Analyze()
	return s
}

func TestCheckBoundaries(t *testing.T) {
	t.Parallel()
	eps := func(bounds ...float64) []Episode {
		var out []Episode
		for i := 0; i+1 < len(bounds); i++ {
			a, b := SecondsToNS(bounds[i]), SecondsToNS(bounds[i+1])
			out = append(out, Episode{Index: i, FromNS: a, ToNS: b, Frames: (b - a) / 1e8})
		}
		return out
	}
	type run struct {
		first, end int
		span       int64
		dropped    int
	}
	cases := []struct {
		name       string
		scan       func() *Scan
		eps        []Episode
		o          Options
		split      bool
		reasons    []string // substrings, in order
		runs       []run
		starts     int
		ends       int
		preRoll    int64
		trailing   int64
		gaps       int64
		warnings   int
		refusal    string
		toleranceN int64
	}{
		{name: "aligned", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(0, 1, 2, 3), split: true,
			runs: []run{{0, 10, sec, 0}, {10, 20, sec, 0}, {20, 30, sec, 0}}, starts: 3, ends: 3},
		{name: "jitter within 1 ms", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(0, 1.0005, 3), split: true,
			runs: []run{{0, 10, sec, 0}, {10, 30, 2 * sec, 0}}, starts: 2, ends: 2},
		{name: "2 ms off is not on the keyframe", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(0, 1.002, 3),
			reasons: []string{"episode 1: starts at 1.002000s, not on a keyframe (nearest keyframes 1.000000s before and 2.000000s after)"},
			starts:  1, ends: 1},
		{name: "start inside a GOP", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(0, 1.5, 3),
			reasons: []string{"episode 1: starts at 1.500000s, not on a keyframe (nearest keyframes 1.000000s before and 2.000000s after)"},
			starts:  1, ends: 1},
		{name: "end inside a GOP, nothing reordered: exact cut", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(0, 1.5),
			split: true, runs: []run{{0, 15, 1.5e9, 5}}, starts: 1, ends: 0, trailing: 1.5e9},
		{name: "gap between episodes", scan: func() *Scan { return gopScan(30, 10) }, eps: []Episode{
			{Index: 0, FromNS: 0, ToNS: sec, Frames: 10}, {Index: 1, FromNS: 2 * sec, ToNS: 3 * sec, Frames: 10}},
			split: true, runs: []run{{0, 10, sec, 0}, {20, 30, sec, 0}}, starts: 2, ends: 2, gaps: sec},
		{name: "pre-roll and trailing footage", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(1, 2),
			split: true, runs: []run{{10, 20, sec, 0}}, starts: 1, ends: 1, preRoll: sec, trailing: sec},
		{name: "B-frames aligned", scan: func() *Scan { return bframeScan(30) }, eps: eps(0, 1, 3), split: true,
			runs: []run{{0, 10, sec, 0}, {10, 30, 2 * sec, 0}}, starts: 2, ends: 2},
		{name: "B-frames, end inside a GOP", scan: func() *Scan { return bframeScan(30) }, eps: eps(0, 1.5),
			reasons: []string{"episode 0: ends at 1.500000s, not on a keyframe (nearest keyframes 1.000000s before and 2.000000s after), and B-frames"},
			starts:  1, ends: 0, trailing: 1.5e9},
		{name: "discard-flagged packet inside", scan: func() *Scan { s := gopScan(30, 10); s.Packets[14].Discard = true; return s },
			eps: eps(0, 1, 2, 3), reasons: []string{"episode 1: packet #14 (PTS 1.400000s) is flagged discard"}, starts: 3, ends: 3},
		{name: "leading picture of an open GOP", scan: func() *Scan {
			s := gopScan(30, 10)
			// keyframe #9 (1.0 s) is decoded before #10 (0.9 s), which it leads
			s.Packets[9].PTS, s.Packets[9].Key = 10, true
			s.Packets[10].PTS, s.Packets[10].Key = 9, false
			s.Analyze()
			return s
		}, eps: eps(0, 1, 2, 3), reasons: []string{
			"episode 0: packet #10 (PTS 0.900000s) is inside the interval but outside the decode-order run #0..#8",
			"episode 1: packet #10 (PTS 0.900000s) is presented before the keyframe at 1.000000s: open GOP",
		}, starts: 3, ends: 3},
		{name: "other streams", scan: func() *Scan { s := gopScan(30, 10); s.OtherStreams = []string{"audio"}; return s },
			eps: eps(0, 1, 2, 3), reasons: []string{"the file has 1 stream(s) besides the video (audio)"}, starts: 3, ends: 3,
			runs: []run{{0, 10, sec, 0}, {10, 20, sec, 0}, {20, 30, sec, 0}}},
		{name: "video frames disagree with the metadata", scan: func() *Scan { return gopScan(30, 10) },
			eps: []Episode{{Index: 0, FromNS: 0, ToNS: 3 * sec, Frames: 15}}, o: Options{FPS: 5},
			split: true, runs: []run{{0, 30, 3 * sec, 0}}, starts: 1, ends: 1, warnings: 1},
		{name: "interval past the end", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(2, 3.2),
			refusal: "cam: f.mp4: episode 0: interval ends at 3.200000s, more than 1 frame(s) after the end of the video (3.000000s)"},
		{name: "interval after the end", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(2, 3, 4),
			refusal: "cam: f.mp4: episode 1: interval starts at 3.000000s, at or after the end of the video (3.000000s)"},
		{name: "metadata refusal comes first", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(2, 1),
			refusal: "episode 0: empty or reversed interval"},
		{name: "tolerance capped at half a frame", scan: func() *Scan { return gopScan(30, 10) }, eps: eps(0, 1, 2, 3),
			o: Options{FPS: 1000, ToleranceFrames: 1000}, split: true, starts: 3, ends: 3, toleranceN: 499_999,
			runs: []run{{0, 10, sec, 0}, {10, 20, sec, 0}, {20, 30, sec, 0}}, warnings: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			if o.FPS == 0 {
				o.FPS = 10
			}
			rep, err := CheckBoundaries(c.scan(), "cam", "f.mp4", c.eps, o)
			if c.refusal != "" {
				if !errors.Is(err, ErrInconsistent) || !strings.Contains(err.Error(), c.refusal) {
					t.Fatalf("got %v, want a refusal containing %q", err, c.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := rep.Decide()
			if d.Split != c.split {
				t.Errorf("split %v, want %v (reasons %q)", d.Split, c.split, d.Reasons)
			}
			if c.reasons != nil || len(d.Reasons) > 0 {
				if len(d.Reasons) != len(c.reasons) {
					t.Fatalf("reasons %q, want %d matching %q", d.Reasons, len(c.reasons), c.reasons)
				}
				for i, w := range c.reasons {
					if !strings.Contains(d.Reasons[i], w) {
						t.Errorf("reason %d: %q, want it to contain %q", i, d.Reasons[i], w)
					}
				}
			}
			if c.runs != nil {
				for i, w := range c.runs {
					r := rep.Episodes[i].Run
					if r.First != w.first || r.End != w.end || r.SpanNS != w.span || r.DroppedTail != w.dropped {
						t.Errorf("episode %d run %+v, want %+v", i, r, w)
					}
				}
			}
			if rep.StartsOnKeyframes != c.starts || rep.EndsOnKeyframes != c.ends || rep.PreRollNS != c.preRoll ||
				rep.TrailingNS != c.trailing || rep.GapsNS != c.gaps || len(rep.Warnings) != c.warnings {
				t.Errorf("starts %d ends %d pre-roll %d trailing %d gaps %d warnings %q; want %d %d %d %d %d %d",
					rep.StartsOnKeyframes, rep.EndsOnKeyframes, rep.PreRollNS, rep.TrailingNS, rep.GapsNS, rep.Warnings,
					c.starts, c.ends, c.preRoll, c.trailing, c.gaps, c.warnings)
			}
			if c.toleranceN != 0 && rep.ToleranceNS != c.toleranceN {
				t.Errorf("tolerance %d ns, want %d", rep.ToleranceNS, c.toleranceN)
			}
		})
	}
}

// FuzzCheckBoundaries feeds arbitrary episode intervals (tenths of a
// second) to CheckBoundaries over synthetic streams with and without
// B-frames, and checks what Split relies on whenever the report says the
// file can be cut: runs in decode order, disjoint, each starting on a
// keyframe at the episode start, holding every packet presented inside the
// interval and none presented before its keyframe.
func FuzzCheckBoundaries(f *testing.F) {
	f.Add([]byte{0, 10, 10, 20, 20, 30}, false, uint8(10))
	f.Add([]byte{0, 10, 10, 30}, true, uint8(10))
	f.Add([]byte{0, 15}, false, uint8(10))
	f.Add([]byte{10, 20}, true, uint8(5))
	f.Add([]byte{0, 23, 23, 53, 53, 70}, true, uint8(1))
	f.Fuzz(func(t *testing.T, bounds []byte, bframes bool, gop uint8) {
		if gop == 0 || len(bounds) < 2 || len(bounds) > 40 {
			return
		}
		var s *Scan
		if bframes {
			s = bframeScan(70)
		} else {
			s = gopScan(70, int(gop))
		}
		var eps []Episode
		for i := 0; i+1 < len(bounds); i += 2 {
			a, b := int64(bounds[i]), int64(bounds[i+1])
			eps = append(eps, Episode{Index: i / 2, FromNS: a * 1e8, ToNS: b * 1e8, Frames: max(b-a, 1)})
		}
		rep, err := CheckBoundaries(s, "cam", "f.mp4", eps, Options{FPS: 10})
		if err != nil {
			if !errors.Is(err, ErrInconsistent) {
				t.Fatalf("refusal %v does not match ErrInconsistent", err)
			}
			return
		}
		if !rep.Decide().Split {
			return
		}
		prevEnd := 0
		for _, e := range rep.Episodes {
			r := e.Run
			if r.First < prevEnd || r.End <= r.First || r.End > len(s.Packets) {
				t.Fatalf("episode %d: run %+v after %d", e.Index, r, prevEnd)
			}
			prevEnd = r.End
			k := s.Packets[r.First]
			if !k.Key || k.PTS != r.OffsetPTS || s.TimeBase.NS(k.PTS) != e.FromNS {
				t.Fatalf("episode %d: run starts on %+v, interval from %d", e.Index, k, e.FromNS)
			}
			for i, p := range s.Packets {
				in := i >= r.First && i < r.End
				t0 := s.TimeBase.NS(p.PTS)
				if in && p.PTS < r.OffsetPTS {
					t.Fatalf("episode %d: packet #%d presented before the keyframe", e.Index, i)
				}
				if !in && t0 >= e.FromNS && t0 < e.ToNS {
					t.Fatalf("episode %d: packet #%d (%d ns) of the interval is outside run %+v", e.Index, i, t0, r)
				}
			}
		}
	})
}
