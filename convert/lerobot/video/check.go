package video

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Episode is one episode's interval in a camera file, as the dataset
// metadata declares it: half-open [FromNS, ToNS) nanoseconds relative to
// the start of the file, and its frame count (LeRobot's "length").
type Episode struct {
	Index        int // episode_index
	FromNS, ToNS int64
	Frames       int64
}

// SecondsToNS converts LeRobot's float seconds (from_timestamp,
// to_timestamp) to integer nanoseconds, rounding to nearest, as the
// reference converter does.
// Values beyond the int64 range saturate (an episode length of 10^15
// frames must not wrap to a negative time); NaN gives 0.
func SecondsToNS(s float64) int64 {
	ns := math.Round(s * 1e9)
	switch {
	case math.IsNaN(ns):
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	}
	return int64(ns)
}

// DefaultToleranceFrames is how many frames an interval's length may differ
// from the episode's frame count (the reference's --tolerance-frames).
const DefaultToleranceFrames = 1.0

// DefaultBoundaryTolerance is how close to a keyframe's PTS an episode
// boundary must be to count as on it. It is the reference converter's
// ALIGNMENT_TOLERANCE_S. LeRobot's cumulative float sums are off by ~1e-15 s
// (2.3000000000000003), far below it, and LeRobot's own decoder accepts
// 0.1 ms, so a boundary farther than 1 ms from every frame is wrong for
// LeRobot too. It is capped at half a frame (see Options.BoundaryTolerance).
const DefaultBoundaryTolerance = time.Millisecond

// Options tune CheckBoundaries.
type Options struct {
	// FPS is the dataset's frame rate (info.json "fps"); it must be > 0.
	FPS float64
	// ToleranceFrames is how many frames (to-from)*FPS may differ from an
	// episode's Frames. 0 means DefaultToleranceFrames; to demand a near
	// exact match pass a small value such as 1e-6.
	ToleranceFrames float64
	// BoundaryTolerance is how close a boundary must be to a keyframe PTS.
	// 0 means DefaultBoundaryTolerance. It is capped at just under half a
	// frame (1/(2*FPS)), so a boundary can never match a neighbouring frame.
	BoundaryTolerance time.Duration
}

func (o Options) toleranceFrames() float64 {
	if o.ToleranceFrames == 0 {
		return DefaultToleranceFrames
	}
	return o.ToleranceFrames
}

func (o Options) boundaryTolerance() int64 {
	tol := int64(o.BoundaryTolerance)
	if tol <= 0 {
		tol = int64(DefaultBoundaryTolerance)
	}
	if o.FPS > 0 {
		if half := int64(0.5e9/o.FPS) - 1; half < tol {
			tol = half
		}
	}
	if tol < 1 {
		tol = 1
	}
	return tol
}

// ErrInconsistent is matched (errors.Is) by every refusal of episode
// metadata, so a caller can map it to "invalid input".
var ErrInconsistent = errors.New("video metadata is inconsistent")

// Problem is one reason to refuse a file's episode metadata.
type Problem struct {
	Key     string // video feature, e.g. "observation.images.top"
	File    string // camera file, as the caller names it
	Episode int    // episode_index, or -1 when the problem is the file's
	Reason  string
}

// String formats the problem as "key: file: episode N: reason".
func (p Problem) String() string {
	if p.Episode < 0 {
		return fmt.Sprintf("%s: %s: %s", p.Key, p.File, p.Reason)
	}
	return fmt.Sprintf("%s: %s: episode %d: %s", p.Key, p.File, p.Episode, p.Reason)
}

// InconsistentError lists every problem found in one file's episode
// metadata. It matches ErrInconsistent.
type InconsistentError struct {
	Problems []Problem
}

