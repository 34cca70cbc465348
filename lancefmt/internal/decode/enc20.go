package decode

import (
	"encoding/binary"
	"fmt"

	"github.com/bpconvert/bpconvert/lancefmt/internal/bitpack"
	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
	"google.golang.org/protobuf/encoding/protowire"
)

// ArrayEncoding (file version 2.0) oneof field numbers.
const (
	Enc20Flat          = 1
	Enc20Nullable      = 2
	Enc20FixedSizeList = 3
	Enc20List          = 4
	Enc20Struct        = 5
	Enc20Binary        = 6
	Enc20Dictionary    = 7
	aeFsst             = 8
	Enc20PackedStruct  = 9
)

// Field numbers of the 2.0 encoding messages.
const (
	bufferIndex = 1 // Buffer
	bufferType  = 2

	flatBitsPerValue = 1 // Flat
	flatBuffer       = 2
	flatCompression  = 3

	compressionScheme = 1 // Compression (of Flat)

	nullableNoNull   = 1 // Nullable (oneof)
	nullableSomeNull = 2
	nullableAllNull  = 3
	noNullValues     = 1 // Nullable.NoNull
	someNullValidity = 1 // Nullable.SomeNull
	someNullValues   = 2

	fslDimension   = 1 // FixedSizeList
	fslItems       = 2
	fslHasValidity = 3

	listOffsets          = 1 // List
	listNullOffsetAdjust = 2
	listNumItems         = 3

	binaryIndices        = 1 // Binary
	binaryBytes          = 2
	binaryNullAdjustment = 3

	dictIndices  = 1 // Dictionary
	dictItems    = 2
	dictNumItems = 3

	packedInner  = 1 // PackedStruct
	packedBuffer = 2
)

var aeNames = map[int]string{1: "Flat", 2: "Nullable", 3: "FixedSizeList", 4: "List", 5: "SimpleStruct", 6: "Binary",
	7: "Dictionary", 8: "Fsst", 9: "PackedStruct", 10: "Bitpacked", 11: "FixedSizeBinary", 12: "BitpackedForNonNeg",
	13: "Constant", 14: "InlineBitpacking", 15: "OutOfLineBitpacking", 16: "Variable",
	17: "PackedStructFixedWidthMiniBlock", 18: "Block", 19: "Rle", 20: "GeneralMiniBlock", 21: "ByteStreamSplit"}

// Oneof returns the single field of a oneof-only message.
func Oneof(b []byte) (int, []byte, error) {
	kind, val := 0, []byte(nil)
	err := wire.Walk(b, func(f wire.Field) error {
		if kind == 0 {
			kind, val = int(f.Num), f.B
		}
		return nil
	})
	if err == nil && kind == 0 {
		err = fmt.Errorf("%w: empty array encoding", errCorrupt)
	}
	return kind, val, err
}

// Enc20Name names an ArrayEncoding kind.
func Enc20Name(k int) string {
	if n := aeNames[k]; n != "" {
		return n
	}
	return fmt.Sprintf("ArrayEncoding(%d)", k)
}

