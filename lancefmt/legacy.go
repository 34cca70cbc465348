package lancefmt

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/bpconvert/bpconvert/lancefmt/internal/assemble"
	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// Legacy (file format 0.x, "v1") data files, written for datasets whose
// data storage version is "legacy"/0.1. Values are stored per field and per
// batch of rows; a page table gives each (field, batch) page's position and
// length. Plain pages have no validity (nulls read as zero values), and
// variable-width pages have no validity either: an empty value reads as null,
// which is how Lance itself reads them.

// Legacy field encodings (lance.file.Field.encoding).
const (
	legacyPlain      = 1
	legacyVarBinary  = 2
	legacyDictionary = 3
)

// Field numbers of the legacy file's messages.
const (
	legacyMetaManifestPos  = 1 // Metadata
	legacyMetaBatchOffsets = 2
	legacyMetaPageTablePos = 3
	legacySchemaFields     = 1 // the schema message
	fieldEncoding          = 7 // lance.file.Field, as legacy files use it
	fieldDictionary        = 8
	dictionaryOffset       = 1 // Dictionary
	dictionaryLength       = 2
)

// legacyField is what a legacy file records about one field.
type legacyField struct {
	encoding uint64
	dictOff  uint64       // dictionary values (var-binary) position
	dictLen  uint64       // number of dictionary values
	dict     *decode.Leaf // decoded dictionary, once read
}

// legacyMeta is the decoded metadata of a legacy data file.
type legacyMeta struct {
	size      int64
	batchRows []int
	ptPos     uint64
	ptEnd     uint64
	minID     int32
	maxID     int32
	fields    map[int32]*legacyField
}

// readLegacyMeta reads the metadata of a legacy data file.
func readLegacyMeta(r io.ReaderAt, size int64) (*legacyMeta, error) {
	if size < 16 {
		return nil, fmt.Errorf("%w: legacy data file of %d bytes", errCorrupt, size)
	}
	var foot [16]byte
	if _, err := r.ReadAt(foot[:], size-16); err != nil {
		return nil, err
	}
	if string(foot[12:]) != "LANC" {
		return nil, fmt.Errorf("%w: data file lacks the LANC magic", errCorrupt)
	}
	pos := binary.LittleEndian.Uint64(foot[:])
	if pos > uint64(size-16) || uint64(size-16)-pos > maxMetadataBytes {
		return nil, fmt.Errorf("%w: legacy metadata at %d", errCorrupt, pos)
	}
	tail := make([]byte, uint64(size-16)-pos)
	if _, err := r.ReadAt(tail, int64(pos)); err != nil {
		return nil, err
	}
	return parseLegacyTail(r, tail, pos, size)
}

// readFramed reads a u32-length-prefixed message at pos, bounded by end.
func readFramed(r io.ReaderAt, pos, end uint64) ([]byte, error) {
	if pos > end || end-pos < 4 {
		return nil, fmt.Errorf("%w: framed message at %d", errCorrupt, pos)
	}
	var n [4]byte
	if _, err := r.ReadAt(n[:], int64(pos)); err != nil {
		return nil, err
	}
	l := uint64(binary.LittleEndian.Uint32(n[:]))
	if l > end-pos-4 {
		return nil, fmt.Errorf("%w: framed message of %d bytes at %d", errCorrupt, l, pos)
	}
	b := make([]byte, l)
	if _, err := r.ReadAt(b, int64(pos+4)); err != nil {
		return nil, err
	}
	return b, nil
}

