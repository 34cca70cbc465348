package decode

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/bpconvert/bpconvert/lancefmt/internal/bitpack"
	"github.com/bpconvert/bpconvert/lancefmt/internal/fsst"
	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compressive encoding kinds (the oneof field numbers of the 2.1+
// CompressiveEncoding message).
const (
	CompressFlat                 = 1
	CompressVariable             = 2
	ceConstant                   = 3
	ceOutOfLineBitpacking        = 4
	ceInlineBitpacking           = 5
	ceFsst                       = 6
	ceDictionary                 = 7
	ceRle                        = 8
	ceByteStreamSplit            = 9
	ceGeneral                    = 10
	ceFixedSizeList              = 11
	cePackedStruct               = 12
	CompressVariablePackedStruct = 13
)

var ceNames = map[int]string{
	CompressFlat: "Flat", CompressVariable: "Variable", ceConstant: "Constant", ceOutOfLineBitpacking: "OutOfLineBitpacking",
	ceInlineBitpacking: "InlineBitpacking", ceFsst: "Fsst", ceDictionary: "Dictionary", ceRle: "Rle",
	ceByteStreamSplit: "ByteStreamSplit", ceGeneral: "General", ceFixedSizeList: "FixedSizeList",
	cePackedStruct: "PackedStruct", CompressVariablePackedStruct: "VariablePackedStruct", 14: "Range", 15: "Delta",
}

// maxDecodedBytes bounds any single decompressed or decoded buffer.
const maxDecodedBytes = 1 << 28

// MaxPageItems bounds the number of values (rows, items or list items) of a
// single page, so that hostile lengths cannot force huge allocations.
const MaxPageItems = 1 << 26

// Compression is a decoded CompressiveEncoding tree.
type Compression struct {
	Kind        int
	Bits        uint64       // Flat: bits per value; bit-packing: uncompressed bits; FSL: items per value
	comp        int          // buffer compression: 0 none, 1 lz4, 2 zstd
	inner       *Compression // Variable offsets, Fsst/Rle/General/FSL/OutOfLine values, ByteStreamSplit values
	runs        *Compression // Rle run lengths
	symbols     []byte       // Fsst symbol table
	hasValidity bool         // FixedSizeList
	value       []byte       // Constant
	Fields      []*Compression
}

// String names the encoding tree, for error messages.
func (c *Compression) String() string {
	if c == nil {
		return "none"
	}
	n := ceNames[c.Kind]
	if n == "" {
		n = fmt.Sprintf("CompressiveEncoding(%d)", c.Kind)
	}
	switch c.Kind {
	case CompressFlat, ceInlineBitpacking, ceOutOfLineBitpacking:
		n = fmt.Sprintf("%s(%d)", n, c.Bits)
	}
	if c.inner != nil {
		n += "<" + c.inner.String() + ">"
	}
	return n
}

// Field numbers of the 2.1+ compressive encoding messages, per kind of
// CompressiveEncoding.
const (
	bufferCompressionScheme = 1 // BufferCompression

	cFlatBitsPerValue       = 1 // Flat
	cFlatCompression        = 2
	cVariableOffsets        = 1 // Variable
	cVariableCompression    = 2
	cConstantValue          = 1 // Constant
	cOutOfLineBitsPerValue  = 1 // OutOfLineBitpacking
	cOutOfLineValues        = 3
	cInlineBitsPerValue     = 1 // InlineBitpacking
	cInlineCompression      = 2
	cFsstSymbolTable        = 1 // Fsst
	cFsstBinary             = 2
	cRleValues              = 1 // Rle
	cRleRunLengths          = 2
	cByteStreamSplitValues  = 1 // ByteStreamSplit
	cGeneralCompression     = 1 // General
	cGeneralValues          = 2
	cGeneralValuesAlt       = 3
	cFixedSizeListItems     = 1 // FixedSizeList: items per value
	cFixedSizeListValues    = 2
	cFixedSizeListValidity  = 3
	cVariablePackedFields   = 1 // VariablePackedStruct
	cPackedStructBits       = 1 // PackedStruct: bits of each child
	cPackedStructValues     = 2
	fieldEncodingValue      = 1 // VariablePackedStruct.FieldEncoding
	fieldEncodingBitsValue  = 2
	fieldEncodingBitsLength = 3
)

// parseBufferCompression decodes a BufferCompression message.
func parseBufferCompression(b []byte) (int, error) {
	scheme := 0
	err := wire.Walk(b, func(f wire.Field) error {
		if f.Num == bufferCompressionScheme {
			scheme = int(f.U)
		}
		return nil
	})
	if scheme > schemeZstd {
		return 0, fmt.Errorf("unsupported buffer compression scheme %d", scheme)
	}
	return scheme, err
}

// ParseCompression decodes a CompressiveEncoding message.
func ParseCompression(b []byte, depth int) (*Compression, error) {
	if depth > 16 {
		return nil, fmt.Errorf("%w: compressive encoding nested too deep", errCorrupt)
	}
	var c *Compression
	err := wire.Walk(b, func(f wire.Field) error {
		if c != nil {
			return nil
		}
		c = &Compression{Kind: int(f.Num)}
		return wire.Walk(f.B, func(g wire.Field) error { return c.setField(g, depth) })
	})
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: empty compressive encoding", errCorrupt)
	}
	return c, nil
}

