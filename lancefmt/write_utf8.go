package lancefmt

import (
	"encoding/binary"
	"fmt"

	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
	"google.golang.org/protobuf/encoding/protowire"
)

// outPage is one encoded page ready to be written: its buffers, its length
// (rows) and its encoding (a lance.file.v2.Encoding message).
type outPage struct {
	buffers  [][]byte
	length   uint64
	encoding []byte
	priority uint64 // first row of the page
}

// Page size limits of the utf8 writer.
const (
	utf8PageBytes   = 8 << 20 // value bytes per page
	utf8PageRows    = 1 << 20
	miniChunkTarget = 4 << 10 // preferred mini-block chunk size
	miniChunkMax21  = 32 << 10
	miniChunkValues = 4096 // values per mini-block chunk at most
)

// utf8Pages splits values [0, n) into page ranges of at most utf8PageRows
// rows and utf8PageBytes value bytes (at least one row each).
func utf8Pages(vals []string, fn func(lo, hi int) error) error {
	lo := 0
	for lo < len(vals) {
		hi, bytes := lo, 0
		for hi < len(vals) && hi-lo < utf8PageRows && (hi == lo || bytes+len(vals[hi]) <= utf8PageBytes) {
			bytes += len(vals[hi])
			hi++
		}
		if err := fn(lo, hi); err != nil {
			return err
		}
		lo = hi
	}
	return nil
}

// arrayEnc wraps one ArrayEncoding oneof member.
func arrayEnc(kind int, msg []byte) []byte {
	return pbuf(nil).bytes(protowire.Number(kind), msg)
}

// flat20 is ArrayEncoding{flat{bits, buffer{index}}}.
func flat20(bits uint64, buf uint32) []byte {
	b := pbuf(nil).varint(1, bits)
	bufMsg := pbuf(nil)
	if buf != 0 {
		bufMsg = bufMsg.varint(1, uint64(buf))
	}
	b = b.bytes(2, bufMsg)
	return arrayEnc(1, b)
}

// encodeUTF8Pages20 encodes a nullable utf8 column in the 2.0 Binary
// encoding: u64 end offsets (plus null_adjustment for nulls) and the bytes.
func encodeUTF8Pages20(vals []string, valid []bool, emit func(outPage) error) error {
	return utf8Pages(vals, func(lo, hi int) error {
		total := 0
		for i := lo; i < hi; i++ {
			if valid[i] {
				total += len(vals[i])
			}
		}
		adj := uint64(total) + 1
		idx := make([]byte, 8*(hi-lo))
		data := make([]byte, 0, total)
		for i := lo; i < hi; i++ {
			if valid[i] {
				data = append(data, vals[i]...)
			}
			end := uint64(len(data))
			if !valid[i] {
				end += adj
			}
			binary.LittleEndian.PutUint64(idx[8*(i-lo):], end)
		}
		noNull := pbuf(nil).bytes(1, flat20(64, 0))
		indices := arrayEnc(2, pbuf(nil).bytes(1, noNull))
		bin := pbuf(nil).bytes(1, indices).bytes(2, flat20(8, 1)).varint(3, adj)
		enc := anyEncoding(typeArrayEncoding, arrayEnc(6, bin))
		return emit(outPage{buffers: [][]byte{idx, data}, length: uint64(hi - lo), encoding: enc, priority: uint64(lo)})
	})
}

