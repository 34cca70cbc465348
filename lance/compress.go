package lance

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/bpconvert/bpconvert/lance/internal/bitpack"
	"github.com/bpconvert/bpconvert/lance/internal/fsst"
	"github.com/bpconvert/bpconvert/lance/internal/wire"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compressive encoding kinds (the oneof field numbers of the 2.1+
// CompressiveEncoding message).
const (
	ceFlat                = 1
	ceVariable            = 2
	ceConstant            = 3
	ceOutOfLineBitpacking = 4
	ceInlineBitpacking    = 5
	ceFsst                = 6
	ceDictionary          = 7
	ceRle                 = 8
	ceByteStreamSplit     = 9
	ceGeneral             = 10
	ceFixedSizeList       = 11
	cePackedStruct        = 12
	ceVariablePackedStruc = 13
)

var ceNames = map[int]string{
	ceFlat: "Flat", ceVariable: "Variable", ceConstant: "Constant", ceOutOfLineBitpacking: "OutOfLineBitpacking",
	ceInlineBitpacking: "InlineBitpacking", ceFsst: "Fsst", ceDictionary: "Dictionary", ceRle: "Rle",
	ceByteStreamSplit: "ByteStreamSplit", ceGeneral: "General", ceFixedSizeList: "FixedSizeList",
	cePackedStruct: "PackedStruct", ceVariablePackedStruc: "VariablePackedStruct", 14: "Range", 15: "Delta",
}

// maxDecodedBytes bounds any single decompressed or decoded buffer.
const maxDecodedBytes = 1 << 28

// maxPageItems bounds the number of values (rows, items or list items) of a
// single page, so that hostile lengths cannot force huge allocations.
const maxPageItems = 1 << 26

// cenc is a decoded CompressiveEncoding tree.
type cenc struct {
	kind        int
	bits        uint64 // Flat: bits per value; bit-packing: uncompressed bits; FSL: items per value
	comp        int    // buffer compression: 0 none, 1 lz4, 2 zstd
	inner       *cenc  // Variable offsets, Fsst/Rle/General/FSL/OutOfLine values, ByteStreamSplit values
	runs        *cenc  // Rle run lengths
	symbols     []byte // Fsst symbol table
	hasValidity bool   // FixedSizeList
	value       []byte // Constant
	fields      []*cenc
}

// String names the encoding tree, for error messages.
func (c *cenc) String() string {
	if c == nil {
		return "none"
	}
	n := ceNames[c.kind]
	if n == "" {
		n = fmt.Sprintf("CompressiveEncoding(%d)", c.kind)
	}
	switch c.kind {
	case ceFlat, ceInlineBitpacking, ceOutOfLineBitpacking:
		n = fmt.Sprintf("%s(%d)", n, c.bits)
	}
	if c.inner != nil {
		n += "<" + c.inner.String() + ">"
	}
	return n
}

// parseBufferCompression decodes a BufferCompression message.
func parseBufferCompression(b []byte) (int, error) {
	scheme := 0
	err := wire.Walk(b, func(f wire.Field) error {
		if f.Num == 1 {
			scheme = int(f.U)
		}
		return nil
	})
	if scheme > schemeZstd {
		return 0, fmt.Errorf("unsupported buffer compression scheme %d", scheme)
	}
	return scheme, err
}

// parseCenc decodes a CompressiveEncoding message.
func parseCenc(b []byte, depth int) (*cenc, error) {
	if depth > 16 {
		return nil, fmt.Errorf("%w: compressive encoding nested too deep", errCorrupt)
	}
	var c *cenc
	err := wire.Walk(b, func(f wire.Field) error {
		if c != nil {
			return nil
		}
		c = &cenc{kind: int(f.Num)}
		return wire.Walk(f.B, func(g wire.Field) error {
			var err error
			sub := func() (*cenc, error) { return parseCenc(g.B, depth+1) }
			switch c.kind {
			case ceFlat:
				switch g.Num {
				case 1:
					c.bits = g.U
				case 2:
					c.comp, err = parseBufferCompression(g.B)
				}
			case ceVariable:
				switch g.Num {
				case 1:
					c.inner, err = sub()
				case 2:
					c.comp, err = parseBufferCompression(g.B)
				}
			case ceConstant:
				if g.Num == 1 {
					c.value = g.B
				}
			case ceOutOfLineBitpacking:
				switch g.Num {
				case 1:
					c.bits = g.U
				case 3:
					c.inner, err = sub()
				}
			case ceInlineBitpacking:
				switch g.Num {
				case 1:
					c.bits = g.U
				case 2:
					c.comp, err = parseBufferCompression(g.B)
				}
			case ceFsst:
				switch g.Num {
				case 1:
					c.symbols = g.B
				case 2:
					c.inner, err = sub()
				}
			case ceRle:
				switch g.Num {
				case 1:
					c.inner, err = sub()
				case 2:
					c.runs, err = sub()
				}
			case ceByteStreamSplit:
				if g.Num == 1 {
					c.inner, err = sub()
				}
			case ceGeneral:
				switch g.Num {
				case 1:
					c.comp, err = parseBufferCompression(g.B)
				case 2, 3:
					c.inner, err = sub()
				}
			case ceFixedSizeList:
				switch g.Num {
				case 1:
					c.bits = g.U
				case 2:
					c.inner, err = sub()
				case 3:
					c.hasValidity = g.U != 0
				}
			case ceVariablePackedStruc:
				if g.Num == 1 {
					var fe *cenc
					fe, err = parseFieldEncoding(g.B, depth+1)
					c.fields = append(c.fields, fe)
				}
			case cePackedStruct:
				switch g.Num {
				case 1:
					var vs []uint64
					vs, err = wire.PackedUints(nil, g)
					for _, v := range vs {
						c.fields = append(c.fields, &cenc{kind: ceFlat, bits: v})
					}
				case 2:
					c.inner, err = sub()
				}
			}
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: empty compressive encoding", errCorrupt)
	}
	return c, nil
}

// parseFieldEncoding decodes a VariablePackedStruct FieldEncoding: the
// child's encoding plus either bits_per_value (fixed) or bits_per_length
// (variable). Fixed children are returned as Flat, variable ones as Variable.
func parseFieldEncoding(b []byte, depth int) (*cenc, error) {
	var fe *cenc
	var fixed, length uint64
	err := wire.Walk(b, func(f wire.Field) error {
		var err error
		switch f.Num {
		case 1:
			fe, err = parseCenc(f.B, depth+1)
		case 2:
			fixed = f.U
		case 3:
			length = f.U
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if length != 0 {
		return &cenc{kind: ceVariable, bits: length, inner: fe}, nil
	}
	return &cenc{kind: ceFlat, bits: fixed, inner: fe}, nil
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
		zstdOnce.Do(func() {
			zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecodedBytes))
		})
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

// leaf holds decoded values of a leaf column: n values, fixed width (bits >
// 0, bitmap when bits == 1) or variable width (offs has n+1 entries).
type leaf struct {
	n         int
	bits      int
	data      []byte
	offs      []uint64
	itemValid []byte // fixed-size-list item validity, n*dim bits; nil = all valid
	dim       int    // fixed-size-list dimension, 0 when not a list
}

// appendLeaf appends src to dst (same shape).
func appendLeaf(dst *leaf, src leaf) error {
	if dst.n == 0 && dst.data == nil && dst.offs == nil {
		// Copy: src may alias a page buffer that later appends would clobber.
		*dst = src
		if src.offs != nil {
			start := src.offs[0]
			dst.offs = make([]uint64, len(src.offs))
			for i, o := range src.offs {
				dst.offs[i] = o - start
			}
			dst.data = append([]byte(nil), src.data[start:src.offs[src.n]]...)
		} else {
			dst.data = append([]byte(nil), src.data...)
		}
		if src.itemValid != nil {
			dst.itemValid = append([]byte(nil), src.itemValid...)
		}
		return nil
	}
	if (dst.offs == nil) != (src.offs == nil) || dst.bits != src.bits || dst.dim != src.dim {
		return fmt.Errorf("%w: chunks of different shape", errCorrupt)
	}
	if src.itemValid != nil || dst.itemValid != nil {
		dv, sv := dst.itemValid, src.itemValid
		if dv == nil {
			dv = allValid(dst.n * dst.dim)
		}
		if sv == nil {
			sv = allValid(src.n * src.dim)
		}
		dst.itemValid = appendBits(dv, dst.n*dst.dim, sv, src.n*src.dim)
	}
	switch {
	case src.offs != nil:
		base := dst.offs[len(dst.offs)-1]
		start := src.offs[0]
		for _, o := range src.offs[1:] {
			dst.offs = append(dst.offs, base+o-start)
		}
		dst.data = append(dst.data, src.data[start:src.offs[len(src.offs)-1]]...)
	case dst.bits == 1:
		dst.data = appendBits(dst.data, dst.n, src.data, src.n)
	default:
		w := dst.bits / 8
		dst.data = append(dst.data[:dst.n*w], src.data[:src.n*w]...)
	}
	dst.n += src.n
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
func fixedLeaf(b []byte, n, bitsPer int) (leaf, error) {
	need := uint64(n) * uint64(bitsPer)
	need = (need + 7) / 8
	if bitsPer <= 0 || bitsPer > 1 && bitsPer%8 != 0 {
		return leaf{}, fmt.Errorf("%w: %d bits per value", errCorrupt, bitsPer)
	}
	if uint64(len(b)) < need {
		return leaf{}, fmt.Errorf("%w: %d values of %d bits need %d bytes, have %d", errCorrupt, n, bitsPer, need, len(b))
	}
	return leaf{n: n, bits: bitsPer, data: b[:need]}, nil
}

// decodeMini decodes one mini-block chunk's value buffers into n values.
func decodeMini(c *cenc, bufs [][]byte, n int) (leaf, error) {
	if n < 0 || n > 1<<20 {
		return leaf{}, fmt.Errorf("%w: %d values in one chunk", errCorrupt, n)
	}
	if len(bufs) == 0 {
		return leaf{}, fmt.Errorf("%w: chunk without value buffers", errCorrupt)
	}
	switch c.kind {
	case ceFlat:
		b, err := decompress(c.comp, bufs[0])
		if err != nil {
			return leaf{}, err
		}
		return fixedLeaf(b, n, int(c.bits))
	case ceInlineBitpacking:
		return decodeInlineBitpacking(bufs[0], int(c.bits), n)
	case ceVariable:
		return decodeVariableMini(c, bufs[0], n)
	case ceFsst:
		if c.inner == nil {
			return leaf{}, fmt.Errorf("%w: fsst without values", errCorrupt)
		}
		l, err := decodeMini(c.inner, bufs, n)
		if err != nil {
			return leaf{}, err
		}
		return fsstDecodeLeaf(c.symbols, l)
	case ceRle:
		if len(bufs) < 2 {
			return leaf{}, fmt.Errorf("%w: rle chunk needs 2 buffers", errCorrupt)
		}
		return decodeRle(c, bufs[0], bufs[1], n)
	case ceGeneral:
		if c.inner == nil {
			return leaf{}, fmt.Errorf("%w: general without values", errCorrupt)
		}
		b, err := decompress(c.comp, bufs[0])
		if err != nil {
			return leaf{}, err
		}
		nb := append([][]byte{b}, bufs[1:]...)
		return decodeMini(c.inner, nb, n)
	case ceFixedSizeList:
		return decodeFSLMini(c, bufs, n)
	case cePackedStruct:
		// Row-major fixed-width children; yields one value of their total
		// width per row.
		if c.inner == nil || c.inner.kind != ceFlat {
			return leaf{}, fmt.Errorf("packed struct over %s is not supported", c.inner)
		}
		return decodeMini(c.inner, bufs, n)
	case ceByteStreamSplit:
		if c.inner == nil || c.inner.kind != ceFlat || c.inner.bits%8 != 0 {
			return leaf{}, fmt.Errorf("byte stream split over %s is not supported", c.inner)
		}
		w := int(c.inner.bits / 8)
		if len(bufs[0]) < n*w {
			return leaf{}, fmt.Errorf("%w: byte stream split buffer too short", errCorrupt)
		}
		out := make([]byte, n*w)
		for i := 0; i < n; i++ {
			for k := 0; k < w; k++ {
				out[i*w+k] = bufs[0][k*n+i]
			}
		}
		return leaf{n: n, bits: w * 8, data: out}, nil
	}
	return leaf{}, fmt.Errorf("mini-block value compression %s is not supported", c)
}

// decodeFSLMini decodes a FixedSizeList mini-block chunk: an optional item
// validity bitmap then the items.
func decodeFSLMini(c *cenc, bufs [][]byte, n int) (leaf, error) {
	dim := int(c.bits)
	if dim <= 0 || dim > 1<<20 || c.inner == nil {
		return leaf{}, fmt.Errorf("%w: fixed size list of %d items", errCorrupt, dim)
	}
	var valid []byte
	if c.hasValidity {
		if len(bufs) < 2 || len(bufs[0]) < (n*dim+7)/8 {
			return leaf{}, fmt.Errorf("%w: fixed size list validity missing", errCorrupt)
		}
		valid = bufs[0][:(n*dim+7)/8]
		bufs = bufs[1:]
	}
	if c.inner.kind == ceFixedSizeList {
		return leaf{}, fmt.Errorf("nested fixed size lists are not supported")
	}
	l, err := decodeMini(c.inner, bufs, n*dim)
	if err != nil {
		return leaf{}, err
	}
	if l.offs != nil {
		return leaf{}, fmt.Errorf("fixed size list of variable-width items is not supported")
	}
	return leaf{n: n, bits: l.bits * dim, data: l.data, itemValid: valid, dim: dim}, nil
}

// decodeInlineBitpacking decodes a chunk of FastLanes-packed values, each
// 1024-value block prefixed by a word holding the bit width.
func decodeInlineBitpacking(b []byte, t, n int) (leaf, error) {
	if t != 8 && t != 16 && t != 32 && t != 64 {
		return leaf{}, fmt.Errorf("%w: inline bit-packing of %d-bit values", errCorrupt, t)
	}
	wb := t / 8
	blocks := (n + 1023) / 1024
	out := make([]byte, blocks*1024*wb)
	for k := 0; k < blocks; k++ {
		if len(b) < wb {
			return leaf{}, fmt.Errorf("%w: bit-packed block %d truncated", errCorrupt, k)
		}
		w := int(bitpack.ReadWord(b, 0, t))
		b = b[wb:]
		if w > t {
			return leaf{}, fmt.Errorf("%w: bit width %d for %d-bit values", errCorrupt, w, t)
		}
		sz := 1024 * w / 8
		if len(b) < sz {
			return leaf{}, fmt.Errorf("%w: bit-packed block %d truncated", errCorrupt, k)
		}
		if err := bitpack.UnpackFastLanes(b[:sz], w, t, out[k*1024*wb:]); err != nil {
			return leaf{}, err
		}
		b = b[sz:]
	}
	return leaf{n: n, bits: t, data: out[:n*wb]}, nil
}

// decodeOutOfLineBitpacking decodes a block-context bit-packed buffer of n
// values of t bits packed at w bits: full FastLanes chunks, then a tail that
// is either a padded chunk or raw t-bit words.
func decodeOutOfLineBitpacking(b []byte, t, w, n int) (leaf, error) {
	if t != 8 && t != 16 && t != 32 && t != 64 || w < 0 || w > t {
		return leaf{}, fmt.Errorf("%w: bit-packing %d-bit values at %d bits", errCorrupt, t, w)
	}
	if n > maxDecodedBytes/8 {
		return leaf{}, fmt.Errorf("%w: %d bit-packed values", errCorrupt, n)
	}
	wb := t / 8
	full := n / 1024
	tail := n % 1024
	chunk := 1024 * w / 8
	out := make([]byte, (full+1)*1024*wb)
	if len(b) < full*chunk {
		return leaf{}, fmt.Errorf("%w: bit-packed buffer of %d bytes for %d values", errCorrupt, len(b), n)
	}
	for k := 0; k < full; k++ {
		if err := bitpack.UnpackFastLanes(b[k*chunk:], w, t, out[k*1024*wb:]); err != nil {
			return leaf{}, err
		}
	}
	rest := b[full*chunk:]
	if tail > 0 {
		switch {
		case len(rest) == tail*wb:
			copy(out[full*1024*wb:], rest)
		case len(rest) >= chunk:
			if err := bitpack.UnpackFastLanes(rest, w, t, out[full*1024*wb:]); err != nil {
				return leaf{}, err
			}
		default:
			return leaf{}, fmt.Errorf("%w: bit-packed tail of %d bytes for %d values", errCorrupt, len(rest), tail)
		}
	}
	return leaf{n: n, bits: t, data: out[:n*wb]}, nil
}

// decodeVariableMini decodes a Variable mini-block chunk buffer: n+1
// offsets (absolute within the buffer) then the bytes.
func decodeVariableMini(c *cenc, b []byte, n int) (leaf, error) {
	if c.inner == nil || c.inner.kind != ceFlat || (c.inner.bits != 32 && c.inner.bits != 64) {
		return leaf{}, fmt.Errorf("variable offsets %s are not supported", c.inner)
	}
	b, err := decompress(c.comp, b)
	if err != nil {
		return leaf{}, err
	}
	w := int(c.inner.bits / 8)
	if uint64(len(b)) < uint64(n+1)*uint64(w) {
		return leaf{}, fmt.Errorf("%w: %d offsets do not fit %d bytes", errCorrupt, n+1, len(b))
	}
	offs := make([]uint64, n+1)
	for i := range offs {
		offs[i] = bitpack.ReadWord(b, i, w*8)
		if i > 0 && offs[i] < offs[i-1] || offs[i] > uint64(len(b)) {
			return leaf{}, fmt.Errorf("%w: variable offset %d out of order or range", errCorrupt, offs[i])
		}
	}
	return leaf{n: n, data: b, offs: offs}, nil
}

// decodeRle decodes run-length encoded values: runs × value and runs × u8
// run length.
func decodeRle(c *cenc, vals, runs []byte, n int) (leaf, error) {
	if c.inner == nil || c.inner.kind != ceFlat || c.inner.bits%8 != 0 || c.inner.bits == 0 || c.runs == nil || c.runs.kind != ceFlat || c.runs.bits != 8 {
		return leaf{}, fmt.Errorf("rle with values %s and run lengths %s is not supported", c.inner, c.runs)
	}
	w := int(c.inner.bits / 8)
	nr := len(runs)
	if len(vals) < nr*w {
		return leaf{}, fmt.Errorf("%w: rle has %d runs but %d value bytes", errCorrupt, nr, len(vals))
	}
	out := make([]byte, 0, n*w)
	for i := 0; i < nr && len(out) < n*w; i++ {
		v := vals[i*w : i*w+w]
		for k := 0; k < int(runs[i]); k++ {
			out = append(out, v...)
		}
	}
	if len(out) < n*w {
		return leaf{}, fmt.Errorf("%w: rle runs cover %d of %d values", errCorrupt, len(out)/w, n)
	}
	return leaf{n: n, bits: w * 8, data: out[:n*w]}, nil
}

// decodeBlock decodes a whole opaque buffer (block context: rep/def levels,
// dictionaries) into n values.
func decodeBlock(c *cenc, b []byte, n int) (leaf, error) {
	if n < 0 || n > maxDecodedBytes/8 {
		return leaf{}, fmt.Errorf("%w: %d values in a block", errCorrupt, n)
	}
	switch c.kind {
	case ceFlat:
		b, err := decompress(c.comp, b)
		if err != nil {
			return leaf{}, err
		}
		return fixedLeaf(b, n, int(c.bits))
	case ceOutOfLineBitpacking:
		if c.inner == nil || c.inner.kind != ceFlat {
			return leaf{}, fmt.Errorf("out-of-line bit-packing over %s is not supported", c.inner)
		}
		return decodeOutOfLineBitpacking(b, int(c.bits), int(c.inner.bits), n)
	case ceInlineBitpacking:
		return decodeInlineBitpacking(b, int(c.bits), n)
	case ceRle:
		if len(b) < 8 {
			return leaf{}, fmt.Errorf("%w: rle block of %d bytes", errCorrupt, len(b))
		}
		vb := binary.LittleEndian.Uint64(b)
		if vb > uint64(len(b)-8) {
			return leaf{}, fmt.Errorf("%w: rle block values of %d bytes", errCorrupt, vb)
		}
		return decodeRle(c, b[8:8+vb], b[8+vb:], n)
	case ceGeneral:
		if c.inner == nil {
			return leaf{}, fmt.Errorf("%w: general without values", errCorrupt)
		}
		d, err := decompress(c.comp, b)
		if err != nil {
			return leaf{}, err
		}
		return decodeBlock(c.inner, d, n)
	case ceVariable:
		return decodeVariableBlock(c, b, n)
	case ceFsst:
		if c.inner == nil {
			return leaf{}, fmt.Errorf("%w: fsst without values", errCorrupt)
		}
		l, err := decodeBlock(c.inner, b, n)
		if err != nil {
			return leaf{}, err
		}
		return fsstDecodeLeaf(c.symbols, l)
	}
	return leaf{}, fmt.Errorf("block compression %s is not supported", c)
}

// decodeVariableBlock decodes a Variable block: a header with the offset
// width and the start of the bytes, the offsets, then the bytes.
func decodeVariableBlock(c *cenc, b []byte, n int) (leaf, error) {
	b, err := decompress(c.comp, b)
	if err != nil {
		return leaf{}, err
	}
	if len(b) < 8 {
		return leaf{}, fmt.Errorf("%w: variable block of %d bytes", errCorrupt, len(b))
	}
	var w int
	var hdr int
	var start uint64
	if b[0] == 32 && b[1] == 0 && b[2] == 0 && b[3] == 0 {
		w, hdr, start = 4, 8, uint64(binary.LittleEndian.Uint32(b[4:]))
	} else if b[0] == 64 && len(b) >= 16 && b[1] == 0 {
		w, hdr, start = 8, 16, binary.LittleEndian.Uint64(b[8:])
	} else {
		return leaf{}, fmt.Errorf("variable block header %x is not supported", b[:4])
	}
	body := b[hdr:]
	if uint64(len(body)) < uint64(n+1)*uint64(w) || start > uint64(len(b)) {
		return leaf{}, fmt.Errorf("%w: variable block too short for %d values", errCorrupt, n)
	}
	offs := make([]uint64, n+1)
	for i := range offs {
		offs[i] = bitpack.ReadWord(body, i, w*8)
		if i > 0 && offs[i] < offs[i-1] || offs[i] > uint64(len(b))-start {
			return leaf{}, fmt.Errorf("%w: variable offset out of order or range", errCorrupt)
		}
	}
	return leaf{n: n, data: b[start:], offs: offs}, nil
}

// u16Levels converts decoded levels (of any width) to u16.
func u16Levels(l leaf) ([]uint16, error) {
	out := make([]uint16, l.n)
	switch l.bits {
	case 8, 16, 32, 64:
		for i := range out {
			v := bitpack.ReadWord(l.data, i, l.bits)
			if v > 0xffff {
				return nil, fmt.Errorf("%w: level %d", errCorrupt, v)
			}
			out[i] = uint16(v)
		}
	default:
		return nil, fmt.Errorf("%w: levels of %d bits", errCorrupt, l.bits)
	}
	return out, nil
}

// fsstDecodeLeaf decompresses every value of a variable-width leaf.
func fsstDecodeLeaf(table []byte, l leaf) (leaf, error) {
	if l.offs == nil {
		return leaf{}, fmt.Errorf("%w: fsst over fixed-width values", errCorrupt)
	}
	t, err := fsst.ParseTable(table)
	if err != nil {
		return leaf{}, err
	}
	out := leaf{n: l.n, offs: make([]uint64, l.n+1)}
	buf := make([]byte, 0, len(l.data)*2)
	for i := 0; i < l.n; i++ {
		buf, err = t.Decode(buf, l.data[l.offs[i]:l.offs[i+1]], maxDecodedBytes)
		if err != nil {
			return leaf{}, err
		}
		out.offs[i+1] = uint64(len(buf))
	}
	out.data = buf
	return out, nil
}