// setField sets field g of the message of c's kind; nested encodings are
// parsed at depth+1.
func (c *Compression) setField(g wire.Field, depth int) error {
	var err error
	sub := func() (*Compression, error) { return ParseCompression(g.B, depth+1) }
	switch c.Kind {
	case CompressFlat:
		switch g.Num {
		case cFlatBitsPerValue:
			c.Bits = g.U
		case cFlatCompression:
			c.comp, err = parseBufferCompression(g.B)
		}
	case CompressVariable:
		switch g.Num {
		case cVariableOffsets:
			c.inner, err = sub()
		case cVariableCompression:
			c.comp, err = parseBufferCompression(g.B)
		}
	case ceConstant:
		if g.Num == cConstantValue {
			c.value = g.B
		}
	case ceOutOfLineBitpacking:
		switch g.Num {
		case cOutOfLineBitsPerValue:
			c.Bits = g.U
		case cOutOfLineValues:
			c.inner, err = sub()
		}
	case ceInlineBitpacking:
		switch g.Num {
		case cInlineBitsPerValue:
			c.Bits = g.U
		case cInlineCompression:
			c.comp, err = parseBufferCompression(g.B)
		}
	case ceFsst:
		switch g.Num {
		case cFsstSymbolTable:
			c.symbols = g.B
		case cFsstBinary:
			c.inner, err = sub()
		}
	case ceRle:
		switch g.Num {
		case cRleValues:
			c.inner, err = sub()
		case cRleRunLengths:
			c.runs, err = sub()
		}
	case ceByteStreamSplit:
		if g.Num == cByteStreamSplitValues {
			c.inner, err = sub()
		}
	case ceGeneral:
		switch g.Num {
		case cGeneralCompression:
			c.comp, err = parseBufferCompression(g.B)
		case cGeneralValues, cGeneralValuesAlt:
			c.inner, err = sub()
		}
	case ceFixedSizeList:
		switch g.Num {
		case cFixedSizeListItems:
			c.Bits = g.U
		case cFixedSizeListValues:
			c.inner, err = sub()
		case cFixedSizeListValidity:
			c.hasValidity = g.U != 0
		}
	case CompressVariablePackedStruct:
		if g.Num == cVariablePackedFields {
			var fe *Compression
			fe, err = parseFieldEncoding(g.B, depth+1)
			c.Fields = append(c.Fields, fe)
		}
	case cePackedStruct:
		err = c.setPackedStructField(g, sub)
	}
	return err
}

// setPackedStructField sets field g of a PackedStruct: the children's bit
// widths (as Flat children) or the values.
func (c *Compression) setPackedStructField(g wire.Field, sub func() (*Compression, error)) error {
	var err error
	switch g.Num {
	case cPackedStructBits:
		var vs []uint64
		vs, err = wire.PackedUints(nil, g)
		for _, v := range vs {
			c.Fields = append(c.Fields, &Compression{Kind: CompressFlat, Bits: v})
		}
	case cPackedStructValues:
		c.inner, err = sub()
	}
	return err
}