// Error lists every problem, separated by "; ".
func (e *InconsistentError) Error() string {
	var b strings.Builder
	b.WriteString("video: ")
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Is reports whether target is ErrInconsistent.
func (e *InconsistentError) Is(target error) bool { return target == ErrInconsistent }

// ValidateEpisodes checks one file's episode metadata without looking at
// the video: fps must be positive; intervals non-empty, not reversed, not
// overlapping (after sorting by FromNS); frame counts positive; and
// (ToNS-FromNS)*FPS within ToleranceFrames of Frames. It returns nil or an
// *InconsistentError naming key, file, episode and reason for every problem.
func ValidateEpisodes(key, file string, eps []Episode, o Options) error {
	var probs []Problem
	add := func(ep int, format string, args ...any) {
		probs = append(probs, Problem{Key: key, File: file, Episode: ep, Reason: fmt.Sprintf(format, args...)})
	}
	if !(o.FPS > 0) || math.IsInf(o.FPS, 0) {
		add(-1, "fps %g is not a positive number; cannot relate intervals to frame counts", o.FPS)
	}
	if len(eps) == 0 {
		add(-1, "no episodes")
	}
	tolFrames := o.toleranceFrames()
	sorted := sortedEpisodes(eps)
	seen := map[int]bool{}
	var prev *Episode
	for i := range sorted {
		e := &sorted[i]
		if seen[e.Index] {
			add(e.Index, "listed twice for this file")
		}
		seen[e.Index] = true
		if e.FromNS < 0 {
			add(e.Index, "interval starts before the file, at %s", fmtNS(e.FromNS))
		}
		if e.ToNS <= e.FromNS {
			add(e.Index, "empty or reversed interval [%s, %s)", fmtNS(e.FromNS), fmtNS(e.ToNS))
			continue
		}
		if prev != nil && e.FromNS < prev.ToNS {
			add(e.Index, "interval [%s, %s) overlaps episode %d's [%s, %s)",
				fmtNS(e.FromNS), fmtNS(e.ToNS), prev.Index, fmtNS(prev.FromNS), fmtNS(prev.ToNS))
		}
		if e.Frames <= 0 {
			add(e.Index, "frame count %d is not positive", e.Frames)
		} else if o.FPS > 0 {
			covered := float64(e.ToNS-e.FromNS) / 1e9 * o.FPS
			if math.Abs(covered-float64(e.Frames)) > tolFrames {
				add(e.Index, "interval [%s, %s) covers %.2f frames at %g fps but the episode has %d (tolerance %g frames)",
					fmtNS(e.FromNS), fmtNS(e.ToNS), covered, o.FPS, e.Frames, tolFrames)
			}
		}
		if prev == nil || e.ToNS > prev.ToNS {
			prev = e
		}
	}
	if len(probs) > 0 {
		return &InconsistentError{Problems: probs}
	}
	return nil
}

// sortedEpisodes returns a copy of eps sorted by FromNS, then Index.
func sortedEpisodes(eps []Episode) []Episode {
	s := append([]Episode(nil), eps...)
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].FromNS != s[j].FromNS {
			return s[i].FromNS < s[j].FromNS
		}
		return s[i].Index < s[j].Index
	})
	return s
}

// fmtNS formats nanoseconds as seconds with 6 decimals, e.g. "2.300000s".
func fmtNS(ns int64) string {
	sign, a := "", uint64(ns)
	if ns < 0 {
		sign, a = "-", uint64(-(ns+1))+1 // |MinInt64| without overflow
	}
	return fmt.Sprintf("%s%d.%06ds", sign, a/1e9, a%1e9/1e3)
}

// Boundary is one end of an episode interval compared with the keyframes.
type Boundary struct {
	NS int64 // the metadata time, relative to the file
	// Keyframe is set when a keyframe's PTS is within the tolerance;
	// KeyframeNS is then that keyframe's PTS in nanoseconds.
	Keyframe   bool
	KeyframeNS int64
	// StreamEdge is set for an end at or after the end of the footage (the
	// end of the file is as good a cut as a keyframe).
	StreamEdge bool
	// Before and After are the nearest keyframe PTS (ns) strictly before
	// and after NS beyond the tolerance, or -1 when there is none; they
	// make messages about misses actionable.
	Before, After int64
}

