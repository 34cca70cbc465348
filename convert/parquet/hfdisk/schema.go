package hfdisk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// arrowMagic opens and closes an Arrow IPC file in the file format.
var arrowMagic = []byte("ARROW1")

// Arrow-go sizes slices by the counts a schema's flatbuffer declares (its
// fields, each field's children, the key-value metadata) before it reads
// them, and recurses into children without a depth limit: a corrupt count
// or a cycle ends the process (out of memory, stack overflow) where no
// recover reaches. CheckSchema walks the schema of a file first and
// refuses counts that do not fit in the flatbuffer and nesting that goes
// too deep.

// fbLimits bound the schema walk.
const (
	fbMaxDepth  = 64
	fbMaxFields = 1 << 16
)

// CheckSchema checks the schema message at the start of an Arrow IPC
// stream, or the footer's schema of a file in the file format (file true).
func CheckSchema(f io.ReaderAt, size int64, file bool) error {
	var meta []byte
	if file {
		if size < int64(2*len(arrowMagic))+4 {
			return nil // arrow-go refuses it
		}
		tail := make([]byte, 4+len(arrowMagic))
		if _, err := f.ReadAt(tail, size-int64(len(tail))); err != nil {
			return err
		}
		n := int64(binary.LittleEndian.Uint32(tail))
		if n <= 0 || n > size-int64(len(tail)) {
			return nil // arrow-go refuses it
		}
		meta = make([]byte, n)
		if _, err := f.ReadAt(meta, size-int64(len(tail))-n); err != nil {
			return err
		}
	} else {
		var head [8]byte
		if _, err := f.ReadAt(head[:4], 0); err != nil {
			return nil // arrow-go reports it
		}
		off, n := int64(4), int64(binary.LittleEndian.Uint32(head[:4]))
		if n == 0xFFFFFFFF {
			if _, err := f.ReadAt(head[4:], 4); err != nil {
				return nil
			}
			off, n = 8, int64(binary.LittleEndian.Uint32(head[4:]))
		}
		if n <= 0 || n > size-off {
			return nil // arrow-go reports the short read
		}
		meta = make([]byte, n)
		if _, err := f.ReadAt(meta, off); err != nil {
			return err
		}
	}
	fb := flatbuf{b: meta}
	root, err := fb.root()
	if err != nil {
		return err
	}
	var schema int64
	if file {
		// Footer: version, schema, dictionaries, recordBatches.
		if schema, err = fb.table(root, 1); err != nil || schema < 0 {
			return err
		}
	} else {
		// Message: version, header_type, header, bodyLength,
		// custom_metadata. Only a Schema header (type 1) is walked; arrow-go
		// refuses a stream that starts with anything else.
		if err := fb.checkKV(root, 4); err != nil {
			return err
		}
		if t, err := fb.scalar(root, 1, 1); err != nil || t != 1 {
			return err
		}
		if schema, err = fb.table(root, 2); err != nil || schema < 0 {
			return err
		}
	}
	w := &fbWalk{fb: fb}
	// Schema: endianness, fields, custom_metadata, features.
	if err := w.fields(schema, 1, 0); err != nil {
		return err
	}
	if err := fb.checkKV(schema, 2); err != nil {
		return err
	}
	_, _, err = fb.vector(schema, 3, 8)
	return err
}

// flatbuf reads a flatbuffer with every offset checked against its size.
type flatbuf struct{ b []byte }

var errFlatbuf = errors.New("the schema's flatbuffer holds an offset or a count that does not fit in it")

func (fb flatbuf) u32(at int64) (int64, error) {
	if at < 0 || at+4 > int64(len(fb.b)) {
		return 0, errFlatbuf
	}
	return int64(binary.LittleEndian.Uint32(fb.b[at:])), nil
}

func (fb flatbuf) root() (int64, error) { return fb.u32(0) }