// parseFieldEncoding decodes a VariablePackedStruct FieldEncoding: the
// child's encoding plus either bits_per_value (fixed) or bits_per_length
// (variable). Fixed children are returned as Flat, variable ones as Variable.
func parseFieldEncoding(b []byte, depth int) (*Compression, error) {
	var fe *Compression
	var fixed, length uint64
	err := wire.Walk(b, func(f wire.Field) error {
		var err error
		switch f.Num {
		case fieldEncodingValue:
			fe, err = ParseCompression(f.B, depth+1)
		case fieldEncodingBitsValue:
			fixed = f.U
		case fieldEncodingBitsLength:
			length = f.U
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if length != 0 {
		return &Compression{Kind: CompressVariable, Bits: length, inner: fe}, nil
	}
	return &Compression{Kind: CompressFlat, Bits: fixed, inner: fe}, nil
}

var (
	zstdOnce sync.Once
	zstdDec  *zstd.Decoder
)

// Buffer compression schemes (BufferCompression.scheme).
const (
	schemeNone = 0
	schemeLz4  = 1
	schemeZstd = 2
)

// decompress undoes a General/BufferCompression scheme.
func decompress(scheme int, b []byte) ([]byte, error) {
	switch scheme {
	case schemeNone:
		return b, nil
	case schemeLz4:
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: lz4 buffer of %d bytes", errCorrupt, len(b))
		}
		n := binary.LittleEndian.Uint32(b)
		if uint64(n) > maxDecodedBytes || uint64(n) > uint64(len(b))*255+16 {
			return nil, fmt.Errorf("%w: lz4 claims %d bytes from %d", errCorrupt, n, len(b))
		}
		out := make([]byte, n)
		m, err := lz4.UncompressBlock(b[4:], out)
		if err != nil || m != int(n) {
			return nil, fmt.Errorf("%w: lz4: %d of %d bytes: %v", errCorrupt, m, n, err)
		}
		return out, nil
	case schemeZstd:
		zstdOnce.Do(newZstd)
		frame := b
		limit := uint64(maxDecodedBytes)
		if len(b) >= 8 && !(b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) {
			limit = binary.LittleEndian.Uint64(b)
			frame = b[8:]
			if limit > maxDecodedBytes {
				return nil, fmt.Errorf("%w: zstd claims %d bytes", errCorrupt, limit)
			}
		}
		out, err := zstdDec.DecodeAll(frame, make([]byte, 0, min(limit, uint64(len(frame))*8+64)))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", errCorrupt, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported compression scheme %d", scheme)
}

// decompressedSize returns the size that b decompresses to under a
// General/BufferCompression scheme, when b states it (lz4 and zstd as Lance
// writes them carry a length prefix; a bare zstd frame may carry its content
// size).
func decompressedSize(scheme int, b []byte) (int, bool) {
	switch scheme {
	case schemeNone:
		return len(b), true
	case schemeLz4:
		if len(b) < 4 {
			return 0, false
		}
		n := binary.LittleEndian.Uint32(b)
		if uint64(n) > maxDecodedBytes || uint64(n) > uint64(len(b))*255+16 {
			return 0, false
		}
		return int(n), true
	case schemeZstd:
		if len(b) >= 8 && !isZstdFrame(b) {
			n := binary.LittleEndian.Uint64(b)
			if n > maxDecodedBytes {
				return 0, false
			}
			return int(n), true
		}
		var h zstd.Header
		if err := h.Decode(b); err != nil || !h.HasFCS || h.FrameContentSize > maxDecodedBytes {
			return 0, false
		}
		return int(h.FrameContentSize), true
	}
	return 0, false
}

// isZstdFrame reports whether b starts with the zstd frame magic number.
func isZstdFrame(b []byte) bool {
	return len(b) >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd
}

// decompressAppend undoes a General/BufferCompression scheme like
// decompress, appending the result to dst: when dst has the room, the bytes
// are decompressed in place, without an intermediate buffer.
func decompressAppend(scheme int, dst, b []byte) ([]byte, error) {
	switch scheme {
	case schemeNone:
		return append(dst, b...), nil
	case schemeLz4:
		n, ok := decompressedSize(scheme, b)
		if !ok {
			if len(b) < 4 {
				return nil, fmt.Errorf("%w: lz4 buffer of %d bytes", errCorrupt, len(b))
			}
			return nil, fmt.Errorf("%w: lz4 claims %d bytes from %d", errCorrupt, binary.LittleEndian.Uint32(b), len(b))
		}
		dst = slices.Grow(dst, n)
		out := dst[len(dst) : len(dst)+n]
		m, err := lz4.UncompressBlock(b[4:], out)
		if err != nil || m != n {
			return nil, fmt.Errorf("%w: lz4: %d of %d bytes: %v", errCorrupt, m, n, err)
		}
		return dst[:len(dst)+n], nil
	case schemeZstd:
		n, ok := decompressedSize(scheme, b)
		if !ok {
			// Let the decoder find out.
			d, err := decompress(scheme, b)
			if err != nil {
				return nil, err
			}
			return append(dst, d...), nil
		}
		frame := b
		if !isZstdFrame(b) {
			frame = b[8:]
		}
		if out, ok := appendStoredZstd(dst, frame, n); ok {
			return out, nil
		}
		zstdOnce.Do(newZstd)
		start := len(dst)
		dst = slices.Grow(dst, n)
		// The decoder is handed only the room behind dst: it counts its
		// limit from the start of the slice it is given, so a page whose
		// earlier values passed the limit would be refused.
		tail := dst[start:start:cap(dst)]
		out, err := zstdDec.DecodeAll(frame, tail)
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", errCorrupt, err)
		}
		if len(out) > maxDecodedBytes {
			return nil, fmt.Errorf("%w: zstd: more than %d bytes", errCorrupt, maxDecodedBytes)
		}
		if len(out) <= cap(tail) && (len(out) == 0 || unsafe.SliceData(out) == unsafe.SliceData(tail)) {
			return dst[:start+len(out)], nil
		}
		return append(dst, out...), nil
	}
	return nil, fmt.Errorf("unsupported compression scheme %d", scheme)
}

// appendStoredZstd appends the content of a single-segment zstd frame that
// holds only raw and RLE blocks (zstd stores incompressible data that way)
// and nothing after them, copying the blocks' bytes straight into dst
// instead of through the decoder's window; want is the size the frame's
// prefix or header announced, and the frame's content size must equal it.
// ok is false, with dst unchanged, for any other frame (compressed blocks,
// a dictionary, a content checksum, trailing bytes, another size), which
// the decoder then handles.
func appendStoredZstd(dst, frame []byte, want int) ([]byte, bool) {
	pos, ok := storedFrameHeader(frame, want)
	if !ok {
		return dst, false
	}
	start := len(dst)
	dst = slices.Grow(dst, want)
	for {
		if pos+3 > len(frame) {
			return dst[:start], false
		}
		h := uint32(frame[pos]) | uint32(frame[pos+1])<<8 | uint32(frame[pos+2])<<16
		pos += 3
		last, kind, size := h&1 != 0, (h>>1)&3, int(h>>3)
		if size > zstdMaxBlock || len(dst)-start+size > want {
			return dst[:start], false
		}
		switch kind {
		case 0: // raw
			if pos+size > len(frame) {
				return dst[:start], false
			}
			dst = append(dst, frame[pos:pos+size]...)
			pos += size
		case 1: // RLE
			if pos+1 > len(frame) {
				return dst[:start], false
			}
			for range size {
				dst = append(dst, frame[pos])
			}
			pos++
		default:
			return dst[:start], false
		}
		if last {
			break
		}
	}
	if pos != len(frame) || len(dst)-start != want {
		return dst[:start], false
	}
	return dst, true
}

// growsNot reports whether a value stored with scheme decodes to no more
// bytes than it takes, at every point of its decoding, so that it can be
// decoded into the memory it is read from, behind the reading position:
// plain values, and zstd frames of raw blocks only (as zstd stores data it
// cannot compress). want is the decoded size.
func growsNot(scheme int, b []byte, want int) bool {
	switch scheme {
	case schemeNone:
		return true
	case schemeZstd:
		frame := b
		if !isZstdFrame(b) {
			if len(b) < 8 {
				return false
			}
			frame = b[8:]
		}
		return rawBlocksOnly(frame, want)
	}
	return false
}

// appendInPlace appends the decoding of b, a value growsNot accepted, to
// dst, which may lie in the same memory behind b. It reports false for any
// other form.
func appendInPlace(scheme int, dst, b []byte) ([]byte, bool) {
	switch scheme {
	case schemeNone:
		return append(dst, b...), true
	case schemeZstd:
		n, ok := decompressedSize(scheme, b)
		if !ok {
			return dst, false
		}
		frame := b
		if !isZstdFrame(b) {
			frame = b[8:]
		}
		if !rawBlocksOnly(frame, n) {
			return dst, false
		}
		return appendStoredZstd(dst, frame, n)
	}
	return dst, false
}

// verbatimZstd returns the content of b, a zstd frame (bare or behind
// Lance's 8-byte size prefix) that appendStoredZstd would take and that
// holds one raw block only, as the part of b it is: the block's bytes are
// the value. ok is false for any other frame.
func verbatimZstd(b []byte) ([]byte, bool) {
	n, ok := decompressedSize(schemeZstd, b)
	if !ok {
		return nil, false
	}
	frame := b
	if !isZstdFrame(b) {
		frame = b[8:]
	}
	pos, ok := storedFrameHeader(frame, n)
	if !ok || pos+3 > len(frame) {
		return nil, false
	}
	h := uint32(frame[pos]) | uint32(frame[pos+1])<<8 | uint32(frame[pos+2])<<16
	pos += 3
	last, kind, size := h&1 != 0, (h>>1)&3, int(h>>3)
	if !last || kind != 0 || size != n || size > zstdMaxBlock || pos+size != len(frame) {
		return nil, false
	}
	return frame[pos : pos+size : pos+size], true
}

// storedFrameHeader checks the header of a zstd frame that
// appendStoredZstd may take (single segment, no checksum, no dictionary, a
// content size of want) and returns where its first block starts.
func storedFrameHeader(frame []byte, want int) (int, bool) {
	if !isZstdFrame(frame) || len(frame) < 5 {
		return 0, false
	}
	fhd := frame[4]
	if fhd&0x20 == 0 || fhd&0x08 != 0 || fhd&0x04 != 0 || fhd&0x03 != 0 {
		return 0, false // not single-segment; reserved bit, content checksum, dictionary
	}
	// The frame content size (single-segment frames always have one): 1,
	// 2 (+256), 4 or 8 bytes.
	pos := 5
	n := [4]int{1, 2, 4, 8}[fhd>>6]
	if pos+n > len(frame) {
		return 0, false
	}
	var fcs uint64
	for i := n - 1; i >= 0; i-- {
		fcs = fcs<<8 | uint64(frame[pos+i])
	}
	if n == 2 {
		fcs += 256
	}
	if fcs != uint64(want) {
		return 0, false
	}
	return pos + n, true
}

// rawBlocksOnly reports whether frame is a single-segment zstd frame of
// want bytes made of raw blocks only, which appendStoredZstd decodes.
func rawBlocksOnly(frame []byte, want int) bool {
	pos, ok := storedFrameHeader(frame, want)
	if !ok {
		return false
	}
	got := 0
	for {
		if pos+3 > len(frame) {
			return false
		}
		h := uint32(frame[pos]) | uint32(frame[pos+1])<<8 | uint32(frame[pos+2])<<16
		pos += 3
		last, kind, size := h&1 != 0, (h>>1)&3, int(h>>3)
		if kind != 0 || size > zstdMaxBlock || pos+size > len(frame) || got+size > want {
			return false
		}
		pos += size
		got += size
		if last {
			return pos == len(frame) && got == want
		}
	}
}

// zstdMaxBlock is the largest block a zstd frame may hold.
const zstdMaxBlock = 128 << 10

// newZstd makes the shared zstd decoder.
func newZstd() {
	zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecodedBytes))
}

