//go:build cgo

package libav

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/asticode/go-astiav"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
)

// Split cuts the file of r (a report from CheckBoundaries whose Decide
// says Split) into one MP4 per episode, in one sequential read of the
// input: packets are copied byte for byte, the time base is kept, PTS and
// DTS are shifted by the episode's first keyframe PTS so each output
// starts at 0, and the moov atom is moved to the front
// (movflags=+faststart).
//
// With B-frames the shifted DTS of the first packets is negative (e.g.
// pts 0, dts -0.2 s). FFmpeg 5.1's mp4 muxer accepts negative DTS as they
// are and writes an edit list (elst media_time = -first DTS), so the
// container's start_time is 0 and every packet keeps its exact PTS/DTS
// difference; avoid_negative_ts is not used, because shifting by the DTS
// (what ffmpeg's segment muxer does) would make the episode start at
// +0.2 s instead of 0. Each output is written under a temporary name in
// its final directory, synced and renamed; the directory is synced.
//
// Existing outputs are never overwritten (video.ErrExists). On failure or
// cancellation nothing this call created is left behind: the temporary
// file and the outputs already renamed are removed.
func Split(ctx context.Context, r *video.Report, dest video.Dest) (outs []video.Output, err error) {
	s := r.Scan
	if d := r.Decide(); !d.Split {
		return nil, fmt.Errorf("video: %s: %s: %w: %s", r.Key, r.File, video.ErrNotSplittable, strings.Join(d.Reasons, "; "))
	}
	paths := make([]string, len(r.Episodes))
	seen := map[string]int{}
	for i, e := range r.Episodes {
		p := filepath.Clean(dest(e.Episode))
		if j, dup := seen[p]; dup {
			return nil, fmt.Errorf("video: %s: %s: episodes %d and %d would both be written to %s",
				r.Key, r.File, r.Episodes[j].Index, e.Index, p)
		}
		seen[p] = i
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("video: %s: %s: episode %d: %s: %w", r.Key, r.File, e.Index, p, video.ErrExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("video: %s: %s: episode %d: %w", r.Key, r.File, e.Index, err)
		}
		paths[i] = p
	}

	var m *muxer
	var written []string // outputs renamed into place, removed on failure
	defer func() {
		if err == nil {
			return
		}
		if m != nil {
			m.abort()
		}
		for _, p := range written {
			_ = os.Remove(p)
		}
		outs = nil
	}()

	// MPEG-4 part 2 in MP4 carries its frame size only in the bitstream;
	// the mp4 muxer refuses a stream without one, so only then let libav
	// probe (and decode) the first frames.
	d, err := openScanned(s, s.Width == 0 || s.Height == 0)
	if err != nil {
		return nil, err
	}
	defer d.close()
	fc := d.fc
	streams := fc.Streams()
	if s.StreamIndex >= len(streams) {
		return nil, fmt.Errorf("video: %s: stream %d is gone; the file changed since it was scanned", s.Path, s.StreamIndex)
	}
	in := streams[s.StreamIndex]
	if got := in.CodecParameters().CodecID().Name(); got != s.Codec {
		return nil, fmt.Errorf("video: %s: stream %d is %s, was %s when scanned; the file changed", s.Path, s.StreamIndex, got, s.Codec)
	}
	keepTag := strings.Contains(fc.InputFormat().Name(), "mp4")

	pk := astiav.AllocPacket()
	defer pk.Free()
	ei, idx := 0, -1
	// A report of some of the file's episodes (an append cuts the new
	// episodes of a camera file that grew) starts at a later packet: seek
	// to its keyframe (by PTS: the index of an MP4 file with B-frames may
	// place a keyframe after its DTS), so the packets before it are not read.
	resync := false
	if first := r.Episodes[0].Run.First; first > 0 && first < len(s.Packets) {
		resync = fc.SeekFrame(s.StreamIndex, s.Packets[first].PTS, astiav.NewSeekFlags(astiav.SeekFlagBackward)) == nil
	}
	for n := 0; ei < len(r.Episodes); n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("video: %s: split: %w", s.Path, err)
			}
		}
		if err := fc.ReadFrame(pk); err != nil {
			if errors.Is(err, astiav.ErrEof) {
				if err := d.readErr(); err != nil {
					return nil, fmt.Errorf("video: %s: read packet: %w", s.Path, err)
				}
				break
			}
			return nil, fmt.Errorf("video: %s: read packet: %w", s.Path, d.wrap(err))
		}
		if pk.StreamIndex() != s.StreamIndex {
			pk.Unref()
			continue
		}
		if resync {
			// The first packet after the seek: find it among the scanned ones.
			resync = false
			if idx = seekedTo(s, pk, r.Episodes[0].Run.First); idx < 0 {
				got := [3]int64{pk.Pts(), pk.Dts(), int64(pk.Size())}
				pk.Unref()
				return nil, fmt.Errorf("video: %s: after seeking, the packet pts/dts/size %v is none scanned before packet #%d; the file changed", s.Path, got, r.Episodes[0].Run.First)
			}
			idx--
		}
		idx++
		if idx >= len(s.Packets) {
			pk.Unref()
			return nil, fmt.Errorf("video: %s: more packets than when scanned (%d); the file changed", s.Path, len(s.Packets))
		}
		if want := s.Packets[idx]; pk.Pts() != want.PTS || pk.Dts() != want.DTS || pk.Size() != want.Size {
			got := [3]int64{pk.Pts(), pk.Dts(), int64(pk.Size())}
			pk.Unref()
			if err := d.readErr(); err != nil {
				// libav hands on what it read of a packet whose read failed
				return nil, fmt.Errorf("video: %s: read packet #%d: %w", s.Path, idx, err)
			}
			return nil, fmt.Errorf("video: %s: packet #%d is pts/dts/size %v, was %v when scanned; the file changed",
				s.Path, idx, got, [3]int64{want.PTS, want.DTS, int64(want.Size)})
		}
		e := r.Episodes[ei]
		if idx < e.Run.First {
			pk.Unref()
			continue
		}
		if m == nil {
			if m, err = openMuxer(paths[ei], in, keepTag); err != nil {
				pk.Unref()
				return nil, fmt.Errorf("video: %s: %s: episode %d: %w", r.Key, r.File, e.Index, err)
			}
		}
		if err := m.write(pk, in.TimeBase(), e.Run.OffsetPTS); err != nil {
			return nil, fmt.Errorf("video: %s: %s: episode %d: packet #%d: %w", r.Key, r.File, e.Index, idx, err)
		}
		if idx == e.Run.End-1 {
			size, err := m.finish()
			if err != nil {
				m = nil // finish cleaned up after itself
				return nil, fmt.Errorf("video: %s: %s: episode %d: %w", r.Key, r.File, e.Index, err)
			}
			otb := m.st.TimeBase()
			written = append(written, paths[ei])
			outs = append(outs, video.Output{Episode: e.Episode, Path: paths[ei], Packets: m.n, OffsetPTS: e.Run.OffsetPTS,
				TimeBase: video.Rational{Num: int64(otb.Num()), Den: int64(otb.Den())}, SpanNS: e.Run.SpanNS,
				DroppedTail: e.Run.DroppedTail, KeptTail: e.Run.KeptTail, Bytes: size})
			m = nil
			ei++
		}
	}
	if ei < len(r.Episodes) {
		return nil, fmt.Errorf("video: %s: input ended inside episode %d (read %d of %d packets); the file changed",
			s.Path, r.Episodes[ei].Index, idx+1, len(s.Packets))
	}
	return outs, nil
}

