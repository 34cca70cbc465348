package video

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// Engine reads and cuts camera files. Its one implementation,
// convert/lerobot/video/libav, links libav through cgo; everything else in
// bpconvert (metadata, planning, tables, the index) depends on this
// interface only, so it builds and tests without cgo.
type Engine interface {
	// ScanKeyframes reads every packet of path once, without decoding,
	// and returns the timing and flags of the first video stream's
	// packets (Scan.Analyze applied). It fails on a file without a video
	// stream and on packets without timestamps. It need not read the
	// packets' payloads (libav reads an MP4 file's sample tables only).
	ScanKeyframes(ctx context.Context, path string) (*Scan, error)
	// ScanInput is ScanKeyframes for a camera file that is not a file of
	// its own (a blob of a Lance table, an object in a bucket): it reads
	// in.R, and the Scan it returns keeps in, so Split reads the same
	// bytes.
	ScanInput(ctx context.Context, in Input) (*Scan, error)
	// Split cuts the file of r (a report from CheckBoundaries whose Decide
	// says Split) into one MP4 per episode by packet copy, at the paths
	// dest names, and returns them in r.Episodes order. It refuses a file
	// Decide does not split (ErrNotSplittable) and existing outputs
	// (ErrExists); on failure or cancellation it leaves nothing behind.
	Split(ctx context.Context, r *Report, dest Dest) ([]Output, error)
}

// Input is a camera file held as Size bytes that R reads, for example the
// blob of a row of LeRobot's videos.lance: a range of a Lance data or
// sidecar file, read in place. Name stands for it where a path would (in
// Scan.Path and in messages).
type Input struct {
	Name string
	R    io.ReaderAt
	Size int64
}

// ErrNotSplittable is matched (errors.Is) by Split's refusal of a file
// whose report says it cannot be cut by packet copy.
var ErrNotSplittable = errors.New("cannot be split without re-encoding")

// ErrExists is matched by Split's refusal to overwrite an existing output.
var ErrExists = errors.New("output already exists")

// Dest names the final path of one episode's container.
type Dest func(e Episode) string

// DirDest puts episode containers in dir as episode_NNNNNN.mp4 (the
// episode_index, six digits, as LeRobot v2 and the reference name them).
func DirDest(dir string) Dest {
	return func(e Episode) string { return filepath.Join(dir, fmt.Sprintf("episode_%06d.mp4", e.Index)) }
}

// Output is one episode container written by Split.
type Output struct {
	Episode Episode
	Path    string
	// Packets is the number of packets copied (frames, for the codecs
	// LeRobot writes).
	Packets int
	// OffsetPTS is the source PTS (ticks, source time base) of the
	// episode's first keyframe, subtracted from every PTS and DTS.
	OffsetPTS int64
	// TimeBase is the output stream's time base (the source's, unless the
	// mp4 muxer had to refine a coarse one).
	TimeBase Rational
	// SpanNS is the container's exact presentation span: it starts at 0
	// and ends at the largest PTS+duration of its packets.
	SpanNS int64
	// DroppedTail and KeptTail are as in Run.
	DroppedTail, KeptTail int
	// Bytes is the container's size.
	Bytes int64
}
