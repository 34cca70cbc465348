package video

import (
	"math"
	"slices"
	"testing"
)

func TestRationalNS(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tb    Rational
		ticks int64
		want  int64
	}{
		{Rational{1, 10240}, 23552, 2_300_000_000},
		{Rational{1, 10240}, 1, 97_657}, // 97656.25 rounds up
		{Rational{1, 10240}, -2048, -200_000_000},
		{Rational{1, 10240}, -1, -97_656}, // ceil(-97656.25)
		{Rational{1001, 30000}, 3, 100_100_000},
		{Rational{1, 90000}, 0, 0},
		{Rational{1, 1}, math.MaxInt64, math.MaxInt64}, // saturates
		{Rational{1, 1}, math.MinInt64, math.MinInt64},
		{Rational{1, 1_000_000_000}, math.MaxInt64, math.MaxInt64}, // exact, no overflow in the 128-bit product
		{Rational{0, 1}, 5, 0},
	} {
		if got := c.tb.NS(c.ticks); got != c.want {
			t.Errorf("%s.NS(%d) = %d, want %d", c.tb, c.ticks, got, c.want)
		}
	}
}

// TestAnalyze derives Reordered and OpenGOP from synthetic packet lists.
func TestAnalyze(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name               string
		scan               *Scan
		reordered, openGOP bool
	}{
		{name: "closed GOPs in order", scan: gopScan(30, 10)},
		{name: "closed GOPs with B-frames", scan: bframeScan(30), reordered: true},
		{name: "open GOP", scan: &Scan{TimeBase: Rational{1, 10}, Packets: []Packet{
			{PTS: 0, Key: true}, {PTS: 3}, {PTS: 1}, {PTS: 2}, {PTS: 6, Key: true}, {PTS: 4}, {PTS: 5}}},
			reordered: true, openGOP: true},
		{name: "leading pictures of a discarded keyframe", scan: &Scan{TimeBase: Rational{1, 10}, Packets: []Packet{
			{PTS: 2, Key: true, Discard: true}, {PTS: 0}, {PTS: 1}}}, reordered: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.scan.Reordered, c.scan.OpenGOP = !c.reordered, !c.openGOP
			c.scan.Analyze()
			if c.scan.Reordered != c.reordered || c.scan.OpenGOP != c.openGOP {
				t.Fatalf("reordered %v, open GOP %v; want %v, %v", c.scan.Reordered, c.scan.OpenGOP, c.reordered, c.openGOP)
			}
		})
	}
}

// TestFramesNS selects an interval's frames in presentation order, rounded
// up to whole nanoseconds, leaving out discarded packets.
func TestFramesNS(t *testing.T) {
	t.Parallel()
	// 30 fps in 1/15360: a frame every 512 ticks, 33333333.33 ns; decode
	// order with B-frames (I P B B), the first packet discarded.
	s := &Scan{TimeBase: Rational{1, 15360}, Packets: []Packet{
		{PTS: -512, Key: true, Discard: true}, {PTS: 0, Key: true}, {PTS: 1536}, {PTS: 512}, {PTS: 1024},
		{PTS: 2048, Key: true}, {PTS: 2560}}}
	for _, c := range []struct {
		name          string
		from, to, tol int64
		want          []int64
	}{
		{"all", -1e9, 1e9, 0, []int64{0, 33_333_334, 66_666_667, 100_000_000, 133_333_334, 166_666_667}},
		{"second frame on", 33_333_334, 1e9, 0, []int64{33_333_334, 66_666_667, 100_000_000, 133_333_334, 166_666_667}},
		{"an interval declared a little early", 33_000_000, 100_000_000, 1_000_000, []int64{33_333_334, 66_666_667}},
		{"past the end", 2e9, 3e9, 0, nil},
	} {
		got := s.FramesNS(c.from, c.to, c.tol)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: FramesNS(%d, %d, %d) = %v, want %v", c.name, c.from, c.to, c.tol, got, c.want)
		}
	}
}
