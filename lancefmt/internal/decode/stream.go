package decode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/bpconvert/bpconvert/lancefmt/internal/bitpack"
	"github.com/klauspost/compress/zstd"
)

// ZipValues describes the variable-width values of a full-zip page so that
// they can be read item by item from the page's data buffer, which need
// not be in memory: each item is a repetition/definition word (CtrlBytes
// bytes, none when the page has no levels), then, for a valid value, a
// length prefix (LenBytes) and that many stored bytes, which the page's
// value compression turns into the value.
type ZipValues struct {
	// NumItems is the number of items of the page.
	NumItems uint64
	// Layers are the repetition/definition layers, innermost first.
	Layers []int
	ctrl   int
	hdr    fullZipHeader
	pv     *perValue
}

// ErrNotStreamed is returned by ParseZipValues for full-zip pages whose
// values are not of variable width (fixed-width values, fixed size lists),
// which are decoded with the whole page.
var ErrNotStreamed = errors.New("full-zip page of fixed-width values")

// ParseZipValues parses the FullZipLayout raw of a page of variable-width
// values; for any other full-zip page it returns ErrNotStreamed.
func ParseZipValues(raw []byte) (*ZipValues, error) {
	h, err := parseFullZip(raw)
	if err != nil {
		return nil, err
	}
	if h.bitsOffset == 0 {
		return nil, ErrNotStreamed
	}
	pv, err := newPerValue(h.valC, int(h.bitsValue), int(h.bitsOffset))
	if err != nil {
		return nil, err
	}
	if pv.lenBytes == 0 {
		return nil, ErrNotStreamed
	}
	return &ZipValues{NumItems: h.numItems, Layers: h.layers, ctrl: h.ctrlBytes(), hdr: h, pv: pv}, nil
}

// CtrlBytes is the size of each item's repetition/definition word.
func (z *ZipValues) CtrlBytes() int { return z.ctrl }

// LenBytes is the size of a valid value's length prefix.
func (z *ZipValues) LenBytes() int { return z.pv.lenBytes }

// Repeated reports whether the page has repetition levels or list layers
// (its items are not one per row).
func (z *ZipValues) Repeated() bool {
	if z.hdr.bitsRep > 0 {
		return true
	}
	for _, k := range z.Layers {
		if IsList(k) {
			return true
		}
	}
	return false
}

// Item decodes an item's repetition/definition word (CtrlBytes bytes):
// visible is false for an item that owns no value slot, valid false for a
// null value (which has no length prefix nor bytes).
func (z *ZipValues) Item(ctrl []byte) (visible, valid bool) {
	if z.ctrl == 0 {
		return true, true
	}
	w := bitpack.ReadWord(ctrl, 0, z.ctrl*8)
	def := int(w & (1<<z.hdr.bitsDef - 1))
	if z.hdr.bitsDef > 0 && def > MaxVisibleDef(z.Layers) {
		return false, false
	}
	return true, def == 0
}

// Length decodes a length prefix (LenBytes bytes): the stored size of the
// value that follows.
func (z *ZipValues) Length(b []byte) uint64 {
	return bitpack.ReadWord(b, 0, z.pv.lenBytes*8)
}

// SizeHead is the most stored bytes of a value that DecodedSize needs.
const SizeHead = 8 + 18

// DecodedSize returns the size of a value stored in n bytes whose first
// bytes (up to SizeHead) are head, when the stored form tells it without
// decoding (plain values, zstd frames with a content size, lz4 with its
// size prefix).
func (z *ZipValues) DecodedSize(head []byte, n int64) (int64, bool) {
	switch {
	case z.pv.fsst != nil:
		return 0, false
	case z.pv.c.Kind != ceGeneral || z.pv.c.comp == schemeNone:
		return n, true
	case z.pv.c.comp == schemeLz4:
		if len(head) < 4 {
			return 0, false
		}
		m := binary.LittleEndian.Uint32(head)
		if uint64(m) > uint64(n)*255+16 {
			return 0, false
		}
		return int64(m), true
	}
	if len(head) >= 8 && !isZstdFrame(head) {
		m := binary.LittleEndian.Uint64(head)
		return int64(m), m <= 1<<62
	}
	fh, ok := parseZstdFrameHeader(head)
	if !ok || !fh.hasFCS {
		return 0, false
	}
	return fh.fcs, true
}

