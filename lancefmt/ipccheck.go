package lancefmt

import (
	"encoding/binary"
	"fmt"
)

// checkArrowIPCFile validates the flatbuffer structure of an Arrow IPC file
// before arrow-go reads it: every vector the reader sizes allocations from
// (schema fields and children, custom metadata, record batch nodes and
// buffers, blocks) must fit in the file, and every block and buffer must
// lie inside it. arrow-go trusts these lengths.
func checkArrowIPCFile(b []byte) error {
	const magic = "ARROW1"
	if len(b) < 2*len(magic)+4 || string(b[:len(magic)]) != magic || string(b[len(b)-len(magic):]) != magic {
		return fmt.Errorf("%w: not an arrow ipc file", errCorrupt)
	}
	flen := int64(int32(binary.LittleEndian.Uint32(b[len(b)-10:])))
	fend := int64(len(b) - 10)
	if flen < 4 || flen > fend-8 {
		return fmt.Errorf("%w: arrow ipc footer of %d bytes", errCorrupt, flen)
	}
	footer := fbuf(b[fend-flen : fend])
	root, err := footer.root()
	if err != nil {
		return err
	}
	if schema, ok, err := root.table(1); err != nil {
		return err
	} else if ok {
		if err := checkSchema(schema, 0); err != nil {
			return err
		}
	}
	for _, fi := range []int{2, 3} { // dictionaries, record batches: Block structs
		start, n, ok, err := root.vector(fi, 24)
		if err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		for k := 0; k < n; k++ {
			e := start + 24*k
			off := int64(binary.LittleEndian.Uint64(footer[e:]))
			metaLen := int64(int32(binary.LittleEndian.Uint32(footer[e+8:])))
			bodyLen := int64(binary.LittleEndian.Uint64(footer[e+16:]))
			if off < 8 || metaLen < 8 || bodyLen < 0 || off > fend || metaLen > fend-off || bodyLen > fend-off-metaLen {
				return fmt.Errorf("%w: arrow ipc block outside the file", errCorrupt)
			}
			if err := checkMessage(b[off:off+metaLen], bodyLen); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkMessage validates an encapsulated IPC message's metadata.
func checkMessage(m []byte, bodyLen int64) error {
	if len(m) >= 4 && binary.LittleEndian.Uint32(m) == 0xffffffff {
		m = m[4:]
	}
	if len(m) < 4 {
		return fmt.Errorf("%w: arrow ipc message truncated", errCorrupt)
	}
	n := int64(int32(binary.LittleEndian.Uint32(m)))
	if n < 4 || n > int64(len(m)-4) {
		return fmt.Errorf("%w: arrow ipc message of %d bytes", errCorrupt, n)
	}
	fb := fbuf(m[4 : 4+n])
	msg, err := fb.root()
	if err != nil {
		return err
	}
	if err := checkKeyValues(msg, 4); err != nil {
		return err
	}
	hdr, ok, err := msg.table(2)
	if err != nil || !ok {
		return err
	}
	// The header is a RecordBatch or DictionaryBatch{id, data RecordBatch}.
	ht := byte(0)
	if p, ok := msg.field(1); ok && p < len(fb) {
		ht = fb[p]
	}
	if ht == 4 { // DictionaryBatch
		if hdr, ok, err = hdr.table(1); err != nil || !ok {
			return err
		}
	}
	if ht != 3 && ht != 4 {
		return nil
	}
	if _, _, _, err := hdr.vector(1, 16); err != nil { // nodes
		return err
	}
	start, cnt, ok, err := hdr.vector(2, 16) // buffers
	if err != nil {
		return err
	}
	for k := 0; ok && k < cnt; k++ {
		e := start + 16*k
		off := int64(binary.LittleEndian.Uint64(fb[e:]))
		l := int64(binary.LittleEndian.Uint64(fb[e+8:]))
		if off < 0 || l < 0 || off > bodyLen || l > bodyLen-off {
			return fmt.Errorf("%w: arrow ipc buffer outside the body", errCorrupt)
		}
	}
	_, _, _, err = hdr.vector(4, 8) // variadic buffer counts
	return err
}

// checkSchema validates a Schema table.
func checkSchema(s fbTable, depth int) error {
	if err := checkKeyValues(s, 2); err != nil {
		return err
	}
	if _, _, _, err := s.vector(3, 8); err != nil {
		return err
	}
	return checkFields(s, 1, depth)
}

// checkFields validates a vector of Field tables and their children.
func checkFields(t fbTable, fi, depth int) error {
	if depth > 64 {
		return fmt.Errorf("%w: arrow ipc schema nested too deep", errCorrupt)
	}
	start, n, ok, err := t.vector(fi, 4)
	if err != nil || !ok {
		return err
	}
	for k := 0; k < n; k++ {
		f, err := t.b.tableAt(start + 4*k)
		if err != nil {
			return err
		}
		if _, _, _, err := f.vector(0, 1); err != nil {
			return err
		}
		if err := checkKeyValues(f, 6); err != nil {
			return err
		}
		if err := checkFields(f, 5, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// checkKeyValues validates a vector of KeyValue tables.
func checkKeyValues(t fbTable, fi int) error {
	start, n, ok, err := t.vector(fi, 4)
	if err != nil || !ok {
		return err
	}
	for k := 0; k < n; k++ {
		kv, err := t.b.tableAt(start + 4*k)
		if err != nil {
			return err
		}
		for _, si := range []int{0, 1} {
			if _, _, _, err := kv.vector(si, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// fbuf is a flatbuffer.
type fbuf []byte

// fbTable is a table inside a flatbuffer.
type fbTable struct {
	b       fbuf
	pos     int
	vtable  int
	vtBytes int
}

func (b fbuf) u32(p int) (int, error) {
	if p < 0 || p > len(b)-4 {
		return 0, fmt.Errorf("%w: flatbuffer offset %d outside %d bytes", errCorrupt, p, len(b))
	}
	return int(binary.LittleEndian.Uint32(b[p:])), nil
}

// root returns the root table.
func (b fbuf) root() (fbTable, error) { return b.tableAt(0) }

// tableAt follows the uoffset stored at p to a table.
func (b fbuf) tableAt(p int) (fbTable, error) {
	off, err := b.u32(p)
	if err != nil {
		return fbTable{}, err
	}
	t := p + off
	so, err := b.u32(t)
	if err != nil {
		return fbTable{}, err
	}
	vt := t - int(int32(uint32(so)))
	if vt < 0 || vt > len(b)-4 {
		return fbTable{}, fmt.Errorf("%w: flatbuffer vtable outside the buffer", errCorrupt)
	}
	vtBytes := int(binary.LittleEndian.Uint16(b[vt:]))
	if vtBytes < 4 || vt+vtBytes > len(b) {
		return fbTable{}, fmt.Errorf("%w: flatbuffer vtable of %d bytes", errCorrupt, vtBytes)
	}
	return fbTable{b: b, pos: t, vtable: vt, vtBytes: vtBytes}, nil
}

// field returns the absolute position of field i, if present.
func (t fbTable) field(i int) (int, bool) {
	e := 4 + 2*i
	if e+2 > t.vtBytes {
		return 0, false
	}
	off := int(binary.LittleEndian.Uint16(t.b[t.vtable+e:]))
	if off == 0 {
		return 0, false
	}
	return t.pos + off, true
}

// table returns the sub-table in field i.
func (t fbTable) table(i int) (fbTable, bool, error) {
	p, ok := t.field(i)
	if !ok {
		return fbTable{}, false, nil
	}
	st, err := t.b.tableAt(p)
	return st, err == nil, err
}

// vector returns the start and length of the vector in field i, checking
// that n elements of elem bytes fit the buffer.
func (t fbTable) vector(i, elem int) (int, int, bool, error) {
	p, ok := t.field(i)
	if !ok {
		return 0, 0, false, nil
	}
	off, err := t.b.u32(p)
	if err != nil {
		return 0, 0, false, err
	}
	vp := p + off
	n, err := t.b.u32(vp)
	if err != nil {
		return 0, 0, false, err
	}
	if n > (len(t.b)-vp-4)/elem {
		return 0, 0, false, fmt.Errorf("%w: flatbuffer vector of %d elements outside the buffer", errCorrupt, n)
	}
	return vp + 4, n, true, nil
}
