package lancefmt

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
)

// This file writes Arrow arrays as Lance file version 2.0 columns, for the
// transcoding of legacy (0.1) fragments: one column per field in schema
// pre-order, one page per column. Leaves are Nullable(none|some|all) over
// Flat; binary and string types use the Binary encoding (u64 end offsets
// with a null adjustment, then the bytes); fixed-size lists of fixed-width
// items are one FixedSizeList column; lists are a List column of u64 end
// offsets followed by the item field's columns; structs are a SimpleStruct
// column (2.0 stores no struct validity) followed by their children's.

// check20 reports whether field f (and its children) can be written as 2.0
// columns.
func check20(f *Field) error {
	if strings.HasPrefix(f.LogicalType, "dict:") {
		return fmt.Errorf("dictionary type %s cannot be transcoded to file version 2.0", f.LogicalType)
	}
	if isPacked(f) {
		return fmt.Errorf("packed struct cannot be transcoded to file version 2.0")
	}
	if f.IsBlob() {
		return fmt.Errorf("blob columns must be replaced")
	}
	af, err := arrowField(f, 0)
	if err != nil {
		return err
	}
	switch t := af.Type.(type) {
	case *arrow.StructType, *arrow.ListType, *arrow.LargeListType:
		for _, c := range f.Children {
			if err := check20(c); err != nil {
				return err
			}
		}
		return nil
	case *arrow.FixedSizeListType:
		if w := fixedBits20(t.Elem()); w <= 1 {
			return fmt.Errorf("fixed_size_list of %s cannot be transcoded to file version 2.0", t.Elem())
		}
		return nil
	case *arrow.BinaryType, *arrow.StringType, *arrow.LargeBinaryType, *arrow.LargeStringType, *arrow.BooleanType:
		return nil
	}
	if fixedBits20(af.Type) > 1 {
		return nil
	}
	return fmt.Errorf("type %s cannot be transcoded to file version 2.0", af.Type)
}

// fixedBits20 returns the bit width of a fixed-width non-boolean type, or 0.
func fixedBits20(dt arrow.DataType) int {
	if _, ok := dt.(*arrow.BooleanType); ok {
		return 1
	}
	if fw, ok := dt.(arrow.FixedWidthDataType); ok && fw.BitWidth() >= 8 && fw.BitWidth()%8 == 0 {
		if dt.ID() == arrow.DICTIONARY || dt.ID() == arrow.EXTENSION {
			return 0
		}
		return fw.BitWidth()
	}
	return 0
}

// validityBits returns the validity of a as a fresh LSB-first bitmap
// (nil when a has no null) and its null count.
func validityBits(a arrow.Array) ([]byte, int) {
	n := a.Len()
	if a.NullN() == 0 {
		return nil, 0
	}
	out := make([]byte, (n+7)/8)
	for i := 0; i < n; i++ {
		if a.IsValid(i) {
			bitutil.SetBit(out, i)
		}
	}
	return out, a.NullN()
}

// fixedValues returns the n values of a fixed-width array (bits wide) from
// row off, as a fresh buffer.
func fixedValues(a arrow.Array, bits int) []byte {
	d := a.Data()
	if bits == 1 {
		out := make([]byte, (d.Len()+7)/8)
		src := d.Buffers()[1].Bytes()
		for i := 0; i < d.Len(); i++ {
			if bitutil.BitIsSet(src, d.Offset()+i) {
				bitutil.SetBit(out, i)
			}
		}
		return out
	}
	w := bits / 8
	buf := d.Buffers()[1]
	if buf == nil {
		return make([]byte, w*d.Len())
	}
	return append([]byte(nil), buf.Bytes()[w*d.Offset():w*(d.Offset()+d.Len())]...)
}

// pageBufs collects the buffers of one page and hands out their indices.
type pageBufs [][]byte

func (p *pageBufs) add(b []byte) uint32 {
	*p = append(*p, b)
	return uint32(len(*p) - 1)
}

// nullable20 wraps values (an ArrayEncoding) in a Nullable encoding given
// the validity bitmap (nil: no nulls).
func nullable20(validity []byte, nulls, n int, values []byte, bufs *pageBufs) []byte {
	switch {
	case nulls == 0:
		return arrayEnc(2, pbuf(nil).bytes(1, pbuf(nil).bytes(1, values)))
	case nulls == n:
		return arrayEnc(2, pbuf(nil).bytes(3, nil))
	}
	vi := bufs.add(validity)
	some := pbuf(nil).bytes(1, flat20(1, vi)).bytes(2, values)
	return arrayEnc(2, pbuf(nil).bytes(2, some))
}