// Plain reports whether a value's stored bytes are the value.
func (z *ZipValues) Plain() bool {
	return z.pv.fsst == nil && (z.pv.c.Kind != ceGeneral || z.pv.c.comp == schemeNone)
}

// Streamable reports whether Stream reads the values in pieces (plain
// values and zstd frames); others (lz4, FSST) are decoded whole.
func (z *ZipValues) Streamable() bool {
	return z.Plain() || (z.pv.fsst == nil && z.pv.c.comp == schemeZstd)
}

// Verbatim returns the value stored as v when v holds its bytes as they
// are, as a part of v (no copy): a plain value is v itself, and a zstd
// frame of one raw block (how zstd stores a value it cannot compress, up
// to 128 KiB) holds the value behind its header. ok is false for any other
// form, to decode with Decode.
func (z *ZipValues) Verbatim(v []byte) (b []byte, ok bool) {
	switch {
	case z.Plain():
		return v, true
	case z.pv.fsst == nil && z.pv.c.comp == schemeZstd:
		return verbatimZstd(v)
	}
	return nil, false
}

// Decode appends the value stored as v to dst (whose room it reuses) and
// returns the result; a plain value is returned as v itself.
func (z *ZipValues) Decode(dst, v []byte) ([]byte, error) {
	switch {
	case z.Plain():
		return v, nil
	case z.pv.fsst != nil:
		return z.pv.fsst.Decode(dst[:0], v, maxDecodedBytes)
	}
	return decompressAppend(z.pv.c.comp, dst[:0], v)
}

// zstdMaxStreamWindow bounds the window of a compressed zstd frame that
// Stream decodes (the decoder holds a window of history): Lance's zstd
// levels use windows of at most 8 MiB.
const zstdMaxStreamWindow = 64 << 20

// Stream returns a reader of the value of size bytes stored in [off,
// off+n) of r (size -1 when not known), reading the stored bytes through br (reset to them), without
// holding the value in memory: plain values, and zstd frames (those of raw
// and run-length blocks only, as zstd stores incompressible data, are
// copied block by block; others go through a streaming decoder whose
// window is at most 64 MiB). It returns ErrNotStreamed for values that
// must be decoded whole (lz4, FSST).
func (z *ZipValues) Stream(r io.ReaderAt, off, n, size int64, br *bufio.Reader) (io.ReadCloser, error) {
	if z.Plain() {
		return io.NopCloser(io.NewSectionReader(r, off, n)), nil
	}
	if !z.Streamable() {
		return nil, ErrNotStreamed
	}
	var head [SizeHead]byte
	h := head[:min(n, SizeHead)]
	if _, err := r.ReadAt(h, off); err != nil {
		return nil, err
	}
	if len(h) >= 8 && !isZstdFrame(h) {
		off, n, h = off+8, n-8, h[8:]
	}
	fh, ok := parseZstdFrameHeader(h)
	if ok && fh.hasFCS && fh.fcs == size && !fh.checksum && !fh.dict {
		if end, ok := storedBlocks(r, off+int64(fh.len), off+n, size); ok && end == off+n {
			br.Reset(io.NewSectionReader(r, off+int64(fh.len), n-int64(fh.len)))
			return &storedFrame{br: br}, nil
		}
	}
	d, err := zstd.NewReader(io.NewSectionReader(r, off, n), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(zstdMaxStreamWindow))
	if err != nil {
		return nil, err
	}
	return &zstdStream{d: d}, nil
}

// zstdStream is a streaming zstd decoder as an io.ReadCloser.
type zstdStream struct{ d *zstd.Decoder }

func (s *zstdStream) Read(p []byte) (int, error) {
	n, err := s.d.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: zstd: %v", errCorrupt, err)
	}
	return n, err
}

func (s *zstdStream) Close() error {
	s.d.Close()
	return nil
}

