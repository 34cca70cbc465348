package video

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Rational is a stream time base: one tick lasts Num/Den seconds.
type Rational struct {
	Num, Den int64
}

// String formats the time base as "num/den".
func (r Rational) String() string { return fmt.Sprintf("%d/%d", r.Num, r.Den) }

// NS converts ticks to nanoseconds, rounding up (toward +inf) when the
// tick does not fall on a whole nanosecond. Rounding up keeps a frame's
// nanosecond PTS at or after its true PTS, so "the frame with pts <= t"
// selects that frame at t = NS(pts). Results saturate at the int64 range.
func (r Rational) NS(ticks int64) int64 {
	if r.Den <= 0 || r.Num <= 0 {
		return 0
	}
	neg := ticks < 0
	a := uint64(ticks)
	if neg {
		a = uint64(-ticks) // ticks == MinInt64 wraps to itself, which is still |MinInt64| as uint64
	}
	// |ticks| * Num * 1e9 / Den, exact in 128 bits.
	hi, lo := bits.Mul64(a, uint64(r.Num)*1e9)
	if hi >= uint64(r.Den) {
		if neg {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	q, rem := bits.Div64(hi, lo, uint64(r.Den))
	if !neg && rem != 0 {
		q++ // ceil for positive values
	}
	// for negative values, truncating |x| is ceil(x)
	if q > math.MaxInt64 {
		if neg {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	if neg {
		return -int64(q)
	}
	return int64(q)
}

// Packet is the timing of one video packet as the demuxer returns it, in
// stream time-base ticks. Timestamps are after the input's edit list.
type Packet struct {
	PTS, DTS, Duration int64
	Size               int
	// Key is set on packets a decoder can start from (AV_PKT_FLAG_KEY).
	Key bool
	// Discard marks packets the demuxer wants dropped after decoding
	// (AV_PKT_FLAG_DISCARD), e.g. pictures before an input edit list starts.
	Discard bool
}

// Scan is the packet timing of a file's video stream, read in one demux
// pass without decoding.
type Scan struct {
	// Path is the file scanned, or Input.Name for a scan of an Input.
	Path string
	// Input is the Input scanned (Engine.ScanInput), which Split reads
	// instead of opening Path; nil for a file.
	Input       *Input
	StreamIndex int    // index of the video stream in the container
	Codec       string // libav codec name, e.g. "h264", "av1", "mpeg4"
	TimeBase    Rational
	// StartTime, Duration and HeaderFrames are what the container header
	// declares (ticks; HeaderFrames is nb_frames); 0 or NOPTS when absent.
	StartTime, Duration, HeaderFrames int64
	AvgFrameRate                      Rational
	// Width and Height come from the header; MPEG-4 part 2 in MP4 leaves
	// them 0 until decoding, which a scan does not do.
	Width, Height int
	// VideoStreams counts the video streams; the first one is scanned.
	VideoStreams int
	// OtherStreams names the media type of every non-video stream
	// (e.g. "audio"); a per-episode cut copies only the video stream.
	OtherStreams []string
	// Packets holds every packet of the scanned stream in decode order.
	Packets []Packet
	// Reordered is set when PTS is not increasing in decode order
	// (B-frames): DTS then runs ahead of PTS.
	Reordered bool
	// OpenGOP is set when some keyframe is followed, before the next
	// keyframe in decode order, by a packet presented before it (leading
	// pictures that reference the previous GOP).
	OpenGOP bool
}

// Frames returns the number of video packets, one per frame for the
// codecs LeRobot writes.
func (s *Scan) Frames() int { return len(s.Packets) }

// Keyframes returns the PTS (ticks) of every keyframe not flagged discard,
// in decode order.
func (s *Scan) Keyframes() []int64 {
	var ks []int64
	for _, p := range s.Packets {
		if p.Key && !p.Discard {
			ks = append(ks, p.PTS)
		}
	}
	return ks
}

// FootageNS returns the presentation span of the packets not flagged
// discard, [start, end) in nanoseconds: the smallest PTS and the largest
// PTS + duration. ok is false when there is no such packet.
func (s *Scan) FootageNS() (start, end int64, ok bool) {
	first := true
	for _, p := range s.Packets {
		if p.Discard {
			continue
		}
		a, b := s.TimeBase.NS(p.PTS), s.TimeBase.NS(p.PTS+p.Duration)
		if first || a < start {
			start = a
		}
		if first || b > end {
			end = b
		}
		first = false
	}
	return start, end, !first
}

// Analyze sets Reordered and OpenGOP from Packets. An Engine calls it
// once the packets are read.
func (s *Scan) Analyze() {
	s.Reordered, s.OpenGOP = false, false
	key := -1
	for i, p := range s.Packets {
		if i > 0 && p.PTS < s.Packets[i-1].PTS {
			s.Reordered = true
		}
		if p.Key {
			key = i
			continue
		}
		if key >= 0 && !p.Discard && !s.Packets[key].Discard && p.PTS < s.Packets[key].PTS {
			s.OpenGOP = true
		}
	}
}

// FramesNS returns the presentation times, in nanoseconds (NS: rounded up),
// of the packets not flagged discard whose time falls in [fromNS-tol,
// toNS-tol), sorted: the frames of an interval in presentation order, the
// k-th being frame k of the episode it holds. The tolerance is the one
// CheckBoundaries counts an episode's packets with.
func (s *Scan) FramesNS(fromNS, toNS, tol int64) []int64 {
	var out []int64
	for _, p := range s.Packets {
		if p.Discard {
			continue
		}
		if t := s.TimeBase.NS(p.PTS); t >= fromNS-tol && t < toNS-tol {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}