// seekedTo returns the index, at most first, of the scanned packet that pk
// is (same PTS, DTS and size), or -1.
func seekedTo(s *video.Scan, pk *astiav.Packet, first int) int {
	for j := min(first, len(s.Packets)-1); j >= 0; j-- {
		if p := s.Packets[j]; p.DTS == pk.Dts() && p.PTS == pk.Pts() && p.Size == pk.Size() {
			return j
		}
	}
	return -1
}

// muxer writes one episode container to a temporary file beside its final
// name, created by atomicfile (so it gets the mode os.Create would give it
// under the umask) and written by libav through its path.
type muxer struct {
	fc  *astiav.FormatContext
	io  *astiav.IOContext
	st  *astiav.Stream
	f   *atomicfile.File
	dst string
	n   int
}

func openMuxer(dst string, in *astiav.Stream, keepTag bool) (*muxer, error) {
	f, err := atomicfile.Create(dst, 0o666)
	if err != nil {
		return nil, err
	}
	m := &muxer{f: f, dst: dst}
	tmp := f.TempName()
	// faststart re-opens the output by this URL for its second pass.
	fc, err := astiav.AllocOutputFormatContext(nil, "mp4", fileURL(tmp))
	if err != nil {
		m.abort()
		return nil, fmt.Errorf("allocate mp4 muxer: %w", err)
	}
	m.fc = fc
	st := fc.NewStream(nil)
	if st == nil {
		m.abort()
		return nil, errors.New("cannot add an output stream")
	}
	if err := in.CodecParameters().Copy(st.CodecParameters()); err != nil {
		m.abort()
		return nil, fmt.Errorf("copy codec parameters: %w", err)
	}
	if !keepTag {
		st.CodecParameters().SetCodecTag(0) // let the muxer choose for non-mp4 sources
	}
	// movenc uses this as the mp4 timescale (refining it only when
	// coarse), so timestamps keep their exact tick grid.
	st.SetTimeBase(in.TimeBase())
	st.SetAvgFrameRate(in.AvgFrameRate())
	st.SetRFrameRate(in.RFrameRate())
	st.SetSampleAspectRatio(in.SampleAspectRatio())
	m.st = st
	// no "Lavf…" version string: the same input gives the same bytes
	fc.SetFlags(fc.Flags().Add(astiav.FormatContextFlagBitexact))
	// libav opens the temporary file again by name (truncating it, keeping
	// its mode); the atomicfile descriptor stays open on the same file for
	// the sync and rename in finish.
	ioc, err := astiav.OpenIOContext(fileURL(tmp), astiav.NewIOContextFlags(astiav.IOContextFlagWrite))
	if err != nil {
		m.abort()
		return nil, fmt.Errorf("open %s: %w", tmp, err)
	}
	m.io = ioc
	fc.SetPb(ioc)
	opts := astiav.NewDictionary()
	defer opts.Free()
	if err := opts.Set("movflags", "+faststart", astiav.NewDictionaryFlags()); err != nil {
		m.abort()
		return nil, fmt.Errorf("set movflags: %w", err)
	}
	if err := fc.WriteHeader(opts); err != nil {
		m.abort()
		return nil, fmt.Errorf("write mp4 header: %w", err)
	}
	return m, nil
}