// encodeUTF8Pages21 encodes a nullable utf8 column of a 2.1 or 2.2 file as
// mini-block pages: Variable values with 32-bit offsets and, when the page
// holds nulls, 16-bit definition levels (0 valid, 1 null). 2.2 pages use
// 32-bit chunk words (has_large_chunk), which lifts the 32 KiB chunk limit.
func encodeUTF8Pages21(vals []string, valid []bool, large bool, emit func(outPage) error) error {
	return utf8Pages(vals, func(lo, hi int) error {
		hasNull := false
		for i := lo; i < hi; i++ {
			if !valid[i] {
				hasNull = true
				break
			}
		}
		valLen := func(i int) int {
			if valid[i] {
				return len(vals[i])
			}
			return 0
		}
		// chunkBytes is the size of a chunk holding values [a, b).
		chunkBytes := func(a, b int) int {
			hdr := 2 + 2 // num_levels, value buffer size
			if large {
				hdr += 2
			}
			if hasNull {
				hdr += 2
			}
			n := pad8(hdr)
			if hasNull {
				n += pad8(2 * (b - a))
			}
			v := 4 * (b - a + 1)
			for i := a; i < b; i++ {
				v += valLen(i)
			}
			return n + pad8(pad4(v))
		}
		limit := miniChunkMax21
		if large {
			limit = 1 << 30
		}
		var meta, data []byte
		pos := lo
		for pos < hi {
			rem := hi - pos
			var n int
			last := false
			if rem <= miniChunkValues && chunkBytes(pos, hi) <= miniChunkTarget {
				n, last = rem, true
			} else {
				n = 1
				for k := miniChunkValues; k >= 1; k /= 2 {
					if k <= rem && chunkBytes(pos, pos+k) <= miniChunkTarget {
						n = k
						break
					}
				}
				if n == rem {
					last = true
				}
			}
			size := chunkBytes(pos, pos+n)
			if size > limit {
				return fmt.Errorf("value %d of %d bytes is too long for a 2.1 mini-block chunk", pos, valLen(pos))
			}
			chunk := make([]byte, 0, size)
			le := binary.LittleEndian
			levels := 0
			if hasNull {
				levels = n
			}
			// The value buffer (offsets then bytes) is padded to whole
			// offsets: Lance reads it as a slice of u32.
			vsize := 4 * (n + 1)
			for i := pos; i < pos+n; i++ {
				vsize += valLen(i)
			}
			vsize = pad4(vsize)
			chunk = le.AppendUint16(chunk, uint16(levels))
			if hasNull {
				chunk = le.AppendUint16(chunk, uint16(2*n))
			}
			if large {
				chunk = le.AppendUint32(chunk, uint32(vsize))
			} else {
				chunk = le.AppendUint16(chunk, uint16(vsize))
			}
			chunk = padTo8(chunk)
			if hasNull {
				for i := pos; i < pos+n; i++ {
					d := uint16(0)
					if !valid[i] {
						d = 1
					}
					chunk = le.AppendUint16(chunk, d)
				}
				chunk = padTo8(chunk)
			}
			base := len(chunk)
			off := uint32(4 * (n + 1))
			chunk = le.AppendUint32(chunk, off)
			for i := pos; i < pos+n; i++ {
				off += uint32(valLen(i))
				chunk = le.AppendUint32(chunk, off)
			}
			for i := pos; i < pos+n; i++ {
				if valid[i] {
					chunk = append(chunk, vals[i]...)
				}
			}
			for (len(chunk)-base)%4 != 0 {
				chunk = append(chunk, 0)
			}
			if len(chunk)-base != vsize {
				return fmt.Errorf("internal error: chunk value buffer of %d bytes, expected %d", len(chunk)-base, vsize)
			}
			chunk = padTo8(chunk)
			if len(chunk) != size {
				return fmt.Errorf("internal error: chunk of %d bytes, expected %d", len(chunk), size)
			}
			logN := 0
			if !last {
				for 1<<logN < n {
					logN++
				}
			}
			word := uint64(size/8-1)<<4 | uint64(logN)
			if large {
				meta = le.AppendUint32(meta, uint32(word))
			} else {
				meta = le.AppendUint16(meta, uint16(word))
			}
			data = append(data, chunk...)
			pos += n
		}
		flat32 := pbuf(nil).bytes(1, pbuf(nil).varint(1, 32))
		variable := pbuf(nil).bytes(2, pbuf(nil).bytes(1, flat32))
		layer := uint64(decode.LayerAllValidItem)
		mb := pbuf(nil)
		if hasNull {
			flat16 := pbuf(nil).bytes(1, pbuf(nil).varint(1, 16))
			mb = mb.bytes(2, flat16)
			layer = decode.LayerNullableItem
		}
		mb = mb.bytes(3, variable).packed(6, []uint64{layer}).varint(7, 1).varint(9, uint64(hi-lo))
		if large {
			mb = mb.varint(10, 1)
		}
		enc := anyEncoding(typePageLayout, pbuf(nil).bytes(1, mb))
		return emit(outPage{buffers: [][]byte{meta, data}, length: uint64(hi - lo), encoding: enc, priority: uint64(lo)})
	})
}

// pad4 rounds n up to a multiple of 4.
func pad4(n int) int { return (n + 3) &^ 3 }

// pad8 rounds n up to a multiple of 8.
func pad8(n int) int { return (n + 7) &^ 7 }

// padTo8 zero-pads b to a multiple of 8 bytes.
func padTo8(b []byte) []byte {
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}