// OK reports whether the boundary can be cut without re-encoding.
func (b Boundary) OK() bool { return b.Keyframe || b.StreamEdge }

// Run is the decode-order packet range [First, End) of Scan.Packets that a
// packet copy of one episode takes.
type Run struct {
	First, End int
	// OffsetPTS is the PTS (ticks) of the episode's first keyframe,
	// subtracted from every PTS and DTS so the output starts at 0.
	OffsetPTS int64
	// SpanNS is the output's presentation span: the largest PTS+duration
	// in the run minus OffsetPTS, in nanoseconds.
	SpanNS int64
	// DroppedTail counts packets presented at or after the episode's end
	// that were left out (exact, since nothing is reordered); KeptTail
	// counts such packets kept because B-frames may reference them.
	DroppedTail, KeptTail int
}

// Packets returns the number of packets the run copies.
func (r Run) Packets() int { return r.End - r.First }

// EpisodeReport is the check of one episode against the video.
type EpisodeReport struct {
	Episode
	Start, End Boundary
	// Packets counts the video packets presented inside [FromNS, ToNS)
	// (within the boundary tolerance).
	Packets int
	// Run is the packet range a cut copies; valid only when Problems is
	// empty.
	Run Run
	// Problems say why this episode cannot be cut by packet copy.
	Problems []string
}

// Report is the result of CheckBoundaries for one camera file.
type Report struct {
	Key, File string
	Scan      *Scan
	Options   Options
	// Episodes are sorted by FromNS.
	Episodes []EpisodeReport
	// ToleranceNS is the boundary tolerance used.
	ToleranceNS int64
	// FootageStartNS and FootageEndNS are the presentation span of the
	// video (packets not flagged discard).
	FootageStartNS, FootageEndNS int64
	// PreRollNS is footage before the first episode; TrailingNS footage
	// after the last one. Both are 0 when within the tolerance. A cut
	// drops them.
	PreRollNS, TrailingNS int64
	// GapsNS is the footage between consecutive episodes (each gap counted
	// when longer than the tolerance). A cut drops it too.
	GapsNS int64
	// StartsOnKeyframes and EndsOnKeyframes count episode starts and ends
	// that land on a keyframe (an end at the end of the footage counts).
	StartsOnKeyframes, EndsOnKeyframes int
	// Warnings are facts the plan should show that do not prevent a cut,
	// e.g. an interval holding more or fewer video frames than declared.
	Warnings []string
}

// Decision says whether a file can be cut into one container per episode.
type Decision struct {
	Split bool
	// Reasons say why not, one per problem (empty when Split is true).
	Reasons []string
}

// Decide returns whether the file can be split by packet copy: every
// episode start is on a keyframe, every end is on a keyframe, at the end
// of the footage or (when nothing is reordered) cut exactly by leaving out
// the packets after it, no episode has open-GOP leading pictures or
// discard-flagged packets, and the file has no stream besides the video.
// Otherwise the caller keeps the file whole and addresses episodes by
// interval; nothing is ever re-encoded.
func (r *Report) Decide() Decision {
	var d Decision
	if n := len(r.Scan.OtherStreams); n > 0 {
		d.Reasons = append(d.Reasons, fmt.Sprintf("the file has %d stream(s) besides the video (%s); a per-episode cut would drop them",
			n, strings.Join(r.Scan.OtherStreams, ", ")))
	}
	if r.Scan.VideoStreams > 1 {
		d.Reasons = append(d.Reasons, fmt.Sprintf("the file has %d video streams; a per-episode cut would keep only the first", r.Scan.VideoStreams))
	}
	for _, e := range r.Episodes {
		for _, p := range e.Problems {
			d.Reasons = append(d.Reasons, fmt.Sprintf("episode %d: %s", e.Index, p))
		}
	}
	d.Split = len(d.Reasons) == 0
	return d
}

