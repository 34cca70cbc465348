package parquet

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Shapes arrow-go's parquet writer gets wrong, written in shapes it gets
// right. The parquet file is the same: only the Arrow arrays the writer is
// given differ, and the Arrow schema stored in the output names the
// exact types.
//
//   - A fixed-size list with a null entry, or under a null struct entry:
//     the writer refuses it ("lists with non-zero length null components"),
//     since the null entry still spans its elements. It is given as a list
//     (the parquet schema of the two is the same) whose null entries span
//     no elements.
//   - A decimal stored as FIXED_LEN_BYTE_ARRAY under a repeated parent:
//     the writer miscounts the values of a page (it counts empty and null
//     lists as nulls of the leaf), and drops the page's statistics and the
//     column index of the column chunk. It is given as fixed-size binary
//     of the parquet width, big-endian as parquet stores it, which the
//     writer counts right, annotated with the source's decimal type.

// writerType returns the type the parquet writer is given for a field of
// type t (see above); repeated says whether a list is among its
// ancestors, decAsInt whether decimals of precision 18 or less are
// written as integers.
func writerType(t arrow.DataType, repeated, decAsInt bool) arrow.DataType {
	switch tt := t.(type) {
	case *arrow.StructType:
		fields := tt.Fields()
		for i := range fields {
			fields[i].Type = writerType(fields[i].Type, repeated, decAsInt)
		}
		return arrow.StructOf(fields...)
	case *arrow.MapType:
		k, v := tt.KeyField(), tt.ItemField()
		k.Type = writerType(k.Type, true, decAsInt)
		v.Type = writerType(v.Type, true, decAsInt)
		return mapOf(tt, k, v)
	case *arrow.ListType, *arrow.LargeListType, *arrow.FixedSizeListType:
		// A fixed-size list is written as a list (see above).
		ef := tt.(arrow.ListLikeType).ElemField()
		ef.Type = writerType(ef.Type, true, decAsInt)
		if _, fixed := t.(*arrow.FixedSizeListType); fixed {
			return arrow.ListOfField(ef)
		}
		return listOf(t, ef)
	case arrow.ExtensionType:
		if _, pinned := tt.(*pinnedType); !pinned {
			if w := writerType(tt.StorageType(), repeated, decAsInt); !arrow.TypeEqual(w, tt.StorageType()) {
				return w
			}
			return t
		}
	}
	if !repeated {
		return t
	}
	st, lt := t, schema.LogicalType(nil)
	if p, ok := t.(*pinnedType); ok {
		st, lt = p.Storage, p.logical
	}
	var prec, scale int32
	switch d := st.(type) {
	case *arrow.Decimal128Type:
		prec, scale = d.Precision, d.Scale
	case *arrow.Decimal256Type:
		prec, scale = d.Precision, d.Scale
	default:
		return t
	}
	if decAsInt && prec <= 18 {
		return t
	}
	if lt == nil {
		lt = schema.NewDecimalLogicalType(prec, scale)
	}
	fsb := &arrow.FixedSizeBinaryType{ByteWidth: int(pqarrow.DecimalSize(prec))}
	return &pinnedType{ExtensionBase: arrow.ExtensionBase{Storage: fsb}, logical: lt}
}

// needsWriterArray reports whether a column of type from must be copied
// (toWriterData) rather than relabelled to be written as type to.
func needsWriterArray(from, to arrow.DataType) bool {
	from, to = storageOf(from), storageOf(to)
	switch t := to.(type) {
	case *arrow.StructType:
		f, ok := from.(*arrow.StructType)
		if !ok || f.NumFields() != t.NumFields() {
			return false
		}
		for i := range t.Fields() {
			if needsWriterArray(f.Field(i).Type, t.Field(i).Type) {
				return true
			}
		}
		return false
	case *arrow.FixedSizeBinaryType:
		return from.ID() == arrow.DECIMAL128 || from.ID() == arrow.DECIMAL256
	case *arrow.ListType:
		if from.ID() == arrow.FIXED_SIZE_LIST {
			return true
		}
	}
	if t, ok := to.(arrow.ListLikeType); ok {
		if f, ok := from.(arrow.ListLikeType); ok {
			return needsWriterArray(f.Elem(), t.Elem())
		}
	}
	return false
}

func storageOf(t arrow.DataType) arrow.DataType {
	if et, ok := t.(arrow.ExtensionType); ok {
		return et.StorageType()
	}
	return t
}