// zstdFrameHeader is the decoded header of a zstd frame.
type zstdFrameHeader struct {
	len      int   // header bytes, magic included
	fcs      int64 // frame content size, when hasFCS
	hasFCS   bool
	checksum bool // a content checksum follows the last block
	dict     bool // the frame names a dictionary
}

// parseZstdFrameHeader decodes the header at the start of frame (magic,
// frame header descriptor, window descriptor, dictionary id, content size).
func parseZstdFrameHeader(frame []byte) (zstdFrameHeader, bool) {
	var h zstdFrameHeader
	if !isZstdFrame(frame) || len(frame) < 5 {
		return h, false
	}
	fhd := frame[4]
	if fhd&0x08 != 0 {
		return h, false // reserved bit
	}
	single := fhd&0x20 != 0
	pos := 5
	if !single {
		pos++ // window descriptor
	}
	dictLen := [4]int{0, 1, 2, 4}[fhd&3]
	h.dict = dictLen > 0
	pos += dictLen
	fcsLen := [4]int{0, 2, 4, 8}[fhd>>6]
	if fcsLen == 0 && single {
		fcsLen = 1
	}
	if pos+fcsLen > len(frame) {
		return h, false
	}
	if fcsLen > 0 {
		var fcs uint64
		for i := fcsLen - 1; i >= 0; i-- {
			fcs = fcs<<8 | uint64(frame[pos+i])
		}
		if fcsLen == 2 {
			fcs += 256
		}
		if fcs > 1<<62 {
			return h, false
		}
		h.fcs, h.hasFCS = int64(fcs), true
	}
	h.checksum = fhd&0x04 != 0
	h.len = pos + fcsLen
	return h, true
}

// storedBlocks walks the block headers of a zstd frame whose blocks start
// at off in r (a block may not pass end) and reports whether they are raw
// and run-length blocks only, of want bytes in all, and where the last one
// ends.
func storedBlocks(r io.ReaderAt, off, end, want int64) (int64, bool) {
	var got int64
	var hb [3]byte
	for {
		if off+3 > end {
			return 0, false
		}
		if _, err := r.ReadAt(hb[:], off); err != nil {
			return 0, false
		}
		off += 3
		h := uint32(hb[0]) | uint32(hb[1])<<8 | uint32(hb[2])<<16
		last, kind, size := h&1 != 0, (h>>1)&3, int64(h>>3)
		stored := size
		switch kind {
		case 0:
		case 1:
			stored = 1
		default:
			return 0, false
		}
		if size > zstdMaxBlock || off+stored > end || got+size > want {
			return 0, false
		}
		off += stored
		got += size
		if last {
			return off, got == want
		}
	}
}

// storedFrame reads the content of a zstd frame of raw and run-length
// blocks (checked beforehand by storedBlocks) from br, positioned at its
// first block header.
type storedFrame struct {
	br   *bufio.Reader
	left int64 // bytes of the current block still to read
	rle  int   // the current block's byte, -1 for a raw block
	last bool  // the current block is the last one
}

func (s *storedFrame) Read(p []byte) (int, error) {
	for s.left == 0 {
		if s.last {
			return 0, io.EOF
		}
		hb, err := s.br.Peek(3)
		if err != nil {
			return 0, unexpected(err)
		}
		h := uint32(hb[0]) | uint32(hb[1])<<8 | uint32(hb[2])<<16
		s.br.Discard(3)
		s.last, s.left, s.rle = h&1 != 0, int64(h>>3), -1
		switch (h >> 1) & 3 {
		case 0:
		case 1:
			c, err := s.br.ReadByte()
			if err != nil {
				return 0, unexpected(err)
			}
			s.rle = int(c)
		default:
			return 0, fmt.Errorf("%w: zstd: value changed while it was read", errCorrupt)
		}
	}
	p = p[:min(int64(len(p)), s.left)]
	if s.rle >= 0 {
		for i := range p {
			p[i] = byte(s.rle)
		}
		s.left -= int64(len(p))
		return len(p), nil
	}
	n, err := s.br.Read(p)
	s.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (s *storedFrame) Close() error { return nil }

// unexpected turns the end of the stored bytes within a value into
// io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
