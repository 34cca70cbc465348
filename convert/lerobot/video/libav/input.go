//go:build cgo

package libav

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/asticode/go-astiav"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
)

// ioBufferSize is the buffer libav reads an Input through (its own file
// protocol reads 32 KiB at a time).
const ioBufferSize = 64 << 10

// libav's seek flags (libavformat/avio.h): AVSEEK_SIZE asks for the size
// without moving, AVSEEK_FORCE may be or-ed into whence.
const (
	avseekSize  = 0x10000
	avseekForce = 0x20000
)

// inputReader is the cursor libav's read and seek callbacks move over an
// Input: reads are ReadAt calls at the cursor, so nothing but libav's
// buffer holds the bytes.
type inputReader struct {
	in  video.Input
	pos int64
	err error // the first read error other than the end, for messages
}

func (r *inputReader) read(b []byte) (int, error) {
	if r.pos >= r.in.Size {
		return 0, astiav.ErrEof
	}
	if rest := r.in.Size - r.pos; int64(len(b)) > rest {
		b = b[:rest]
	}
	n, err := r.in.R.ReadAt(b, r.pos)
	r.pos += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		if r.err == nil {
			r.err = err
		}
		if n == 0 {
			return 0, astiav.ErrEio
		}
		return n, nil
	}
	if n == 0 {
		// The reader ended before Size: the bytes are shorter than said.
		if r.err == nil {
			r.err = fmt.Errorf("%w after %d of %d bytes", io.ErrUnexpectedEOF, r.pos, r.in.Size)
		}
		return 0, astiav.ErrEof
	}
	return n, nil
}

func (r *inputReader) seek(offset int64, whence int) (int64, error) {
	if whence&avseekSize != 0 {
		return r.in.Size, nil
	}
	var pos int64
	switch whence &^ avseekForce {
	case io.SeekStart:
		pos = offset
	case io.SeekCurrent:
		pos = r.pos + offset
	case io.SeekEnd:
		pos = r.in.Size + offset
	default:
		return 0, astiav.ErrEio
	}
	if pos < 0 {
		return 0, astiav.ErrEio
	}
	r.pos = pos
	return pos, nil
}

// payloadFree reads r but for the ranges of holes (the payloads of a
// file's mdat boxes, in file order), which read as zeros without touching
// r: the packet timing a scan records comes from the sample tables around
// them, and with AVFMT_FLAG_NOPARSE libav's mov demuxer hands payloads on
// without looking at them. A scan of a remote camera file thus fetches its
// boxes, not its frames.
type payloadFree struct {
	r     io.ReaderAt
	holes []video.Range
}

func (p *payloadFree) ReadAt(b []byte, off int64) (int, error) {
	end := off + int64(len(b))
	// the first hole that ends after off
	i := sort.Search(len(p.holes), func(i int) bool { return p.holes[i].Off+p.holes[i].Len > off })
	pos := off
	for pos < end {
		if i < len(p.holes) && p.holes[i].Off <= pos {
			h := p.holes[i]
			stop := min(end, h.Off+h.Len)
			clear(b[pos-off : stop-off])
			pos = stop
			i++
			continue
		}
		stop := end
		if i < len(p.holes) {
			stop = min(end, p.holes[i].Off)
		}
		n, err := p.r.ReadAt(b[pos-off:stop-off], pos)
		pos += int64(n)
		if err != nil {
			return int(pos - off), err
		}
	}
	return len(b), nil
}

// demuxer is an opened input: a file, or an Input read through a custom
// IO context that the format context does not own (libav sets
// AVFMT_FLAG_CUSTOM_IO), freed after it.
type demuxer struct {
	fc *astiav.FormatContext
	io *astiav.IOContext
	rd *inputReader
}

func (d *demuxer) close() {
	closeInput(d.fc)
	if d.io != nil {
		d.io.Free()
	}
}

// wrap adds the Input's read error, when one was hidden behind libav's
// EIO or EOF, to err.
func (d *demuxer) wrap(err error) error {
	if d.rd != nil && d.rd.err != nil {
		return fmt.Errorf("%w (reading the input: %v)", err, d.rd.err)
	}
	return err
}

// readErr is the Input's read error, or nil: libav ends a demux at EOF
// whether the input ended or failed to read.
func (d *demuxer) readErr() error {
	if d.rd != nil && d.rd.err != nil {
		return d.rd.err
	}
	return nil
}

// openScanned opens what s was scanned from: s.Input when set, else
// s.Path.
func openScanned(s *video.Scan, findInfo bool) (*demuxer, error) {
	if s.Input != nil {
		return openReader(*s.Input, findInfo, false)
	}
	fc, err := openInput(s.Path, findInfo)
	if err != nil {
		return nil, err
	}
	return &demuxer{fc: fc}, nil
}

// openReader opens in for demuxing, reading it through a custom IO
// context (see openInput for findInfo). With noParse set, libav runs no
// parser over the packets (AVFMT_FLAG_NOPARSE): they are handed on as the
// container stores them.
func openReader(in video.Input, findInfo, noParse bool) (*demuxer, error) {
	quietLibav()
	if in.R == nil || in.Size < 0 {
		return nil, fmt.Errorf("video: %s: no reader", in.Name)
	}
	rd := &inputReader{in: in}
	ioc, err := astiav.AllocIOContext(ioBufferSize, false, rd.read, rd.seek, nil)
	if err != nil {
		return nil, fmt.Errorf("video: %s: %w", in.Name, err)
	}
	fc := astiav.AllocFormatContext()
	if fc == nil {
		ioc.Free()
		return nil, fmt.Errorf("video: %s: cannot allocate a format context", in.Name)
	}
	fc.SetPb(ioc)
	if noParse {
		fc.SetFlags(fc.Flags().Add(astiav.FormatContextFlagNoparse))
	}
	d := &demuxer{fc: fc, io: ioc, rd: rd}
	if err := fc.OpenInput("", nil, nil); err != nil {
		// avformat_open_input freed the format context (Free only
		// forgets it), not the IO context.
		fc.Free()
		ioc.Free()
		return nil, fmt.Errorf("video: %s: open: %w", in.Name, d.wrap(err))
	}
	if findInfo {
		if err := fc.FindStreamInfo(nil); err != nil {
			d.close()
			return nil, fmt.Errorf("video: %s: find stream info: %w", in.Name, d.wrap(err))
		}
	}
	return d, nil
}