// Leaf holds decoded values of a leaf column: N values, fixed width (Bits >
// 0, a bitmap when Bits == 1) or variable width (Offs has N+1 entries).
type Leaf struct {
	N         int
	Bits      int
	Data      []byte
	Offs      []uint64
	ItemValid []byte // fixed-size-list item validity, n*dim bits; nil = all valid
	Dim       int    // fixed-size-list dimension, 0 when not a list
}

// appendLeaf appends src to dst (same shape).
func appendLeaf(dst *Leaf, src Leaf) error {
	if dst.N == 0 && dst.Data == nil && dst.Offs == nil {
		// Copy: src may alias a page buffer that later appends would clobber.
		*dst = src
		if src.Offs != nil {
			start := src.Offs[0]
			dst.Offs = make([]uint64, len(src.Offs))
			for i, o := range src.Offs {
				dst.Offs[i] = o - start
			}
			dst.Data = append([]byte(nil), src.Data[start:src.Offs[src.N]]...)
		} else {
			dst.Data = append([]byte(nil), src.Data...)
		}
		if src.ItemValid != nil {
			dst.ItemValid = append([]byte(nil), src.ItemValid...)
		}
		return nil
	}
	if (dst.Offs == nil) != (src.Offs == nil) || dst.Bits != src.Bits || dst.Dim != src.Dim {
		return fmt.Errorf("%w: chunks of different shape", errCorrupt)
	}
	if src.ItemValid != nil || dst.ItemValid != nil {
		dv, sv := dst.ItemValid, src.ItemValid
		if dv == nil {
			dv = allValid(dst.N * dst.Dim)
		}
		if sv == nil {
			sv = allValid(src.N * src.Dim)
		}
		dst.ItemValid = appendBits(dv, dst.N*dst.Dim, sv, src.N*src.Dim)
	}
	switch {
	case src.Offs != nil:
		base := dst.Offs[len(dst.Offs)-1]
		start := src.Offs[0]
		for _, o := range src.Offs[1:] {
			dst.Offs = append(dst.Offs, base+o-start)
		}
		dst.Data = append(dst.Data, src.Data[start:src.Offs[len(src.Offs)-1]]...)
	case dst.Bits == 1:
		dst.Data = appendBits(dst.Data, dst.N, src.Data, src.N)
	default:
		w := dst.Bits / 8
		dst.Data = append(dst.Data[:dst.N*w], src.Data[:src.N*w]...)
	}
	dst.N += src.N
	return nil
}