// CheckBoundaries validates eps (ValidateEpisodes, plus intervals reaching
// past the end of the video by more than ToleranceFrames) and compares
// every episode start and end with the keyframes of scan. key and file name
// the feature and camera file in errors. Refusals come back as an
// *InconsistentError before anything could be written; whether the file
// can be cut is the report's Decide.
func CheckBoundaries(scan *Scan, key, file string, eps []Episode, o Options) (*Report, error) {
	if err := ValidateEpisodes(key, file, eps, o); err != nil {
		return nil, err
	}
	fStart, fEnd, ok := scan.FootageNS()
	if !ok {
		return nil, &InconsistentError{Problems: []Problem{{Key: key, File: file, Episode: -1,
			Reason: "the video stream has no packets to present"}}}
	}
	tol := o.boundaryTolerance()
	slack := int64(o.toleranceFrames() * 1e9 / o.FPS)
	var probs []Problem
	for _, e := range eps {
		switch {
		case e.FromNS >= fEnd-tol:
			probs = append(probs, Problem{key, file, e.Index, fmt.Sprintf("interval starts at %s, at or after the end of the video (%s)",
				fmtNS(e.FromNS), fmtNS(fEnd))})
		case e.ToNS > fEnd+slack:
			probs = append(probs, Problem{key, file, e.Index, fmt.Sprintf("interval ends at %s, more than %g frame(s) after the end of the video (%s)",
				fmtNS(e.ToNS), o.toleranceFrames(), fmtNS(fEnd))})
		}
	}
	if len(probs) > 0 {
		return nil, &InconsistentError{Problems: probs}
	}

	r := &Report{Key: key, File: file, Scan: scan, Options: o, ToleranceNS: tol,
		FootageStartNS: fStart, FootageEndNS: fEnd}
	sorted := sortedEpisodes(eps)
	if d := sorted[0].FromNS - fStart; d > tol {
		r.PreRollNS = d
	}
	if d := fEnd - sorted[len(sorted)-1].ToNS; d > tol {
		r.TrailingNS = d
	}

	tb := scan.TimeBase
	pts := make([]int64, len(scan.Packets)) // PTS in ns, computed once
	var keys []int64                        // keyframe PTS (ns), sorted
	for i, p := range scan.Packets {
		pts[i] = tb.NS(p.PTS)
		if p.Key && !p.Discard {
			keys = append(keys, pts[i])
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })

	r.Episodes = make([]EpisodeReport, len(sorted))
	prevEnd := 0
	for i, e := range sorted {
		er := EpisodeReport{Episode: e}
		er.Start = boundary(e.FromNS, keys, tol)
		er.End = boundary(e.ToNS, keys, tol)
		if e.ToNS >= fEnd-tol {
			er.End.StreamEdge = true
		}
		for j, t := range pts {
			if !scan.Packets[j].Discard && t >= e.FromNS-tol && t < e.ToNS-tol {
				er.Packets++
			}
		}
		if i > 0 {
			if gap := e.FromNS - sorted[i-1].ToNS; gap > tol {
				r.GapsNS += gap
			}
		}
		if d := math.Abs(float64(int64(er.Packets) - e.Frames)); d > o.toleranceFrames() {
			r.Warnings = append(r.Warnings, fmt.Sprintf("episode %d: the video holds %d frame(s) in [%s, %s) but the episode has %d",
				e.Index, er.Packets, fmtNS(e.FromNS), fmtNS(e.ToNS), e.Frames))
		}
		if er.Start.Keyframe {
			r.StartsOnKeyframes++
		}
		if er.End.OK() {
			r.EndsOnKeyframes++
		}
		er.Run, er.Problems = planRun(scan, pts, e, er, tol, prevEnd)
		if len(er.Problems) == 0 {
			prevEnd = er.Run.End
		}
		r.Episodes[i] = er
	}
	return r, nil
}

