package lance

import (
	"encoding/binary"
	"fmt"
)

// fsstTable is a parsed FSST symbol table.
type fsstTable struct {
	enabled bool
	syms    [255][8]byte
	lens    [255]uint8
	n       int
}

// parseFsstTable parses Lance's serialization of an FSST symbol table: a u64
// header ("FSST" magic, encoder switch, suffix limit, terminator, symbol
// count), the symbols as u64 words, then one length byte per symbol.
func parseFsstTable(b []byte) (*fsstTable, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: fsst symbol table of %d bytes", errCorrupt, len(b))
	}
	h := binary.LittleEndian.Uint64(b)
	if h>>32 != 0x46535354 {
		return nil, fmt.Errorf("%w: fsst symbol table magic %#x", errCorrupt, h>>32)
	}
	t := &fsstTable{enabled: (h>>24)&0xff != 0, n: int(h & 0xff)}
	if t.n > 255 || len(b) < 8+t.n*9 {
		return nil, fmt.Errorf("%w: fsst table with %d symbols in %d bytes", errCorrupt, t.n, len(b))
	}
	for i := 0; i < t.n; i++ {
		copy(t.syms[i][:], b[8+i*8:])
		t.lens[i] = b[8+t.n*8+i]
		if t.lens[i] > 8 {
			return nil, fmt.Errorf("%w: fsst symbol of %d bytes", errCorrupt, t.lens[i])
		}
	}
	return t, nil
}

// decode appends the decompressed form of in to dst.
func (t *fsstTable) decode(dst, in []byte) ([]byte, error) {
	if !t.enabled {
		return append(dst, in...), nil
	}
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c == 255 {
			if i+1 >= len(in) {
				return nil, fmt.Errorf("%w: fsst escape at end of string", errCorrupt)
			}
			i++
			dst = append(dst, in[i])
			continue
		}
		if int(c) >= t.n {
			return nil, fmt.Errorf("%w: fsst code %d of %d symbols", errCorrupt, c, t.n)
		}
		dst = append(dst, t.syms[c][:t.lens[c]]...)
		if len(dst) > maxDecodedBytes {
			return nil, fmt.Errorf("%w: fsst output too large", errCorrupt)
		}
	}
	return dst, nil
}

// fsstDecodeLeaf decompresses every value of a variable-width leaf.
func fsstDecodeLeaf(table []byte, l leaf) (leaf, error) {
	if l.offs == nil {
		return leaf{}, fmt.Errorf("%w: fsst over fixed-width values", errCorrupt)
	}
	t, err := parseFsstTable(table)
	if err != nil {
		return leaf{}, err
	}
	out := leaf{n: l.n, offs: make([]uint64, l.n+1)}
	buf := make([]byte, 0, len(l.data)*2)
	for i := 0; i < l.n; i++ {
		buf, err = t.decode(buf, l.data[l.offs[i]:l.offs[i+1]])
		if err != nil {
			return leaf{}, err
		}
		out.offs[i+1] = uint64(len(buf))
	}
	out.data = buf
	return out, nil
}