// allValid returns a bitmap of n set bits.
func allValid(n int) []byte {
	b := make([]byte, (n+7)/8)
	for i := range b {
		b[i] = 0xff
	}
	return b
}

// appendBits appends the first m bits of src to dst, which holds n bits.
func appendBits(dst []byte, n int, src []byte, m int) []byte {
	dst = dst[:(n+7)/8]
	if n%8 == 0 {
		return append(dst, src[:(m+7)/8]...)
	}
	dst[len(dst)-1] &= byte(1)<<(n%8) - 1 // drop padding bits past n
	need := (n + m + 7) / 8
	for len(dst) < need {
		dst = append(dst, 0)
	}
	for i := 0; i < m; i++ {
		if src[i/8]&(1<<(i%8)) != 0 {
			j := n + i
			dst[j/8] |= 1 << (j % 8)
		}
	}
	return dst
}

// fixedLeaf checks that b holds n values of the given bits and wraps it.
func fixedLeaf(b []byte, n, bitsPer int) (Leaf, error) {
	need := uint64(n) * uint64(bitsPer)
	need = (need + 7) / 8
	if bitsPer <= 0 || bitsPer > 1 && bitsPer%8 != 0 {
		return Leaf{}, fmt.Errorf("%w: %d bits per value", errCorrupt, bitsPer)
	}
	if uint64(len(b)) < need {
		return Leaf{}, fmt.Errorf("%w: %d values of %d bits need %d bytes, have %d", errCorrupt, n, bitsPer, need, len(b))
	}
	return Leaf{N: n, Bits: bitsPer, Data: b[:need]}, nil
}

