//go:build cgo

package libav

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/asticode/go-astiav"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// Engine is the libav implementation of video.Engine. Its zero value is
// ready to use and holds no state.
type Engine struct{}

var _ video.Engine = Engine{}

// ScanKeyframes calls the package's ScanKeyframes.
func (Engine) ScanKeyframes(ctx context.Context, path string) (*video.Scan, error) {
	return ScanKeyframes(ctx, path)
}

// ScanInput calls the package's ScanInput.
func (Engine) ScanInput(ctx context.Context, in video.Input) (*video.Scan, error) {
	return ScanInput(ctx, in)
}

// Split calls the package's Split.
func (Engine) Split(ctx context.Context, r *video.Report, dest video.Dest) ([]video.Output, error) {
	return Split(ctx, r, dest)
}

var quietOnce sync.Once

// quietLibav switches libav's logging to stderr off: a library never
// prints, and errors come back as Go errors.
func quietLibav() {
	quietOnce.Do(func() { astiav.SetLogLevel(astiav.LogLevelQuiet) })
}

// fileURL makes a local path safe from libav's protocol detection
// ("a:b.mp4" would otherwise name a protocol "a").
func fileURL(path string) string { return "file:" + path }

// openInput opens path for demuxing. It does not call
// avformat_find_stream_info (which decodes) unless findInfo is set.
func openInput(path string, findInfo bool) (*astiav.FormatContext, error) {
	quietLibav()
	fc := astiav.AllocFormatContext()
	if fc == nil {
		return nil, fmt.Errorf("video: %s: cannot allocate a format context", path)
	}
	if err := fc.OpenInput(fileURL(path), nil, nil); err != nil {
		fc.Free()
		return nil, fmt.Errorf("video: %s: open: %w", path, err)
	}
	if findInfo {
		if err := fc.FindStreamInfo(nil); err != nil {
			closeInput(fc)
			return nil, fmt.Errorf("video: %s: find stream info: %w", path, err)
		}
	}
	return fc, nil
}

func closeInput(fc *astiav.FormatContext) {
	fc.CloseInput()
	fc.Free()
}

// ctxCheckEvery is how many packets are read between context checks.
const ctxCheckEvery = 64

// ScanKeyframes reads every packet of path once, without decoding, and
// records the timing and flags of the first video stream's packets. It
// fails on a file without a video stream and on packets without
// timestamps. Of an MP4 or MOV file it reads the boxes around the sample
// data only (see scanSparse); other files are read whole.
func ScanKeyframes(ctx context.Context, path string) (*video.Scan, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("video: %s: %w", path, err)
	}
	if f, err := srcfile.Open(path); err == nil {
		defer f.Close()
		if fi, err := f.Stat(); err == nil {
			s, ok, err := scanSparse(ctx, video.Input{Name: path, R: f, Size: fi.Size()})
			if ok {
				if s != nil {
					s.Input = nil // Split opens path
				}
				return s, err
			}
		}
	}
	return scanWhole(ctx, path)
}

// scanWhole is ScanKeyframes reading every byte of path through libav's
// own file protocol.
func scanWhole(ctx context.Context, path string) (*video.Scan, error) {
	fc, err := openInput(path, false)
	if err != nil {
		return nil, err
	}
	d := &demuxer{fc: fc}
	defer d.close()
	return scan(ctx, d, &video.Scan{Path: path, StreamIndex: -1})
}

// ScanInput is ScanKeyframes for a camera file held in in (a blob of a
// Lance table, an object in a bucket), read through a libav IO context in
// place, without a copy on disk. The Scan names the file in.Name and keeps
// in for Split.
func ScanInput(ctx context.Context, in video.Input) (*video.Scan, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("video: %s: %w", in.Name, err)
	}
	if in.R != nil && in.Size >= 0 {
		if s, ok, err := scanSparse(ctx, in); ok {
			return s, err
		}
	}
	return scanReader(ctx, in)
}