// pageBuffer returns the page buffer referenced by a Buffer message.
func pageBuffer(b []byte, bufs PageBuffers) ([]byte, error) {
	var idx, typ uint64
	err := wire.Walk(b, func(f wire.Field) error {
		switch f.Num {
		case bufferIndex:
			idx = f.U
		case bufferType:
			typ = f.U
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if typ != 0 {
		return nil, fmt.Errorf("buffers of type %d (column or file buffers) are not supported", typ)
	}
	if idx >= uint64(len(bufs)) {
		return nil, fmt.Errorf("%w: buffer %d of %d", errCorrupt, idx, len(bufs))
	}
	return bufs[idx], nil
}

// decode20 decodes a 2.0 ArrayEncoding holding n values into a leaf and a
// validity slice (nil when every value is valid).
func decode20(enc []byte, bufs PageBuffers, n int, depth int) (Leaf, []bool, error) {
	return Array20(enc, bufs, n, depth, false)
}

// Array20 decodes a 2.0 ArrayEncoding holding n values, like decode20, for
// a field whose Arrow type may be a dictionary: arrowDict selects 0-based dictionary indices whose nulls come from the
// dictionary items (Arrow dictionary arrays), instead of Lance's own 1-based
// indices where 0 is null.
func Array20(enc []byte, bufs PageBuffers, n int, depth int, arrowDict bool) (Leaf, []bool, error) {
	if depth > 16 {
		return Leaf{}, nil, fmt.Errorf("%w: array encoding nested too deep", errCorrupt)
	}
	if n < 0 || n > MaxPageItems {
		return Leaf{}, nil, fmt.Errorf("%w: page of %d values", errCorrupt, n)
	}
	kind, val, err := Oneof(enc)
	if err != nil {
		return Leaf{}, nil, err
	}
	switch kind {
	case Enc20Flat:
		l, err := decodeFlat20(val, bufs, n)
		return l, nil, err
	case Enc20Nullable:
		return decodeNullable20(val, bufs, n, depth, arrowDict)
	case Enc20FixedSizeList:
		l, err := decodeFixedSizeList20(val, bufs, n, depth)
		return l, nil, err
	case Enc20Binary:
		return decodeBinary20(val, bufs, n, depth)
	case Enc20Dictionary:
		return decodeDictionary20(val, bufs, n, depth, arrowDict)
	case Enc20PackedStruct:
		l, err := decodePackedStruct20(val, bufs, n, depth)
		return l, nil, err
	}
	return Leaf{}, nil, fmt.Errorf("array encoding %s is not supported", Enc20Name(kind))
}

// decodeFlat20 decodes a Flat encoding of n fixed-width values, possibly
// compressed as a whole.
func decodeFlat20(val []byte, bufs PageBuffers, n int) (Leaf, error) {
	var bitsPer uint64
	var buf []byte
	scheme := ""
	err := wire.Walk(val, func(f wire.Field) error {
		var err error
		switch f.Num {
		case flatBitsPerValue:
			bitsPer = f.U
		case flatBuffer:
			buf, err = pageBuffer(f.B, bufs)
		case flatCompression:
			err = wire.Walk(f.B, func(g wire.Field) error {
				if g.Num == compressionScheme {
					scheme = string(g.B)
				}
				return nil
			})
		}
		return err
	})
	if err != nil {
		return Leaf{}, err
	}
	switch scheme {
	case "", "none":
	case "zstd":
		if buf, err = decompress(schemeZstd, buf); err != nil {
			return Leaf{}, err
		}
	case "lz4":
		if buf, err = decompress(schemeLz4, buf); err != nil {
			return Leaf{}, err
		}
	default:
		return Leaf{}, fmt.Errorf("flat compression %q is not supported", scheme)
	}
	if bitsPer > 1<<20 {
		return Leaf{}, fmt.Errorf("%w: %d bits per value", errCorrupt, bitsPer)
	}
	return fixedLeaf(buf, n, int(bitsPer))
}

// decodeNullable20 decodes a Nullable encoding of n values: its inner
// values and their validity.
func decodeNullable20(val []byte, bufs PageBuffers, n, depth int, arrowDict bool) (Leaf, []bool, error) {
	nk, nv, err := Oneof(val)
	if err != nil {
		return Leaf{}, nil, err
	}
	switch nk {
	case nullableNoNull:
		values, err := bytesField(nv, noNullValues)
		if err != nil {
			return Leaf{}, nil, err
		}
		return Array20(values, bufs, n, depth+1, arrowDict)
	case nullableSomeNull:
		var validity, values []byte
		if err := wire.Walk(nv, func(f wire.Field) error {
			switch f.Num {
			case someNullValidity:
				validity = f.B
			case someNullValues:
				values = f.B
			}
			return nil
		}); err != nil {
			return Leaf{}, nil, err
		}
		vl, _, err := decode20(validity, bufs, n, depth+1)
		if err != nil {
			return Leaf{}, nil, fmt.Errorf("validity: %w", err)
		}
		if vl.Bits != 1 {
			return Leaf{}, nil, fmt.Errorf("%w: validity of %d bits", errCorrupt, vl.Bits)
		}
		l, inner, err := Array20(values, bufs, n, depth+1, arrowDict)
		if err != nil {
			return Leaf{}, nil, err
		}
		valid := make([]bool, n)
		for i := range valid {
			valid[i] = vl.Data[i/8]&(1<<(i%8)) != 0 && (inner == nil || inner[i])
		}
		return l, valid, nil
	case nullableAllNull:
		return Leaf{N: n}, make([]bool, n), nil
	}
	return Leaf{}, nil, fmt.Errorf("nullable variant %d is not supported", nk)
}

// bytesField returns the last value of length-delimited field num of
// message b (nil when absent).
func bytesField(b []byte, num protowire.Number) ([]byte, error) {
	var v []byte
	err := wire.Walk(b, func(f wire.Field) error {
		if f.Num == num {
			v = f.B
		}
		return nil
	})
	return v, err
}

// decodeFixedSizeList20 decodes a FixedSizeList encoding of n lists of
// fixed-width items.
func decodeFixedSizeList20(val []byte, bufs PageBuffers, n, depth int) (Leaf, error) {
	var dim uint64
	var items []byte
	if err := wire.Walk(val, func(f wire.Field) error {
		switch f.Num {
		case fslDimension:
			dim = f.U
		case fslItems:
			items = f.B
		case fslHasValidity:
			if f.U != 0 {
				return fmt.Errorf("fixed size list with validity is not supported")
			}
		}
		return nil
	}); err != nil {
		return Leaf{}, err
	}
	if dim == 0 || dim > 1<<20 || uint64(n)*dim > MaxPageItems {
		return Leaf{}, fmt.Errorf("%w: fixed size list of %d items", errCorrupt, dim)
	}
	il, iv, err := decode20(items, bufs, n*int(dim), depth+1)
	if err != nil {
		return Leaf{}, err
	}
	if il.Offs != nil || il.Bits == 1 {
		return Leaf{}, fmt.Errorf("fixed size list of %d-bit or variable items is not supported", il.Bits)
	}
	out := Leaf{N: n, Bits: il.Bits * int(dim), Data: il.Data, Dim: int(dim)}
	if iv != nil {
		out.ItemValid = boolsToBitmap(iv)
	}
	return out, nil
}

// decodeBinary20 decodes a Binary encoding of n values: end offsets (nulls
// marked by a null adjustment) and the bytes.
func decodeBinary20(val []byte, bufs PageBuffers, n, depth int) (Leaf, []bool, error) {
	var idx, data []byte
	var adj uint64
	if err := wire.Walk(val, func(f wire.Field) error {
		switch f.Num {
		case binaryIndices:
			idx = f.B
		case binaryBytes:
			data = f.B
		case binaryNullAdjustment:
			adj = f.U
		}
		return nil
	}); err != nil {
		return Leaf{}, nil, err
	}
	il, _, err := decode20(idx, bufs, n, depth+1)
	if err != nil {
		return Leaf{}, nil, fmt.Errorf("binary offsets: %w", err)
	}
	if il.Bits != 64 && il.Bits != 32 {
		return Leaf{}, nil, fmt.Errorf("%w: binary offsets of %d bits", errCorrupt, il.Bits)
	}
	ends, valid := unadjustOffsets(il, n, adj)
	var total uint64
	for _, e := range ends {
		total = max(total, e)
	}
	bl, _, err := decode20(data, bufs, int(min(total, uint64(maxDecodedBytes))), depth+1)
	if err != nil {
		return Leaf{}, nil, fmt.Errorf("binary bytes: %w", err)
	}
	out := Leaf{N: n, Offs: make([]uint64, n+1), Data: bl.Data}
	for i, e := range ends {
		if e < out.Offs[i] || e > uint64(len(bl.Data)) {
			return Leaf{}, nil, fmt.Errorf("%w: binary offset %d out of order", errCorrupt, e)
		}
		out.Offs[i+1] = e
	}
	return out, valid, nil
}

// unadjustOffsets reads n offsets of ol, whose null entries are marked by
// adding adj (0: none), and returns them with their validity (nil when every
// entry is valid).
func unadjustOffsets(ol Leaf, n int, adj uint64) ([]uint64, []bool) {
	vals := make([]uint64, n)
	var valid []bool
	for i := range vals {
		v := bitpack.ReadWord(ol.Data, i, ol.Bits)
		if adj > 0 && v >= adj {
			if valid == nil {
				valid = make([]bool, n)
				for k := 0; k < i; k++ {
					valid[k] = true
				}
			}
			v -= adj
		} else if valid != nil {
			valid[i] = true
		}
		vals[i] = v
	}
	return vals, valid
}

// decodeDictionary20 decodes a Dictionary encoding of n values: indices
// into dictionary items, materialised into the items' values.
func decodeDictionary20(val []byte, bufs PageBuffers, n, depth int, arrowDict bool) (Leaf, []bool, error) {
	var idx, items []byte
	var nd uint64
	if err := wire.Walk(val, func(f wire.Field) error {
		switch f.Num {
		case dictIndices:
			idx = f.B
		case dictItems:
			items = f.B
		case dictNumItems:
			nd = f.U
		}
		return nil
	}); err != nil {
		return Leaf{}, nil, err
	}
	if nd > uint64(n)+1<<16 {
		return Leaf{}, nil, fmt.Errorf("%w: dictionary of %d items", errCorrupt, nd)
	}
	il, _, err := decode20(idx, bufs, n, depth+1)
	if err != nil {
		return Leaf{}, nil, fmt.Errorf("dictionary indices: %w", err)
	}
	dl, dv, err := decode20(items, bufs, int(nd), depth+1)
	if err != nil {
		return Leaf{}, nil, fmt.Errorf("dictionary items: %w", err)
	}
	if il.Bits < 8 || il.Offs != nil {
		return Leaf{}, nil, fmt.Errorf("%w: dictionary indices of %d bits", errCorrupt, il.Bits)
	}
	var keys Leaf
	var valid []bool
	if arrowDict {
		keys, valid, err = arrowDictKeys(il, n, nd, dv)
	} else {
		keys, valid = lanceDictKeys(il, n)
	}
	if err != nil {
		return Leaf{}, nil, err
	}
	out, err := ApplyDictionary(keys, dl)
	if err != nil {
		return Leaf{}, nil, err
	}
	return out, valid, nil
}

// arrowDictKeys reads n 0-based dictionary indices (Arrow's): a row is
// null when its item is (dv, nil when every item is valid). The validity
// is nil when every row is valid.
func arrowDictKeys(il Leaf, n int, nd uint64, dv []bool) (Leaf, []bool, error) {
	valid := make([]bool, n)
	anyNull := false
	keys := Leaf{N: n, Bits: 64, Data: make([]byte, 8*n)}
	for i := 0; i < n; i++ {
		k := bitpack.ReadWord(il.Data, i, il.Bits)
		if k >= nd {
			return Leaf{}, nil, fmt.Errorf("%w: dictionary index %d of %d", errCorrupt, k, nd)
		}
		valid[i] = dv == nil || dv[k]
		anyNull = anyNull || !valid[i]
		binary.LittleEndian.PutUint64(keys.Data[8*i:], k)
	}
	if !anyNull {
		valid = nil
	}
	return keys, valid, nil
}

// lanceDictKeys reads n 1-based dictionary indices (Lance's): index 0 is
// null, k > 0 is item k-1. The validity is nil when every row is valid.
func lanceDictKeys(il Leaf, n int) (Leaf, []bool) {
	keys := Leaf{N: n, Bits: 64, Data: make([]byte, 8*n)}
	valid := make([]bool, n)
	anyNull := false
	for i := 0; i < n; i++ {
		k := bitpack.ReadWord(il.Data, i, il.Bits)
		if k == 0 {
			anyNull = true
			continue
		}
		valid[i] = true
		binary.LittleEndian.PutUint64(keys.Data[8*i:], k-1)
	}
	if !anyNull {
		valid = nil
	}
	return keys, valid
}

// decodePackedStruct20 decodes a PackedStruct encoding of n rows:
// row-major fixed-width children, one value of their total width per row.
func decodePackedStruct20(val []byte, bufs PageBuffers, n, depth int) (Leaf, error) {
	total := 0
	var buf []byte
	found := false
	if err := wire.Walk(val, func(f wire.Field) error {
		switch f.Num {
		case packedInner:
			b, err := flatBits20(f.B, depth+1)
			if err != nil {
				return err
			}
			total += b
		case packedBuffer:
			var err error
			buf, err = pageBuffer(f.B, bufs)
			found = err == nil
			return err
		}
		return nil
	}); err != nil {
		return Leaf{}, err
	}
	if !found {
		if len(bufs) != 1 {
			return Leaf{}, fmt.Errorf("%w: packed struct without a buffer", errCorrupt)
		}
		buf = bufs[0]
	}
	return fixedLeaf(buf, n, total)
}

// flatBits20 returns the bit width of a fixed-width 2.0 encoding (Flat,
// possibly inside Nullable without nulls).
func flatBits20(enc []byte, depth int) (int, error) {
	if depth > 16 {
		return 0, fmt.Errorf("%w: array encoding nested too deep", errCorrupt)
	}
	kind, val, err := Oneof(enc)
	if err != nil {
		return 0, err
	}
	switch kind {
	case Enc20Flat:
		var bits uint64
		wire.Walk(val, func(f wire.Field) error {
			if f.Num == flatBitsPerValue {
				bits = f.U
			}
			return nil
		})
		if bits == 0 || bits%8 != 0 || bits > 1<<16 {
			return 0, fmt.Errorf("packed struct child of %d bits is not supported", bits)
		}
		return int(bits), nil
	case Enc20Nullable:
		nk, nv, err := Oneof(val)
		if err != nil {
			return 0, err
		}
		if nk != nullableNoNull {
			return 0, fmt.Errorf("packed struct child with nulls is not supported")
		}
		values, _ := bytesField(nv, noNullValues)
		return flatBits20(values, depth+1)
	}
	return 0, fmt.Errorf("packed struct child encoding %s is not supported", Enc20Name(kind))
}

// boolsToBitmap packs a bool slice into an LSB-first bitmap.
func boolsToBitmap(v []bool) []byte {
	b := make([]byte, (len(v)+7)/8)
	for i, x := range v {
		if x {
			b[i/8] |= 1 << (i % 8)
		}
	}
	return b
}

// listPage20 is a decoded 2.0 List page: per list its validity and item
// range, relative to the first item of the page.
type listPage20 struct {
	Valid    []bool // nil when every list is valid
	Offs     []int64
	NumItems uint64
}

// List20 decodes a 2.0 List encoding of n lists.
func List20(val []byte, bufs PageBuffers, n int) (*listPage20, error) {
	var offsEnc []byte
	var adj, numItems uint64
	if err := wire.Walk(val, func(f wire.Field) error {
		switch f.Num {
		case listOffsets:
			offsEnc = f.B
		case listNullOffsetAdjust:
			adj = f.U
		case listNumItems:
			numItems = f.U
		}
		return nil
	}); err != nil {
		return nil, err
	}
	ol, _, err := decode20(offsEnc, bufs, n, 1)
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	if ol.Bits != 64 && ol.Bits != 32 {
		return nil, fmt.Errorf("%w: list offsets of %d bits", errCorrupt, ol.Bits)
	}
	ends, valid := unadjustOffsets(ol, n, adj)
	lp := &listPage20{Valid: valid, Offs: make([]int64, n+1), NumItems: numItems}
	for i, v := range ends {
		if v > numItems || int64(v) < lp.Offs[i] {
			return nil, fmt.Errorf("%w: list offset %d of %d items", errCorrupt, v, numItems)
		}
		lp.Offs[i+1] = int64(v)
	}
	return lp, nil
}