// decodeMini decodes one mini-block chunk's value buffers into n values.
func decodeMini(c *Compression, bufs [][]byte, n int) (Leaf, error) {
	if n < 0 || n > 1<<20 {
		return Leaf{}, fmt.Errorf("%w: %d values in one chunk", errCorrupt, n)
	}
	if len(bufs) == 0 {
		return Leaf{}, fmt.Errorf("%w: chunk without value buffers", errCorrupt)
	}
	switch c.Kind {
	case CompressFlat:
		b, err := decompress(c.comp, bufs[0])
		if err != nil {
			return Leaf{}, err
		}
		return fixedLeaf(b, n, int(c.Bits))
	case ceInlineBitpacking:
		return decodeInlineBitpacking(bufs[0], int(c.Bits), n)
	case CompressVariable:
		return decodeVariableMini(c, bufs[0], n)
	case ceFsst:
		if c.inner == nil {
			return Leaf{}, fmt.Errorf("%w: fsst without values", errCorrupt)
		}
		l, err := decodeMini(c.inner, bufs, n)
		if err != nil {
			return Leaf{}, err
		}
		return fsstDecodeLeaf(c.symbols, l)
	case ceRle:
		if len(bufs) < 2 {
			return Leaf{}, fmt.Errorf("%w: rle chunk needs 2 buffers", errCorrupt)
		}
		return decodeRle(c, bufs[0], bufs[1], n)
	case ceGeneral:
		if c.inner == nil {
			return Leaf{}, fmt.Errorf("%w: general without values", errCorrupt)
		}
		b, err := decompress(c.comp, bufs[0])
		if err != nil {
			return Leaf{}, err
		}
		nb := append([][]byte{b}, bufs[1:]...)
		return decodeMini(c.inner, nb, n)
	case ceFixedSizeList:
		return decodeFSLMini(c, bufs, n)
	case cePackedStruct:
		// Row-major fixed-width children; yields one value of their total
		// width per row.
		if c.inner == nil || c.inner.Kind != CompressFlat {
			return Leaf{}, fmt.Errorf("packed struct over %s is not supported", c.inner)
		}
		return decodeMini(c.inner, bufs, n)
	case ceByteStreamSplit:
		if c.inner == nil || c.inner.Kind != CompressFlat || c.inner.Bits%8 != 0 {
			return Leaf{}, fmt.Errorf("byte stream split over %s is not supported", c.inner)
		}
		w := int(c.inner.Bits / 8)
		if len(bufs[0]) < n*w {
			return Leaf{}, fmt.Errorf("%w: byte stream split buffer too short", errCorrupt)
		}
		out := make([]byte, n*w)
		for i := 0; i < n; i++ {
			for k := 0; k < w; k++ {
				out[i*w+k] = bufs[0][k*n+i]
			}
		}
		return Leaf{N: n, Bits: w * 8, Data: out}, nil
	}
	return Leaf{}, fmt.Errorf("mini-block value compression %s is not supported", c)
}

// decodeFSLMini decodes a FixedSizeList mini-block chunk: an optional item
// validity bitmap then the items.
func decodeFSLMini(c *Compression, bufs [][]byte, n int) (Leaf, error) {
	dim := int(c.Bits)
	if dim <= 0 || dim > 1<<20 || c.inner == nil {
		return Leaf{}, fmt.Errorf("%w: fixed size list of %d items", errCorrupt, dim)
	}
	var valid []byte
	if c.hasValidity {
		if len(bufs) < 2 || len(bufs[0]) < (n*dim+7)/8 {
			return Leaf{}, fmt.Errorf("%w: fixed size list validity missing", errCorrupt)
		}
		valid = bufs[0][:(n*dim+7)/8]
		bufs = bufs[1:]
	}
	if c.inner.Kind == ceFixedSizeList {
		return Leaf{}, fmt.Errorf("nested fixed size lists are not supported")
	}
	l, err := decodeMini(c.inner, bufs, n*dim)
	if err != nil {
		return Leaf{}, err
	}
	if l.Offs != nil {
		return Leaf{}, fmt.Errorf("fixed size list of variable-width items is not supported")
	}
	return Leaf{N: n, Bits: l.Bits * dim, Data: l.Data, ItemValid: valid, Dim: dim}, nil
}

// decodeInlineBitpacking decodes a chunk of FastLanes-packed values, each
// 1024-value block prefixed by a word holding the bit width.
func decodeInlineBitpacking(b []byte, t, n int) (Leaf, error) {
	if t != 8 && t != 16 && t != 32 && t != 64 {
		return Leaf{}, fmt.Errorf("%w: inline bit-packing of %d-bit values", errCorrupt, t)
	}
	wb := t / 8
	blocks := (n + 1023) / 1024
	out := make([]byte, blocks*1024*wb)
	for k := 0; k < blocks; k++ {
		if len(b) < wb {
			return Leaf{}, fmt.Errorf("%w: bit-packed block %d truncated", errCorrupt, k)
		}
		w := int(bitpack.ReadWord(b, 0, t))
		b = b[wb:]
		if w > t {
			return Leaf{}, fmt.Errorf("%w: bit width %d for %d-bit values", errCorrupt, w, t)
		}
		sz := 1024 * w / 8
		if len(b) < sz {
			return Leaf{}, fmt.Errorf("%w: bit-packed block %d truncated", errCorrupt, k)
		}
		if err := bitpack.UnpackFastLanes(b[:sz], w, t, out[k*1024*wb:]); err != nil {
			return Leaf{}, err
		}
		b = b[sz:]
	}
	return Leaf{N: n, Bits: t, Data: out[:n*wb]}, nil
}