// writeField20 writes field f holding array a (and its descendants) as
// 2.0 columns of w, appending each written field id and column index.
func (w *fileWriter) writeField20(f *Field, a arrow.Array, fields, cols *[]uint64) error {
	n := a.Len()
	var bufs pageBufs
	var enc []byte
	var after func() error
	switch t := a.DataType().(type) {
	case *arrow.StructType:
		if isPacked(f) || len(f.Children) != t.NumFields() {
			return fmt.Errorf("column %q: struct cannot be transcoded", f.Name)
		}
		enc = arrayEnc(decode.Enc20Struct, nil)
		sa := a.(*array.Struct)
		after = func() error {
			for i, c := range f.Children {
				if err := w.writeField20(c, sa.Field(i), fields, cols); err != nil {
					return err
				}
			}
			return nil
		}
	case *arrow.ListType, *arrow.LargeListType:
		if len(f.Children) != 1 {
			return fmt.Errorf("column %q: %w: list without item field", f.Name, errCorrupt)
		}
		la := a.(array.ListLike)
		var start, end int64
		if n > 0 {
			start, _ = la.ValueOffsets(0)
			_, end = la.ValueOffsets(n - 1)
		}
		numItems := uint64(end - start)
		adj := numItems + 1
		offs := make([]byte, 8*n)
		for i := 0; i < n; i++ {
			_, e := la.ValueOffsets(i)
			v := uint64(e - start)
			if a.IsNull(i) {
				v += adj
			}
			binary.LittleEndian.PutUint64(offs[8*i:], v)
		}
		oi := bufs.add(offs)
		noNull := arrayEnc(2, pbuf(nil).bytes(1, pbuf(nil).bytes(1, flat20(64, oi))))
		enc = arrayEnc(decode.Enc20List, pbuf(nil).bytes(1, noNull).varint(2, adj).varint(3, numItems))
		items := array.NewSlice(la.ListValues(), start, end)
		defer items.Release()
		after = func() error { return w.writeField20(f.Children[0], items, fields, cols) }
	case *arrow.FixedSizeListType:
		bits := fixedBits20(t.Elem())
		if bits <= 1 {
			return fmt.Errorf("column %q: fixed_size_list of %s cannot be transcoded to file version 2.0", f.Name, t.Elem())
		}
		dim := int64(t.Len())
		fa := a.(*array.FixedSizeList)
		off := int64(fa.Data().Offset())
		items := array.NewSlice(fa.ListValues(), off*dim, (off+int64(n))*dim)
		defer items.Release()
		validity, nulls := validityBits(a)
		var vbuf []byte
		if nulls > 0 && nulls < n {
			vbuf = validity
		}
		// Buffer order: list validity, item validity, item values.
		var vi uint32
		if vbuf != nil {
			vi = bufs.add(vbuf)
		}
		iv, inulls := validityBits(items)
		var inner []byte
		if inulls > 0 {
			ii := bufs.add(iv)
			vals := flat20(uint64(bits), bufs.add(fixedValues(items, bits)))
			inner = arrayEnc(2, pbuf(nil).bytes(2, pbuf(nil).bytes(1, flat20(1, ii)).bytes(2, vals)))
		} else {
			vals := flat20(uint64(bits), bufs.add(fixedValues(items, bits)))
			inner = arrayEnc(2, pbuf(nil).bytes(1, pbuf(nil).bytes(1, vals)))
		}
		fsl := arrayEnc(decode.Enc20FixedSizeList, pbuf(nil).varint(1, uint64(dim)).bytes(2, inner))
		switch {
		case nulls == 0:
			enc = arrayEnc(2, pbuf(nil).bytes(1, pbuf(nil).bytes(1, fsl)))
		case nulls == n:
			bufs = nil
			enc = arrayEnc(2, pbuf(nil).bytes(3, nil))
		default:
			enc = arrayEnc(2, pbuf(nil).bytes(2, pbuf(nil).bytes(1, flat20(1, vi)).bytes(2, fsl)))
		}
	case *arrow.BinaryType, *arrow.StringType, *arrow.LargeBinaryType, *arrow.LargeStringType:
		ba := a.(array.BinaryLike)
		var data []byte
		for i := 0; i < n; i++ {
			if a.IsValid(i) {
				data = append(data, ba.ValueBytes()[ba.ValueOffset64(i)-ba.ValueOffset64(0):][:ba.ValueLen(i)]...)
			}
		}
		adj := uint64(len(data)) + 1
		idx := make([]byte, 8*n)
		var end uint64
		for i := 0; i < n; i++ {
			v := end
			if a.IsValid(i) {
				end += uint64(ba.ValueLen(i))
				v = end
			} else {
				v += adj
			}
			binary.LittleEndian.PutUint64(idx[8*i:], v)
		}
		ii := bufs.add(idx)
		di := bufs.add(data)
		noNull := arrayEnc(2, pbuf(nil).bytes(1, pbuf(nil).bytes(1, flat20(64, ii))))
		enc = arrayEnc(6, pbuf(nil).bytes(1, noNull).bytes(2, flat20(8, di)).varint(3, adj))
	default:
		bits := fixedBits20(a.DataType())
		if bits == 0 {
			return fmt.Errorf("column %q: type %s cannot be transcoded to file version 2.0", f.Name, a.DataType())
		}
		validity, nulls := validityBits(a)
		if nulls == n && n > 0 {
			enc = nullable20(nil, nulls, n, nil, &bufs)
			break
		}
		// Validity first, then the values (buffer indices in order).
		var tmp pageBufs
		vals := fixedValues(a, bits)
		if nulls > 0 {
			vi := bufs.add(validity)
			xi := bufs.add(vals)
			some := pbuf(nil).bytes(1, flat20(1, vi)).bytes(2, flat20(uint64(bits), xi))
			enc = arrayEnc(2, pbuf(nil).bytes(2, some))
		} else {
			enc = nullable20(nil, 0, n, flat20(uint64(bits), bufs.add(vals)), &tmp)
		}
	}
	emit, done := w.pageWriter()
	if err := emit(outPage{buffers: bufs, length: uint64(n), encoding: anyEncoding(typeArrayEncoding, enc)}); err != nil {
		return fmt.Errorf("column %q: %w", f.Name, err)
	}
	done()
	*fields = append(*fields, uint64(int64(f.ID)))
	*cols = append(*cols, uint64(len(w.cols)-1))
	if after != nil {
		return after()
	}
	return nil
}