// parseLegacyTail decodes the metadata message (at pos) and the manifest it
// points to.
func parseLegacyTail(r io.ReaderAt, tail []byte, pos uint64, size int64) (*legacyMeta, error) {
	if len(tail) < 4 {
		return nil, fmt.Errorf("%w: legacy metadata truncated", errCorrupt)
	}
	n := uint64(binary.LittleEndian.Uint32(tail))
	if n > uint64(len(tail)-4) {
		return nil, fmt.Errorf("%w: legacy metadata of %d bytes", errCorrupt, n)
	}
	lm := &legacyMeta{size: size, fields: map[int32]*legacyField{}}
	var manifestPos uint64
	var offsets []uint64
	err := wire.Walk(tail[4:4+n], func(f wire.Field) error {
		var err error
		switch f.Num {
		case legacyMetaManifestPos:
			manifestPos = f.U
		case legacyMetaBatchOffsets:
			offsets, err = wire.PackedUints(offsets, f)
		case legacyMetaPageTablePos:
			lm.ptPos = f.U
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("legacy metadata: %w", err)
	}
	for i := 1; i < len(offsets); i++ {
		d := int64(int32(offsets[i])) - int64(int32(offsets[i-1]))
		if d < 0 || d > decode.MaxPageItems {
			return nil, fmt.Errorf("%w: legacy batch offsets", errCorrupt)
		}
		lm.batchRows = append(lm.batchRows, int(d))
	}
	if manifestPos < lm.ptPos || manifestPos > pos {
		return nil, fmt.Errorf("%w: legacy manifest at %d, page table at %d", errCorrupt, manifestPos, lm.ptPos)
	}
	lm.ptEnd = manifestPos
	mb, err := readFramed(r, manifestPos, pos)
	if err != nil {
		return nil, fmt.Errorf("legacy schema: %w", err)
	}
	first := true
	err = wire.Walk(mb, func(f wire.Field) error {
		if f.Num != legacySchemaFields {
			return nil
		}
		lf := &legacyField{}
		var id int32
		err := wire.Walk(f.B, func(g wire.Field) error {
			switch g.Num {
			case fieldID:
				id = wire.Int32(g.U)
			case fieldEncoding:
				lf.encoding = g.U
			case fieldDictionary:
				return wire.Walk(g.B, func(h wire.Field) error {
					switch h.Num {
					case dictionaryOffset:
						lf.dictOff = h.U
					case dictionaryLength:
						lf.dictLen = h.U
					}
					return nil
				})
			}
			return nil
		})
		if err != nil {
			return err
		}
		lm.fields[id] = lf
		if first || id < lm.minID {
			lm.minID = id
		}
		if first || id > lm.maxID {
			lm.maxID = id
		}
		first = false
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("legacy schema: %w", err)
	}
	return lm, nil
}

// page returns the position and length of the page of field id in batch.
func (lm *legacyMeta) page(r io.ReaderAt, id int32, batch int) (uint64, uint64, error) {
	if id < lm.minID || id > lm.maxID || batch < 0 || batch >= len(lm.batchRows) {
		return 0, 0, fmt.Errorf("%w: no page for field %d batch %d", errCorrupt, id, batch)
	}
	at := lm.ptPos + (uint64(id-lm.minID)*uint64(len(lm.batchRows))+uint64(batch))*16
	if at+16 > lm.ptEnd || at < lm.ptPos {
		return 0, 0, fmt.Errorf("%w: page table entry outside the page table", errCorrupt)
	}
	var e [16]byte
	if _, err := r.ReadAt(e[:], int64(at)); err != nil {
		return 0, 0, err
	}
	return binary.LittleEndian.Uint64(e[:]), binary.LittleEndian.Uint64(e[8:]), nil
}

// readRange reads n bytes at pos of a legacy file.
func (lm *legacyMeta) readRange(r io.ReaderAt, pos, n uint64) ([]byte, error) {
	if pos > uint64(lm.size) || n > uint64(lm.size)-pos {
		return nil, fmt.Errorf("%w: %d bytes at %d outside the file", errCorrupt, n, pos)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, int64(pos)); err != nil {
		return nil, err
	}
	return b, nil
}

// readVarBinary reads n variable-width values whose n+1 absolute i64
// offsets start at pos; empty values are null.
func (lm *legacyMeta) readVarBinary(r io.ReaderAt, pos, n uint64) (decode.Leaf, []bool, error) {
	if n > decode.MaxPageItems {
		return decode.Leaf{}, nil, fmt.Errorf("%w: %d values", errCorrupt, n)
	}
	ob, err := lm.readRange(r, pos, (n+1)*8)
	if err != nil {
		return decode.Leaf{}, nil, err
	}
	offs := make([]uint64, n+1)
	for i := range offs {
		offs[i] = binary.LittleEndian.Uint64(ob[8*i:])
		if i > 0 && offs[i] < offs[i-1] {
			return decode.Leaf{}, nil, fmt.Errorf("%w: binary offsets out of order", errCorrupt)
		}
	}
	data, err := lm.readRange(r, offs[0], offs[n]-offs[0])
	if err != nil {
		return decode.Leaf{}, nil, err
	}
	var valid []bool
	base := offs[0]
	for i := range offs {
		offs[i] -= base
	}
	for i := uint64(0); i < n; i++ {
		if offs[i+1] == offs[i] {
			if valid == nil {
				valid = make([]bool, n)
				for k := range valid {
					valid[k] = true
				}
			}
			valid[i] = false
		}
	}
	return decode.Leaf{N: int(n), Offs: offs, Data: data}, valid, nil
}

// dictKeyBits returns the index width of a dict:<value>:<key>:<ordered>
// logical type.
func dictKeyBits(lt string) (int, error) {
	parts := strings.Split(lt, ":")
	if len(parts) < 4 || parts[0] != "dict" {
		return 0, fmt.Errorf("logical type %q is not a dictionary", lt)
	}
	kt, err := scalarType(parts[len(parts)-2])
	if err != nil {
		return 0, err
	}
	return assemble.FixedWidthBits(kt), nil
}

// cursorLegacy builds the cursor of field f in a legacy file.
func (fr *fragmentReader) cursorLegacy(f *Field, af arrow.Field, loc string) (cursor, error) {
	if st, ok := af.Type.(*arrow.StructType); ok {
		return structCursorOf(f, st, loc, fr.cursorLegacy)
	}
	file, _, _, err := fr.column(f.ID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	if file == nil {
		return &nullCursor{dt: af.Type, alloc: fr.ds.alloc}, nil
	}
	lm := file.legacy
	lf := lm.fields[f.ID]
	if lf == nil {
		return nil, fmt.Errorf("%s: %w: field %d missing from the file schema", loc, errCorrupt, f.ID)
	}
	encName := legacyEncodingName(lf.encoding)
	pc := &pagedCursor{loc: loc, npages: len(lm.batchRows), dt: af.Type, alloc: fr.ds.alloc}
	pc.pageTag = func(int) string { return "legacy encoding " + encName }
	items, err := listItemsCursor(f, af, loc, fr.cursorLegacy)
	if err != nil {
		return nil, err
	}
	if items != nil {
		pc.subs = append(pc.subs, items)
	}
	pc.decode = func(batch int) (arrow.Array, error) {
		pos, n, err := lm.page(file.f, f.ID, batch)
		if err != nil {
			return nil, err
		}
		if n > decode.MaxPageItems {
			return nil, fmt.Errorf("%w: page of %d values", errCorrupt, n)
		}
		if items != nil {
			return lm.listPage(file.f, af.Type, pos, n, items)
		}
		return lm.leafPage(file.f, f, lf, af.Type, pos, n)
	}
	return pc, nil
}

// listPage reads the list page at pos: n offsets (n-1 lists; int32 for
// lists, int64 for large lists) into the items that the items cursor
// yields.
func (lm *legacyMeta) listPage(r io.ReaderAt, dt arrow.DataType, pos, n uint64, items cursor) (arrow.Array, error) {
	if n == 0 {
		return nil, fmt.Errorf("%w: list page without offsets", errCorrupt)
	}
	ow := uint64(4)
	if _, large := dt.(*arrow.LargeListType); large {
		ow = 8
	}
	ob, err := lm.readRange(r, pos, n*ow)
	if err != nil {
		return nil, err
	}
	offs := make([]int64, n)
	for i := range offs {
		if ow == 8 {
			offs[i] = int64(binary.LittleEndian.Uint64(ob[8*i:]))
		} else {
			offs[i] = int64(int32(binary.LittleEndian.Uint32(ob[4*i:])))
		}
		if offs[i] < offs[0] || i > 0 && offs[i] < offs[i-1] {
			return nil, fmt.Errorf("%w: list offsets out of order", errCorrupt)
		}
	}
	// Relative to the batch's first item.
	base := offs[0]
	for i := range offs {
		offs[i] -= base
	}
	if offs[n-1] > decode.MaxPageItems {
		return nil, fmt.Errorf("%w: %d list items", errCorrupt, offs[n-1])
	}
	child, err := items.next(int(offs[n-1]))
	if err != nil {
		return nil, err
	}
	defer child.Release()
	return listArray(dt, offs, nil, child), nil
}

// leafPage reads the page of n values of field f (stored as lf) at pos.
func (lm *legacyMeta) leafPage(r io.ReaderAt, f *Field, lf *legacyField, dt arrow.DataType, pos, n uint64) (arrow.Array, error) {
	switch lf.encoding {
	case legacyVarBinary:
		l, valid, err := lm.readVarBinary(r, pos, n)
		if err != nil {
			return nil, err
		}
		return assemble.LeafArray(dt, l, valid)
	case legacyDictionary:
		if lf.dict == nil {
			if lf.dictLen > decode.MaxPageItems {
				return nil, fmt.Errorf("%w: dictionary of %d values", errCorrupt, lf.dictLen)
			}
			d, _, err := lm.readVarBinary(r, lf.dictOff, lf.dictLen)
			if err != nil {
				return nil, fmt.Errorf("dictionary: %w", err)
			}
			lf.dict = &d
		}
		kb, err := dictKeyBits(f.LogicalType)
		if err != nil {
			return nil, err
		}
		ib, err := lm.readRange(r, pos, n*uint64(kb)/8)
		if err != nil {
			return nil, err
		}
		l, err := decode.ApplyDictionary(decode.Leaf{N: int(n), Bits: kb, Data: ib}, *lf.dict)
		if err != nil {
			return nil, err
		}
		return assemble.LeafArray(dt, l, nil)
	case legacyPlain:
		bitsPer := assemble.FixedWidthBits(dt)
		dim := 0
		if fsl, ok := dt.(*arrow.FixedSizeListType); ok {
			dim = int(fsl.Len())
			bitsPer = assemble.FixedWidthBits(fsl.Elem()) * dim
		}
		if bitsPer == 0 {
			return nil, fmt.Errorf("plain pages of %s are not supported", dt)
		}
		b, err := lm.readRange(r, pos, (n*uint64(bitsPer)+7)/8)
		if err != nil {
			return nil, err
		}
		return assemble.LeafArray(dt, decode.Leaf{N: int(n), Bits: bitsPer, Data: b, Dim: dim}, nil)
	}
	return nil, fmt.Errorf("legacy %s pages are not supported", legacyEncodingName(lf.encoding))
}