// decodeOutOfLineBitpacking decodes a block-context bit-packed buffer of n
// values of t bits packed at w bits: full FastLanes chunks, then a tail that
// is either a padded chunk or raw t-bit words.
func decodeOutOfLineBitpacking(b []byte, t, w, n int) (Leaf, error) {
	if t != 8 && t != 16 && t != 32 && t != 64 || w < 0 || w > t {
		return Leaf{}, fmt.Errorf("%w: bit-packing %d-bit values at %d bits", errCorrupt, t, w)
	}
	if n > maxDecodedBytes/8 {
		return Leaf{}, fmt.Errorf("%w: %d bit-packed values", errCorrupt, n)
	}
	wb := t / 8
	full := n / 1024
	tail := n % 1024
	chunk := 1024 * w / 8
	out := make([]byte, (full+1)*1024*wb)
	if len(b) < full*chunk {
		return Leaf{}, fmt.Errorf("%w: bit-packed buffer of %d bytes for %d values", errCorrupt, len(b), n)
	}
	for k := 0; k < full; k++ {
		if err := bitpack.UnpackFastLanes(b[k*chunk:], w, t, out[k*1024*wb:]); err != nil {
			return Leaf{}, err
		}
	}
	rest := b[full*chunk:]
	if tail > 0 {
		switch {
		case len(rest) == tail*wb:
			copy(out[full*1024*wb:], rest)
		case len(rest) >= chunk:
			if err := bitpack.UnpackFastLanes(rest, w, t, out[full*1024*wb:]); err != nil {
				return Leaf{}, err
			}
		default:
			return Leaf{}, fmt.Errorf("%w: bit-packed tail of %d bytes for %d values", errCorrupt, len(rest), tail)
		}
	}
	return Leaf{N: n, Bits: t, Data: out[:n*wb]}, nil
}

// decodeVariableMini decodes a Variable mini-block chunk buffer: n+1
// offsets (absolute within the buffer) then the bytes.
func decodeVariableMini(c *Compression, b []byte, n int) (Leaf, error) {
	if c.inner == nil || c.inner.Kind != CompressFlat || (c.inner.Bits != 32 && c.inner.Bits != 64) {
		return Leaf{}, fmt.Errorf("variable offsets %s are not supported", c.inner)
	}
	b, err := decompress(c.comp, b)
	if err != nil {
		return Leaf{}, err
	}
	w := int(c.inner.Bits / 8)
	if uint64(len(b)) < uint64(n+1)*uint64(w) {
		return Leaf{}, fmt.Errorf("%w: %d offsets do not fit %d bytes", errCorrupt, n+1, len(b))
	}
	offs := make([]uint64, n+1)
	for i := range offs {
		offs[i] = bitpack.ReadWord(b, i, w*8)
		if i > 0 && offs[i] < offs[i-1] || offs[i] > uint64(len(b)) {
			return Leaf{}, fmt.Errorf("%w: variable offset %d out of order or range", errCorrupt, offs[i])
		}
	}
	return Leaf{N: n, Data: b, Offs: offs}, nil
}

// decodeRle decodes run-length encoded values: runs × value and runs × u8
// run length.
func decodeRle(c *Compression, vals, runs []byte, n int) (Leaf, error) {
	if c.inner == nil || c.inner.Kind != CompressFlat || c.inner.Bits%8 != 0 || c.inner.Bits == 0 || c.runs == nil || c.runs.Kind != CompressFlat || c.runs.Bits != 8 {
		return Leaf{}, fmt.Errorf("rle with values %s and run lengths %s is not supported", c.inner, c.runs)
	}
	w := int(c.inner.Bits / 8)
	nr := len(runs)
	if len(vals) < nr*w {
		return Leaf{}, fmt.Errorf("%w: rle has %d runs but %d value bytes", errCorrupt, nr, len(vals))
	}
	out := make([]byte, 0, n*w)
	for i := 0; i < nr && len(out) < n*w; i++ {
		v := vals[i*w : i*w+w]
		for k := 0; k < int(runs[i]); k++ {
			out = append(out, v...)
		}
	}
	if len(out) < n*w {
		return Leaf{}, fmt.Errorf("%w: rle runs cover %d of %d values", errCorrupt, len(out)/w, n)
	}
	return Leaf{N: n, Bits: w * 8, Data: out[:n*w]}, nil
}