// keptTop returns the top-level fields of the rewrite that are neither
// replaced nor hooked and have data in fragment fr.
func (rw *rewriter) keptTop(fr *Fragment) []*Field {
	var out []*Field
	for _, f := range rw.d.schema.Fields {
		if rw.replacedIDs[f.ID] != nil || rw.hooks[f.ID] != nil {
			continue
		}
		has := false
		for _, df := range fr.Files {
			for _, id := range df.Fields {
				has = has || fieldContains(f, id)
			}
		}
		if has {
			out = append(out, f)
		}
	}
	return out
}

// fieldByID returns the schema field with id.
func (d *Dataset) fieldByID(id int32) *Field {
	for _, f := range d.manifest.Fields {
		if f.ID == id {
			return f
		}
	}
	return nil
}

// readFragmentPhysical reads every physical row of fragment frag (deleted
// rows included, unlike Scan) for the top-level fields, as one array per
// field id.
func (d *Dataset) readFragmentPhysical(ctx context.Context, frag *Fragment, fields []*Field) (map[int32]arrow.Array, error) {
	out := map[int32]arrow.Array{}
	if len(fields) == 0 {
		return out, nil
	}
	var afs []arrow.Field
	for _, f := range fields {
		af, err := arrowField(f, 0)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		afs = append(afs, af)
	}
	schema := arrow.NewSchema(afs, nil)
	fr, err := d.openFragment(ctx, frag, fields, nil)
	if err != nil {
		return nil, err
	}
	defer fr.close()
	fr.deleted = nil
	parts := make([][]arrow.Array, len(fields))
	defer func() {
		for _, ps := range parts {
			for _, p := range ps {
				p.Release()
			}
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, err := fr.next(1<<16, schema)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		for i := range fields {
			c := rec.Column(i)
			c.Retain()
			parts[i] = append(parts[i], c)
		}
		rec.Release()
	}
	for i, f := range fields {
		var a arrow.Array
		switch len(parts[i]) {
		case 0:
			a = array.MakeArrayOfNull(d.alloc, afs[i].Type, 0)
		case 1:
			a = parts[i][0]
			a.Retain()
		default:
			a, err = array.Concatenate(parts[i], d.alloc)
			if err != nil {
				for _, x := range out {
					x.Release()
				}
				return nil, fmt.Errorf("column %q: %w", f.Name, err)
			}
		}
		out[f.ID] = a
	}
	return out, nil
}