// write shifts pk by offset (ticks of inTB) and hands it to the muxer,
// which takes its reference.
func (m *muxer) write(pk *astiav.Packet, inTB astiav.Rational, offset int64) error {
	pk.SetPts(pk.Pts() - offset)
	pk.SetDts(pk.Dts() - offset)
	pk.SetStreamIndex(m.st.Index())
	pk.RescaleTs(inTB, m.st.TimeBase()) // identity unless the muxer refined the time base
	pk.SetPos(-1)
	m.n++
	if err := m.fc.WriteInterleavedFrame(pk); err != nil {
		return fmt.Errorf("write packet: %w", err)
	}
	return nil
}

// finish writes the trailer (and moves the moov atom to the front), then
// syncs the temporary file, renames it to its final name and syncs the
// directory (atomicfile.Commit). It returns the final size. On failure it
// removes the temporary file.
func (m *muxer) finish() (int64, error) {
	if err := m.fc.WriteTrailer(); err != nil {
		m.abort()
		return 0, fmt.Errorf("write mp4 trailer: %w", err)
	}
	err := m.io.Close()
	m.io = nil
	if err != nil {
		m.abort()
		return 0, fmt.Errorf("close %s: %w", m.f.TempName(), err)
	}
	m.fc.Free()
	m.fc = nil
	fi, err := m.f.Stat()
	if err != nil {
		m.abort()
		return 0, err
	}
	// never replace a file that appeared since Split checked
	if _, serr := os.Lstat(m.dst); serr == nil {
		m.abort()
		return 0, fmt.Errorf("%s: %w", m.dst, video.ErrExists)
	}
	if err := m.f.Commit(); err != nil {
		return 0, fmt.Errorf("%s: %w", m.dst, err)
	}
	return fi.Size(), nil
}

// abort releases the muxer and removes its temporary file.
func (m *muxer) abort() {
	if m.io != nil {
		_ = m.io.Close()
		m.io = nil
	}
	if m.fc != nil {
		m.fc.Free()
		m.fc = nil
	}
	m.f.Abort()
}