// scanReader is ScanInput reading every byte of in.
func scanReader(ctx context.Context, in video.Input) (*video.Scan, error) {
	d, err := openReader(in, false, false)
	if err != nil {
		return nil, err
	}
	defer d.close()
	return scan(ctx, d, &video.Scan{Path: in.Name, Input: &in, StreamIndex: -1})
}

// scanSparse scans an ISO base media file (MP4, MOV) without reading its
// sample data: the payloads of its mdat boxes (video.MediaData) read as
// zeros, and libav runs no parser over the packets, so their timing and
// flags are those of the sample tables (stts, ctts, stss, stsz, the edit
// list), as a demux of the whole file gives them. ok is false for a file
// that is not ISO media or whose boxes do not tile it: the caller reads it
// whole.
func scanSparse(ctx context.Context, in video.Input) (s *video.Scan, ok bool, err error) {
	holes := video.MediaData(in.R, in.Size)
	if len(holes) == 0 {
		return nil, false, nil
	}
	sparse := in
	sparse.R = &payloadFree{r: in.R, holes: holes}
	d, err := openReader(sparse, false, true)
	if err != nil {
		return nil, true, err
	}
	defer d.close()
	s, err = scan(ctx, d, &video.Scan{Path: in.Name, StreamIndex: -1})
	if s != nil {
		s.Input = &in
	}
	return s, true, err
}

// scan fills s from the opened input d.
func scan(ctx context.Context, d *demuxer, s *video.Scan) (*video.Scan, error) {
	fc, path := d.fc, s.Path
	for _, st := range fc.Streams() {
		cp := st.CodecParameters()
		if cp.MediaType() != astiav.MediaTypeVideo {
			s.OtherStreams = append(s.OtherStreams, cp.MediaType().String())
			continue
		}
		s.VideoStreams++
		if s.StreamIndex >= 0 {
			continue
		}
		tb := st.TimeBase()
		s.StreamIndex = st.Index()
		s.Codec = cp.CodecID().Name()
		s.TimeBase = video.Rational{Num: int64(tb.Num()), Den: int64(tb.Den())}
		s.StartTime, s.Duration, s.HeaderFrames = st.StartTime(), st.Duration(), st.NbFrames()
		fr := st.AvgFrameRate()
		s.AvgFrameRate = video.Rational{Num: int64(fr.Num()), Den: int64(fr.Den())}
		s.Width, s.Height = cp.Width(), cp.Height()
	}
	if s.StreamIndex < 0 {
		return nil, fmt.Errorf("video: %s: no video stream", path)
	}
	if s.TimeBase.Num <= 0 || s.TimeBase.Den <= 0 {
		return nil, fmt.Errorf("video: %s: invalid time base %s", path, s.TimeBase)
	}
	if s.HeaderFrames > 0 && s.HeaderFrames < 1<<24 {
		s.Packets = make([]video.Packet, 0, s.HeaderFrames)
	}

	pk := astiav.AllocPacket()
	defer pk.Free()
	for n := 0; ; n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("video: %s: scan: %w", path, err)
			}
		}
		if err := fc.ReadFrame(pk); err != nil {
			if errors.Is(err, astiav.ErrEof) {
				if err := d.readErr(); err != nil {
					return nil, fmt.Errorf("video: %s: read packet: %w", path, err)
				}
				break
			}
			return nil, fmt.Errorf("video: %s: read packet: %w", path, d.wrap(err))
		}
		if pk.StreamIndex() != s.StreamIndex {
			pk.Unref()
			continue
		}
		p := video.Packet{PTS: pk.Pts(), DTS: pk.Dts(), Duration: pk.Duration(), Size: pk.Size(),
			Key: pk.Flags().Has(astiav.PacketFlagKey), Discard: pk.Flags().Has(astiav.PacketFlagDiscard)}
		pk.Unref()
		if p.PTS == astiav.NoPtsValue || p.DTS == astiav.NoPtsValue {
			return nil, fmt.Errorf("video: %s: packet #%d has no timestamp (pts %d, dts %d); cannot place it in time",
				path, len(s.Packets), p.PTS, p.DTS)
		}
		s.Packets = append(s.Packets, p)
	}
	s.Analyze()
	return s, nil
}
