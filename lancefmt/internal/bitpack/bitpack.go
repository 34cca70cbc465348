// Package bitpack reads and writes little-endian words of 8, 16, 32 or 64
// bits and unpacks FastLanes bit-packed chunks, for the Lance decoders. It
// is not a general bit-packing library: it packs nothing.
package bitpack

import (
	"encoding/binary"
	"fmt"

	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// flOrder is the FastLanes row permutation within a group of 8 rows.
var flOrder = [8]int{0, 4, 2, 6, 1, 5, 3, 7}

// ReadWord reads the i-th little-endian word of t bits from b.
func ReadWord(b []byte, i, t int) uint64 {
	switch t {
	case 8:
		return uint64(b[i])
	case 16:
		return uint64(binary.LittleEndian.Uint16(b[2*i:]))
	case 32:
		return uint64(binary.LittleEndian.Uint32(b[4*i:]))
	default:
		return binary.LittleEndian.Uint64(b[8*i:])
	}
}

// WriteWord stores v as the i-th little-endian word of t bits in b.
func WriteWord(b []byte, i, t int, v uint64) {
	switch t {
	case 8:
		b[i] = byte(v)
	case 16:
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	case 32:
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	default:
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
}

// UnpackFastLanes unpacks one FastLanes chunk of 1024 values of t bits
// (t in 8, 16, 32, 64) packed at w bits each from in (1024*w/t words) into
// out (1024 words of t bits).
func UnpackFastLanes(in []byte, w, t int, out []byte) error {
	if w < 0 || w > t {
		return fmt.Errorf("%w: bit width %d for %d-bit values", wire.ErrCorrupt, w, t)
	}
	if len(out) < 1024*t/8 {
		return fmt.Errorf("%w: fastlanes output too small", wire.ErrCorrupt)
	}
	if w == 0 {
		clear(out[:1024*t/8])
		return nil
	}
	if len(in) < 1024*w/8 {
		return fmt.Errorf("%w: fastlanes chunk needs %d bytes, has %d", wire.ErrCorrupt, 1024*w/8, len(in))
	}
	lanes := 1024 / t
	var mask uint64 = 1<<uint(w) - 1
	if w == 64 {
		mask = ^uint64(0)
	}
	for lane := 0; lane < lanes; lane++ {
		for row := 0; row < t; row++ {
			bit := row * w
			wi, sh := bit/t, bit%t
			v := ReadWord(in, lanes*wi+lane, t) >> uint(sh)
			if sh+w > t {
				v |= ReadWord(in, lanes*(wi+1)+lane, t) << uint(t-sh)
			}
			idx := flOrder[row/8]*16 + (row%8)*128 + lane
			WriteWord(out, idx, t, v&mask)
		}
	}
	return nil
}