// toWriterData returns d as the writer is given it with type to (see
// writerType): copied where the shape changes, relabelled elsewhere.
// hidden, when not nil, marks the entries (from d's offset) a null parent
// hides.
func toWriterData(d arrow.ArrayData, to arrow.DataType, hidden []bool, mem memory.Allocator) arrow.ArrayData {
	if !needsWriterArray(d.DataType(), to) {
		return relabelData(d, to)
	}
	switch t := storageOf(to).(type) {
	case *arrow.FixedSizeBinaryType:
		return decimalToFixed(d, to, t.ByteWidth, mem)
	case *arrow.ListType:
		if fl, ok := storageOf(d.DataType()).(*arrow.FixedSizeListType); ok {
			return fixedToList(d, int(fl.Len()), to, t, hidden, mem)
		}
	case *arrow.StructType:
		hide := make([]bool, d.Len())
		for i := range hide {
			hide[i] = (hidden != nil && hidden[i]) || (mayHaveNulls(d) && !bitutil.BitIsSet(d.Buffers()[0].Bytes(), d.Offset()+i))
		}
		children := make([]arrow.ArrayData, len(d.Children()))
		for i, c := range d.Children() {
			// a struct's children share its offset
			c = array.NewSliceData(c, int64(d.Offset()), int64(d.Offset()+d.Len()))
			children[i] = toWriterData(c, t.Field(i).Type, hide, mem)
			c.Release()
		}
		nd := array.NewData(to, d.Len(), []*memory.Buffer{offsetBitmap(d, mem)}, children, d.NullN(), 0)
		releaseData(children)
		return nd
	}
	// a variable list, a large list or a map whose elements change
	child := toWriterData(d.Children()[0], storageOf(to).(arrow.ListLikeType).Elem(), nil, mem)
	nd := array.NewData(to, d.Len(), d.Buffers(), []arrow.ArrayData{child}, d.NullN(), d.Offset())
	child.Release()
	return nd
}

// mayHaveNulls reports whether d has a validity bitmap and a null count
// other than 0 (a slice's count is unknown until counted).
func mayHaveNulls(d arrow.ArrayData) bool {
	return len(d.Buffers()) > 0 && d.Buffers()[0] != nil && d.NullN() != 0
}

func releaseData(ds []arrow.ArrayData) {
	for _, d := range ds {
		d.Release()
	}
}

// offsetBitmap returns d's validity bitmap starting at bit 0 (nil without
// nulls).
func offsetBitmap(d arrow.ArrayData, mem memory.Allocator) *memory.Buffer {
	if !mayHaveNulls(d) {
		return nil
	}
	b := memory.NewResizableBuffer(mem)
	b.Resize(int(bitutil.BytesForBits(int64(d.Len()))))
	bitutil.CopyBitmap(d.Buffers()[0].Bytes(), d.Offset(), d.Len(), b.Bytes(), 0)
	return b
}

// fixedToList returns the fixed-size list d (n elements an entry) as a
// list of type to (storage lt) whose null entries, and those hidden,
// span no elements.
func fixedToList(d arrow.ArrayData, n int, to arrow.DataType, lt *arrow.ListType, hidden []bool, mem memory.Allocator) arrow.ArrayData {
	var bits []byte
	if mayHaveNulls(d) {
		bits = d.Buffers()[0].Bytes()
	}
	offsets := memory.NewResizableBuffer(mem)
	offsets.Resize((d.Len() + 1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	valid := memory.NewResizableBuffer(mem)
	valid.Resize(int(bitutil.BytesForBits(int64(d.Len()))))
	vb := valid.Bytes()
	child := d.Children()[0]
	var parts []arrow.Array
	nulls, at := 0, 0
	for i := 0; i < d.Len(); i++ {
		offs[i] = int32(at)
		shown := (bits == nil || bitutil.BitIsSet(bits, d.Offset()+i)) && (hidden == nil || !hidden[i])
		bitutil.SetBitTo(vb, i, shown)
		if !shown {
			nulls++
			continue
		}
		start := int64((d.Offset() + i) * n)
		s := array.NewSliceData(child, start, start+int64(n))
		parts = append(parts, array.MakeFromData(s))
		s.Release()
		at += n
	}
	offs[d.Len()] = int32(at)
	var elems arrow.ArrayData
	if len(parts) == 0 {
		empty := array.NewSliceData(child, 0, 0)
		elems = toWriterData(empty, lt.Elem(), nil, mem)
		empty.Release()
	} else {
		joined, err := array.Concatenate(parts, mem)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			panic(err) // same type throughout: cannot happen
		}
		elems = toWriterData(joined.Data(), lt.Elem(), nil, mem)
		joined.Release()
	}
	if nulls == 0 {
		valid.Release()
		valid = nil
	}
	nd := array.NewData(to, d.Len(), []*memory.Buffer{valid, offsets}, []arrow.ArrayData{elems}, nulls, 0)
	if valid != nil {
		valid.Release()
	}
	offsets.Release()
	elems.Release()
	return nd
}

// decimalToFixed returns the decimals d as fixed-size binary values of
// width bytes, big-endian two's complement as parquet stores them.
func decimalToFixed(d arrow.ArrayData, to arrow.DataType, width int, mem memory.Allocator) arrow.ArrayData {
	a := array.MakeFromData(d)
	defer a.Release()
	b := array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: width})
	defer b.Release()
	var be [32]byte
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		var n int
		switch v := a.(type) {
		case *array.Decimal128:
			x := v.Value(i)
			binary.BigEndian.PutUint64(be[0:], uint64(x.HighBits()))
			binary.BigEndian.PutUint64(be[8:], x.LowBits())
			n = 16
		case *array.Decimal256:
			w := v.Value(i).Array()
			for k := 0; k < 4; k++ {
				binary.BigEndian.PutUint64(be[8*k:], w[3-k])
			}
			n = 32
		}
		b.Append(be[n-width : n])
	}
	fixed := b.NewArray()
	defer fixed.Release()
	fd := fixed.Data()
	return array.NewData(to, fd.Len(), fd.Buffers(), nil, fd.NullN(), fd.Offset())
}
