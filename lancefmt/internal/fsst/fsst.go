// Package fsst decodes strings compressed with FSST (Fast Static Symbol
// Table) as Lance stores them: a serialized symbol table and codes. It does
// not compress.
package fsst

import (
	"encoding/binary"
	"fmt"

	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// Table is a parsed FSST symbol table.
type Table struct {
	enabled bool
	syms    [255][8]byte
	lens    [255]uint8
	n       int
}

// ParseTable parses Lance's serialization of an FSST symbol table: a u64
// header ("FSST" magic, encoder switch, suffix limit, terminator, symbol
// count), the symbols as u64 words, then one length byte per symbol.
func ParseTable(b []byte) (*Table, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: fsst symbol table of %d bytes", wire.ErrCorrupt, len(b))
	}
	h := binary.LittleEndian.Uint64(b)
	if h>>32 != 0x46535354 {
		return nil, fmt.Errorf("%w: fsst symbol table magic %#x", wire.ErrCorrupt, h>>32)
	}
	t := &Table{enabled: (h>>24)&0xff != 0, n: int(h & 0xff)}
	if t.n > 255 || len(b) < 8+t.n*9 {
		return nil, fmt.Errorf("%w: fsst table with %d symbols in %d bytes", wire.ErrCorrupt, t.n, len(b))
	}
	for i := 0; i < t.n; i++ {
		copy(t.syms[i][:], b[8+i*8:])
		t.lens[i] = b[8+t.n*8+i]
		if t.lens[i] > 8 {
			return nil, fmt.Errorf("%w: fsst symbol of %d bytes", wire.ErrCorrupt, t.lens[i])
		}
	}
	return t, nil
}

// Decode appends the decompressed form of in to dst; the result may not
// pass limit bytes.
func (t *Table) Decode(dst, in []byte, limit int) ([]byte, error) {
	if !t.enabled {
		return append(dst, in...), nil
	}
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == 255 {
			if i+1 >= len(in) {
				return nil, fmt.Errorf("%w: fsst escape at end of string", wire.ErrCorrupt)
			}
			i++
			dst = append(dst, in[i])
			continue
		}
		if int(c) >= t.n {
			return nil, fmt.Errorf("%w: fsst code %d of %d symbols", wire.ErrCorrupt, c, t.n)
		}
		dst = append(dst, t.syms[c][:t.lens[c]]...)
		if len(dst) > limit {
			return nil, fmt.Errorf("%w: fsst output too large", wire.ErrCorrupt)
		}
	}
	return dst, nil
}