// field returns the position of slot's value in the table at pos, or -1
// when the table does not have it.
func (fb flatbuf) field(pos int64, slot int) (int64, error) {
	soff, err := fb.u32(pos)
	if err != nil {
		return 0, err
	}
	vt := pos - int64(int32(uint32(soff)))
	if vt < 0 || vt+4 > int64(len(fb.b)) {
		return 0, errFlatbuf
	}
	vtSize := int64(binary.LittleEndian.Uint16(fb.b[vt:]))
	at := vt + 4 + 2*int64(slot)
	if at+2 > vt+vtSize {
		return -1, nil
	}
	if at+2 > int64(len(fb.b)) {
		return 0, errFlatbuf
	}
	o := int64(binary.LittleEndian.Uint16(fb.b[at:]))
	if o == 0 {
		return -1, nil
	}
	return pos + o, nil
}

// indirect follows the offset stored at pos.
func (fb flatbuf) indirect(pos int64) (int64, error) {
	o, err := fb.u32(pos)
	if err != nil {
		return 0, err
	}
	if pos+o >= int64(len(fb.b)) {
		return 0, errFlatbuf
	}
	return pos + o, nil
}

// table returns the position of the table in slot, or -1.
func (fb flatbuf) table(pos int64, slot int) (int64, error) {
	at, err := fb.field(pos, slot)
	if err != nil || at < 0 {
		return at, err
	}
	return fb.indirect(at)
}

// scalar returns the unsigned value of size bytes in slot (0 when absent).
func (fb flatbuf) scalar(pos int64, slot, size int) (int64, error) {
	at, err := fb.field(pos, slot)
	if err != nil || at < 0 {
		return 0, err
	}
	if at+int64(size) > int64(len(fb.b)) {
		return 0, errFlatbuf
	}
	if size == 1 {
		return int64(fb.b[at]), nil
	}
	return fb.u32(at)
}

// vector returns the position of the first element and the length of the
// vector in slot, checked to fit with elements of elem bytes.
func (fb flatbuf) vector(pos int64, slot int, elem int64) (start, n int64, err error) {
	at, err := fb.table(pos, slot)
	if err != nil || at < 0 {
		return 0, 0, err
	}
	if n, err = fb.u32(at); err != nil {
		return 0, 0, err
	}
	if at+4+n*elem > int64(len(fb.b)) {
		return 0, 0, errFlatbuf
	}
	return at + 4, n, nil
}

// checkKV checks a vector of KeyValue tables in slot.
func (fb flatbuf) checkKV(pos int64, slot int) error {
	start, n, err := fb.vector(pos, slot, 4)
	if err != nil {
		return err
	}
	for i := int64(0); i < n; i++ {
		kv, err := fb.indirect(start + 4*i)
		if err != nil {
			return err
		}
		for s := 0; s < 2; s++ { // key, value
			if _, _, err := fb.vector(kv, s, 1); err != nil {
				return err
			}
		}
	}
	return nil
}

// fbWalk walks the fields of a schema, counting them.
type fbWalk struct {
	fb    flatbuf
	count int
}

// fields checks the vector of Field tables in slot and, recursively, their
// children (Field: name, nullable, type_type, type, dictionary, children,
// custom_metadata).
func (w *fbWalk) fields(pos int64, slot, depth int) error {
	if depth > fbMaxDepth {
		return fmt.Errorf("the schema nests fields more than %d deep", fbMaxDepth)
	}
	start, n, err := w.fb.vector(pos, slot, 4)
	if err != nil {
		return err
	}
	for i := int64(0); i < n; i++ {
		if w.count++; w.count > fbMaxFields {
			return fmt.Errorf("the schema declares more than %d fields", fbMaxFields)
		}
		f, err := w.fb.indirect(start + 4*i)
		if err != nil {
			return err
		}
		if _, _, err := w.fb.vector(f, 0, 1); err != nil {
			return err
		}
		if err := w.fb.checkKV(f, 6); err != nil {
			return err
		}
		if err := w.fields(f, 5, depth+1); err != nil {
			return err
		}
	}
	return nil
}