// decodeBlock decodes a whole opaque buffer (block context: rep/def levels,
// dictionaries) into n values.
func decodeBlock(c *Compression, b []byte, n int) (Leaf, error) {
	if n < 0 || n > maxDecodedBytes/8 {
		return Leaf{}, fmt.Errorf("%w: %d values in a block", errCorrupt, n)
	}
	switch c.Kind {
	case CompressFlat:
		b, err := decompress(c.comp, b)
		if err != nil {
			return Leaf{}, err
		}
		return fixedLeaf(b, n, int(c.Bits))
	case ceOutOfLineBitpacking:
		if c.inner == nil || c.inner.Kind != CompressFlat {
			return Leaf{}, fmt.Errorf("out-of-line bit-packing over %s is not supported", c.inner)
		}
		return decodeOutOfLineBitpacking(b, int(c.Bits), int(c.inner.Bits), n)
	case ceInlineBitpacking:
		return decodeInlineBitpacking(b, int(c.Bits), n)
	case ceRle:
		if len(b) < 8 {
			return Leaf{}, fmt.Errorf("%w: rle block of %d bytes", errCorrupt, len(b))
		}
		vb := binary.LittleEndian.Uint64(b)
		if vb > uint64(len(b)-8) {
			return Leaf{}, fmt.Errorf("%w: rle block values of %d bytes", errCorrupt, vb)
		}
		return decodeRle(c, b[8:8+vb], b[8+vb:], n)
	case ceGeneral:
		if c.inner == nil {
			return Leaf{}, fmt.Errorf("%w: general without values", errCorrupt)
		}
		d, err := decompress(c.comp, b)
		if err != nil {
			return Leaf{}, err
		}
		return decodeBlock(c.inner, d, n)
	case CompressVariable:
		return decodeVariableBlock(c, b, n)
	case ceFsst:
		if c.inner == nil {
			return Leaf{}, fmt.Errorf("%w: fsst without values", errCorrupt)
		}
		l, err := decodeBlock(c.inner, b, n)
		if err != nil {
			return Leaf{}, err
		}
		return fsstDecodeLeaf(c.symbols, l)
	}
	return Leaf{}, fmt.Errorf("block compression %s is not supported", c)
}

// decodeVariableBlock decodes a Variable block: a header with the offset
// width and the start of the bytes, the offsets, then the bytes.
func decodeVariableBlock(c *Compression, b []byte, n int) (Leaf, error) {
	b, err := decompress(c.comp, b)
	if err != nil {
		return Leaf{}, err
	}
	if len(b) < 8 {
		return Leaf{}, fmt.Errorf("%w: variable block of %d bytes", errCorrupt, len(b))
	}
	var w int
	var hdr int
	var start uint64
	if b[0] == 32 && b[1] == 0 && b[2] == 0 && b[3] == 0 {
		w, hdr, start = 4, 8, uint64(binary.LittleEndian.Uint32(b[4:]))
	} else if b[0] == 64 && len(b) >= 16 && b[1] == 0 {
		w, hdr, start = 8, 16, binary.LittleEndian.Uint64(b[8:])
	} else {
		return Leaf{}, fmt.Errorf("variable block header %x is not supported", b[:4])
	}
	body := b[hdr:]
	if uint64(len(body)) < uint64(n+1)*uint64(w) || start > uint64(len(b)) {
		return Leaf{}, fmt.Errorf("%w: variable block too short for %d values", errCorrupt, n)
	}
	offs := make([]uint64, n+1)
	for i := range offs {
		offs[i] = bitpack.ReadWord(body, i, w*8)
		if i > 0 && offs[i] < offs[i-1] || offs[i] > uint64(len(b))-start {
			return Leaf{}, fmt.Errorf("%w: variable offset out of order or range", errCorrupt)
		}
	}
	return Leaf{N: n, Data: b[start:], Offs: offs}, nil
}

// u16Levels converts decoded levels (of any width) to u16.
func u16Levels(l Leaf) ([]uint16, error) {
	out := make([]uint16, l.N)
	switch l.Bits {
	case 8, 16, 32, 64:
		for i := range out {
			v := bitpack.ReadWord(l.Data, i, l.Bits)
			if v > 0xffff {
				return nil, fmt.Errorf("%w: level %d", errCorrupt, v)
			}
			out[i] = uint16(v)
		}
	default:
		return nil, fmt.Errorf("%w: levels of %d bits", errCorrupt, l.Bits)
	}
	return out, nil
}

// fsstDecodeLeaf decompresses every value of a variable-width leaf.
func fsstDecodeLeaf(table []byte, l Leaf) (Leaf, error) {
	if l.Offs == nil {
		return Leaf{}, fmt.Errorf("%w: fsst over fixed-width values", errCorrupt)
	}
	t, err := fsst.ParseTable(table)
	if err != nil {
		return Leaf{}, err
	}
	out := Leaf{N: l.N, Offs: make([]uint64, l.N+1)}
	buf := make([]byte, 0, len(l.Data)*2)
	for i := 0; i < l.N; i++ {
		buf, err = t.Decode(buf, l.Data[l.Offs[i]:l.Offs[i+1]], maxDecodedBytes)
		if err != nil {
			return Leaf{}, err
		}
		out.Offs[i+1] = uint64(len(buf))
	}
	out.Data = buf
	return out, nil
}