// boundary compares t with the sorted keyframe times.
func boundary(t int64, keys []int64, tol int64) Boundary {
	b := Boundary{NS: t, Before: -1, After: -1}
	j := sort.Search(len(keys), func(i int) bool { return keys[i] >= t-tol })
	if j < len(keys) && keys[j] <= t+tol {
		b.Keyframe, b.KeyframeNS = true, keys[j]
	}
	if j > 0 {
		b.Before = keys[j-1]
	}
	for k := j; k < len(keys); k++ {
		if keys[k] > t+tol {
			b.After = keys[k]
			break
		}
	}
	return b
}

func around(b Boundary) string {
	f := func(v int64) string {
		if v < 0 {
			return "none"
		}
		return fmtNS(v)
	}
	return fmt.Sprintf("nearest keyframes %s before and %s after", f(b.Before), f(b.After))
}

// planRun maps an episode onto a decode-order packet run, or says why a
// packet copy cannot produce it. prevEnd is where the previous episode's
// run ended; runs must not overlap.
func planRun(s *Scan, pts []int64, e Episode, er EpisodeReport, tol int64, prevEnd int) (Run, []string) {
	var probs []string
	if !er.Start.Keyframe {
		probs = append(probs, fmt.Sprintf("starts at %s, not on a keyframe (%s)", fmtNS(e.FromNS), around(er.Start)))
	}
	if !er.End.OK() && s.Reordered {
		probs = append(probs, fmt.Sprintf("ends at %s, not on a keyframe (%s), and B-frames may reference the pictures after it",
			fmtNS(e.ToNS), around(er.End)))
	}
	if len(probs) > 0 {
		return Run{}, probs
	}
	first := -1
	for i, p := range s.Packets {
		if p.Key && !p.Discard && pts[i] == er.Start.KeyframeNS {
			first = i
			break
		}
	}
	end := len(s.Packets)
	for i := first + 1; i < len(s.Packets); i++ {
		if s.Packets[i].Key && pts[i] >= e.ToNS-tol {
			end = i
			break
		}
	}
	run := Run{First: first, End: end, OffsetPTS: s.Packets[first].PTS}
	if first < prevEnd {
		return Run{}, []string{fmt.Sprintf("its packets (from #%d) overlap the previous episode's in decode order", first)}
	}
	monotonic := true
	for i := first; i < end; i++ {
		p := s.Packets[i]
		if i > first && p.PTS <= s.Packets[i-1].PTS {
			monotonic = false
		}
		if p.Discard {
			probs = append(probs, fmt.Sprintf("packet #%d (PTS %s) is flagged discard", i, fmtNS(pts[i])))
		}
		if p.PTS < run.OffsetPTS {
			probs = append(probs, fmt.Sprintf("packet #%d (PTS %s) is presented before the keyframe at %s: open GOP, a cut there would not decode",
				i, fmtNS(pts[i]), fmtNS(pts[first])))
		}
	}
	// Packets presented at or after the end, at the end of the run in
	// decode order: exact to drop when nothing is reordered.
	tail := 0
	for i := end - 1; i > first && pts[i] >= e.ToNS-tol; i-- {
		tail++
	}
	if monotonic {
		run.End -= tail
		run.DroppedTail = tail
	} else {
		run.KeptTail = tail
	}
	// Nothing of [from, to) may live outside the run (reordering across
	// the cut, or leading pictures of the next GOP).
	for i := range s.Packets {
		if (i < run.First || i >= run.End) && !s.Packets[i].Discard && pts[i] >= e.FromNS-tol && pts[i] < e.ToNS-tol {
			probs = append(probs, fmt.Sprintf("packet #%d (PTS %s) is inside the interval but outside the decode-order run #%d..#%d",
				i, fmtNS(pts[i]), run.First, run.End-1))
			break
		}
	}
	if len(probs) > 0 {
		return Run{}, probs
	}
	var maxEnd int64 = math.MinInt64
	for i := run.First; i < run.End; i++ {
		if v := s.Packets[i].PTS + s.Packets[i].Duration; v > maxEnd {
			maxEnd = v
		}
	}
	run.SpanNS = s.TimeBase.NS(maxEnd - run.OffsetPTS)
	return run, nil
}
