// Package assemble turns decoded Lance leaves into Arrow arrays: a leaf and
// its validity into an array of its Arrow type, and a 2.1+ structural page
// (values with repetition and definition levels) into the nested arrays of a
// field path. It does not read files or decode encodings (see decode), and
// builds arrays only for the Arrow types the lance package maps Lance
// fields to.
package assemble

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// ListOf builds an array of dt, a list or large list type, of n rows over
// child: offs holds the n+1 offsets into child, and vb and nulls the
// validity bitmap and null count (as BitmapOf returns them).
func ListOf(dt arrow.DataType, n int, offs []int64, vb *memory.Buffer, nulls int, child arrow.Array) arrow.Array {
	var ob []byte
	if _, ok := dt.(*arrow.ListType); ok {
		o32 := make([]int32, len(offs))
		for i, o := range offs {
			o32[i] = int32(o)
		}
		ob = arrow.Int32Traits.CastToBytes(o32)
	} else {
		ob = arrow.Int64Traits.CastToBytes(offs)
	}
	return array.MakeFromData(array.NewData(dt, n, []*memory.Buffer{vb, memory.NewBufferBytes(ob)}, []arrow.ArrayData{child.Data()}, nulls, 0))
}

// BitmapOf packs a validity slice; it returns nil and 0 when every entry is
// valid.
func BitmapOf(valid []bool) (*memory.Buffer, int) {
	nulls := 0
	for _, v := range valid {
		if !v {
			nulls++
		}
	}
	if nulls == 0 {
		return nil, 0
	}
	b := make([]byte, bitutil.BytesForBits(int64(len(valid))))
	for i, v := range valid {
		if v {
			bitutil.SetBit(b, i)
		}
	}
	return memory.NewBufferBytes(b), nulls
}

// FixedWidthBits returns the bit width of a fixed-width Arrow type, or 0.
func FixedWidthBits(dt arrow.DataType) int {
	if fw, ok := dt.(arrow.FixedWidthDataType); ok {
		return fw.BitWidth()
	}
	return 0
}

// ZeroLeaf returns a leaf of n zero (or empty) values of type dt.
func ZeroLeaf(dt arrow.DataType, n int) decode.Leaf {
	switch t := dt.(type) {
	case *arrow.FixedSizeListType:
		b := FixedWidthBits(t.Elem())
		return decode.Leaf{N: n, Bits: b * int(t.Len()), Data: make([]byte, n*b*int(t.Len())/8), Dim: int(t.Len())}
	case arrow.BinaryDataType:
		return decode.Leaf{N: n, Offs: make([]uint64, n+1)}
	case *arrow.StructType:
		b := 0
		for _, f := range t.Fields() {
			b += FixedWidthBits(f.Type)
		}
		return decode.Leaf{N: n, Bits: b, Data: make([]byte, n*b/8)}
	}
	b := FixedWidthBits(dt)
	if b == 0 {
		b = 8
	}
	return decode.Leaf{N: n, Bits: b, Data: make([]byte, (n*b+7)/8)}
}

// LeafArray builds an Arrow array of type dt from decoded values and a
// validity slice (nil = all valid).
func LeafArray(dt arrow.DataType, l decode.Leaf, valid []bool) (arrow.Array, error) {
	if valid != nil && len(valid) != l.N {
		return nil, fmt.Errorf("%w: %d validity entries for %d values", errCorrupt, len(valid), l.N)
	}
	vb, nulls := BitmapOf(valid)
	switch t := dt.(type) {
	case *arrow.BooleanType:
		if l.Bits != 1 {
			return nil, fmt.Errorf("%w: boolean values of %d bits", errCorrupt, l.Bits)
		}
		return array.MakeFromData(array.NewData(dt, l.N, []*memory.Buffer{vb, memory.NewBufferBytes(l.Data)}, nil, nulls, 0)), nil
	case *arrow.StringType, *arrow.BinaryType, *arrow.LargeStringType, *arrow.LargeBinaryType:
		if l.Offs == nil {
			return nil, fmt.Errorf("%w: %s from fixed-width values", errCorrupt, dt)
		}
		base := l.Offs[0]
		end := l.Offs[l.N]
		var ob []byte
		switch t.(type) {
		case *arrow.StringType, *arrow.BinaryType:
			if end-base > math.MaxInt32 {
				return nil, fmt.Errorf("%d bytes overflow a %s array", end-base, dt)
			}
			o := make([]int32, l.N+1)
			for i := range o {
				o[i] = int32(l.Offs[i] - base)
			}
			ob = arrow.Int32Traits.CastToBytes(o)
		default:
			o := make([]int64, l.N+1)
			for i := range o {
				o[i] = int64(l.Offs[i] - base)
			}
			ob = arrow.Int64Traits.CastToBytes(o)
		}
		return array.MakeFromData(array.NewData(dt, l.N, []*memory.Buffer{vb, memory.NewBufferBytes(ob), memory.NewBufferBytes(l.Data[base:end])}, nil, nulls, 0)), nil
	case *arrow.FixedSizeListType:
		dim := int(t.Len())
		eb := FixedWidthBits(t.Elem())
		if eb == 0 || l.Offs != nil || l.Bits != eb*dim {
			return nil, fmt.Errorf("%w: %s from %d-bit values", errCorrupt, dt, l.Bits)
		}
		var ivb *memory.Buffer
		inulls := 0
		if l.ItemValid != nil {
			n := l.N * dim
			inulls = n - bitutil.CountSetBits(l.ItemValid, 0, n)
			if inulls > 0 {
				ivb = memory.NewBufferBytes(l.ItemValid)
			}
		}
		child := array.NewData(t.Elem(), l.N*dim, []*memory.Buffer{ivb, memory.NewBufferBytes(l.Data)}, nil, inulls, 0)
		defer child.Release()
		return array.MakeFromData(array.NewData(dt, l.N, []*memory.Buffer{vb}, []arrow.ArrayData{child}, nulls, 0)), nil
	case *arrow.StructType:
		// A packed struct: row-major fixed-width children.
		widths := make([]int, t.NumFields())
		total := 0
		for i, f := range t.Fields() {
			widths[i] = FixedWidthBits(f.Type)
			if widths[i] == 0 || widths[i]%8 != 0 {
				return nil, fmt.Errorf("packed struct child %q of type %s is not supported", f.Name, f.Type)
			}
			total += widths[i]
		}
		if l.Offs != nil || l.Bits != total {
			return nil, fmt.Errorf("%w: packed struct of %d bits from %d-bit values", errCorrupt, total, l.Bits)
		}
		rowBytes := total / 8
		children := make([]arrow.ArrayData, t.NumFields())
		off := 0
		for i, f := range t.Fields() {
			w := widths[i] / 8
			b := make([]byte, l.N*w)
			for r := 0; r < l.N; r++ {
				copy(b[r*w:], l.Data[r*rowBytes+off:r*rowBytes+off+w])
			}
			off += w
			d := array.NewData(f.Type, l.N, []*memory.Buffer{nil, memory.NewBufferBytes(b)}, nil, 0, 0)
			defer d.Release()
			children[i] = d
		}
		return array.MakeFromData(array.NewData(dt, l.N, []*memory.Buffer{vb}, children, nulls, 0)), nil
	case *arrow.NullType:
		return array.NewNull(l.N), nil
	}
	bw := FixedWidthBits(dt)
	if bw == 0 {
		return nil, fmt.Errorf("arrow type %s is not supported", dt)
	}
	if l.Offs != nil || l.Bits != bw {
		return nil, fmt.Errorf("%w: %s from %d-bit values", errCorrupt, dt, l.Bits)
	}
	return array.MakeFromData(array.NewData(dt, l.N, []*memory.Buffer{vb, memory.NewBufferBytes(l.Data[:l.N*bw/8])}, nil, nulls, 0)), nil
}

// RestrictPath returns, for a path of fields from the top level to a leaf,
// the Arrow types restricted to that path: each struct keeps only the child
// on the path.
func RestrictPath(path []arrow.Field) []arrow.Field {
	out := make([]arrow.Field, len(path))
	copy(out, path)
	for i := len(out) - 2; i >= 0; i-- {
		switch out[i].Type.(type) {
		case *arrow.StructType:
			out[i].Type = arrow.StructOf(out[i+1])
		case *arrow.ListType:
			out[i].Type = arrow.ListOfField(out[i+1])
		case *arrow.LargeListType:
			out[i].Type = arrow.LargeListOfField(out[i+1])
		}
	}
	return out
}

// Unravel turns a decoded 2.1+ page into the Arrow array of the top-level
// field restricted to the path (top level first, leaf last).
func Unravel(sp *decode.StructPage, path []arrow.Field) (arrow.Array, error) {
	u, err := newUnraveler(sp, RestrictPath(path))
	if err != nil {
		return nil, err
	}
	if err := u.locate(); err != nil {
		return nil, err
	}
	return u.build(0)
}

// unraveler holds what Unravel derives from a page's layers and levels.
type unraveler struct {
	sp   *decode.StructPage
	path []arrow.Field
	// kinds are the layer kinds, outer first.
	kinds []int
	// emptyLvl[j] is the definition level of an empty list at layer j
	// (0 for none); hi[j] the highest definition level of an item that
	// exists at layer j (hi[K] is 0).
	emptyLvl, hi []int
	// maxRep is the page's highest repetition level; rep[j] the level
	// layer j's items start at, lastList[j] the nearest list layer
	// outside j (-1 for none).
	maxRep        int
	rep, lastList []int
	n             int     // level entries
	elems         [][]int // per layer, the entries that are its items
}

// newUnraveler checks the page's layers against the field path and assigns
// the definition and repetition levels of each layer.
func newUnraveler(sp *decode.StructPage, path []arrow.Field) (*unraveler, error) {
	K := len(sp.Layers)
	if K != len(path) {
		return nil, fmt.Errorf("page has %d rep/def layers for a field path of depth %d", K, len(path))
	}
	u := &unraveler{sp: sp, path: path, kinds: make([]int, K), emptyLvl: make([]int, K), hi: make([]int, K+1),
		rep: make([]int, K), lastList: make([]int, K)}
	for j := range u.kinds {
		u.kinds[j] = sp.Layers[K-1-j]
	}
	for j, k := range u.kinds {
		_, isL := path[j].Type.(*arrow.ListType)
		_, isLL := path[j].Type.(*arrow.LargeListType)
		if decode.IsList(k) != (isL || isLL) {
			return nil, fmt.Errorf("%w: rep/def layer %d does not match field %q of type %s", errCorrupt, k, path[j].Name, path[j].Type)
		}
	}
	// Definition levels, assigned from the innermost layer outwards.
	next := 1
	for j := K - 1; j >= 0; j-- {
		switch u.kinds[j] {
		case decode.LayerNullableItem, decode.LayerNullableList:
			next++
		case decode.LayerEmptyableList:
			u.emptyLvl[j] = next
			next++
		case decode.LayerNullAndEmptyList:
			u.emptyLvl[j] = next + 1
			next += 2
		}
		u.hi[j] = next - 1
	}
	ll := -1
	for j, k := range u.kinds {
		u.rep[j] = u.maxRep
		u.lastList[j] = ll
		if decode.IsList(k) {
			u.maxRep++
			ll = j
		}
	}
	return u, nil
}

func (u *unraveler) repAt(e int) int {
	if u.sp.Rep == nil {
		return 0
	}
	return int(u.sp.Rep[e])
}

func (u *unraveler) defAt(e int) int {
	if u.sp.Def == nil {
		return 0
	}
	return int(u.sp.Def[e])
}

// locate finds, for every layer, the level entries that are its items, and
// checks them against the page's rows and values.
func (u *unraveler) locate() error {
	sp := u.sp
	u.n = sp.Vals.N
	if sp.Def != nil {
		u.n = len(sp.Def)
	} else if sp.Rep != nil {
		u.n = len(sp.Rep)
	}
	if sp.Rep != nil && len(sp.Rep) != u.n {
		return fmt.Errorf("%w: %d repetition and %d definition levels", errCorrupt, len(sp.Rep), u.n)
	}
	if u.maxRep > 0 && sp.Rep == nil {
		return fmt.Errorf("%w: list page without repetition levels", errCorrupt)
	}
	K := len(u.kinds)
	u.elems = make([][]int, K)
	for j := 0; j < K; j++ {
		thr := u.maxRep - u.rep[j]
		lim := math.MaxInt
		if u.lastList[j] >= 0 {
			lim = u.hi[u.lastList[j]+1]
		}
		var es []int
		for e := 0; e < u.n; e++ {
			if u.repAt(e) >= thr && u.defAt(e) <= lim {
				es = append(es, e)
			}
		}
		u.elems[j] = es
	}
	if len(u.elems[0]) != sp.Rows {
		return fmt.Errorf("%w: page levels describe %d rows, page has %d", errCorrupt, len(u.elems[0]), sp.Rows)
	}
	if len(u.elems[K-1]) != sp.Vals.N {
		return fmt.Errorf("%w: page levels describe %d values, page has %d", errCorrupt, len(u.elems[K-1]), sp.Vals.N)
	}
	return nil
}

// build assembles the array of layer j and the layers inside it.
func (u *unraveler) build(j int) (arrow.Array, error) {
	es := u.elems[j]
	valid := make([]bool, len(es))
	for i, e := range es {
		valid[i] = u.defAt(e) <= u.hi[j+1] || (u.emptyLvl[j] != 0 && u.defAt(e) == u.emptyLvl[j])
	}
	if j == len(u.kinds)-1 {
		return LeafArray(u.path[j].Type, u.sp.Vals, valid)
	}
	child, err := u.build(j + 1)
	if err != nil {
		return nil, err
	}
	defer child.Release()
	vb, nulls := BitmapOf(valid)
	switch dt := u.path[j].Type.(type) {
	case *arrow.StructType:
		return array.MakeFromData(array.NewData(dt, len(es), []*memory.Buffer{vb}, []arrow.ArrayData{child.Data()}, nulls, 0)), nil
	case *arrow.ListType, *arrow.LargeListType:
		ob, err := u.listOffsets(j, dt)
		if err != nil {
			return nil, err
		}
		return array.MakeFromData(array.NewData(dt, len(es), []*memory.Buffer{vb, memory.NewBufferBytes(ob)}, []arrow.ArrayData{child.Data()}, nulls, 0)), nil
	}
	return nil, fmt.Errorf("field %q of type %s cannot hold children", u.path[j].Name, u.path[j].Type)
}

// listOffsets is the offsets buffer of list layer j: where each of its
// items' children start among layer j+1's items (32-bit for a list, 64-bit
// for a large list).
func (u *unraveler) listOffsets(j int, dt arrow.DataType) ([]byte, error) {
	es, ces := u.elems[j], u.elems[j+1]
	offs := make([]int64, len(es)+1)
	c := 0
	for i := range es {
		end := u.n
		if i+1 < len(es) {
			end = es[i+1]
		}
		for c < len(ces) && ces[c] < end {
			c++
		}
		offs[i+1] = int64(c)
	}
	if c != len(ces) {
		return nil, fmt.Errorf("%w: list items before the first list", errCorrupt)
	}
	if _, ok := dt.(*arrow.ListType); !ok {
		return arrow.Int64Traits.CastToBytes(offs), nil
	}
	if c > math.MaxInt32 {
		return nil, fmt.Errorf("%d list items overflow a list array", c)
	}
	o32 := make([]int32, len(offs))
	for i, o := range offs {
		o32[i] = int32(o)
	}
	return arrow.Int32Traits.CastToBytes(o32), nil
}

// MergeParts combines arrays of the same field, each holding the subset of
// its leaves on one path (as unravel produces them), into one array of type
// dt. Struct validity and list offsets come from the first part; every part
// describes them identically.
func MergeParts(alloc memory.Allocator, dt arrow.DataType, parts []arrow.Array) (arrow.Array, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("field of type %s without columns", dt)
	}
	n := parts[0].Len()
	for _, p := range parts {
		if p.Len() != n {
			return nil, fmt.Errorf("%w: leaf columns disagree on the row count", errCorrupt)
		}
	}
	valid := make([]bool, n)
	for i := range valid {
		valid[i] = parts[0].IsValid(i)
	}
	vb, nulls := BitmapOf(valid)
	switch t := dt.(type) {
	case *arrow.StructType:
		var children []arrow.ArrayData
		for _, cf := range t.Fields() {
			var sub []arrow.Array
			for _, p := range parts {
				ps, ok := p.(*array.Struct)
				if !ok {
					return nil, fmt.Errorf("%w: struct leaf column of type %s", errCorrupt, p.DataType())
				}
				if idx, ok := ps.DataType().(*arrow.StructType).FieldIdx(cf.Name); ok {
					sub = append(sub, ps.Field(idx))
				}
			}
			var m arrow.Array
			if len(sub) == 0 {
				// A child without any column reads as nulls.
				m = array.MakeArrayOfNull(alloc, cf.Type, n)
			} else {
				var err error
				if m, err = MergeParts(alloc, cf.Type, sub); err != nil {
					return nil, fmt.Errorf("field %q: %w", cf.Name, err)
				}
			}
			defer m.Release()
			children = append(children, m.Data())
		}
		return array.MakeFromData(array.NewData(dt, n, []*memory.Buffer{vb}, children, nulls, 0)), nil
	case *arrow.ListType, *arrow.LargeListType:
		var sub []arrow.Array
		var offs []int64
		for k, p := range parts {
			ll, ok := p.(array.ListLike)
			if !ok {
				return nil, fmt.Errorf("%w: list leaf column of type %s", errCorrupt, p.DataType())
			}
			var first, last int64
			if n > 0 {
				first, _ = ll.ValueOffsets(0)
				_, last = ll.ValueOffsets(n - 1)
			}
			if k == 0 {
				offs = make([]int64, n+1)
				for i := 0; i < n; i++ {
					s, e := ll.ValueOffsets(i)
					offs[i], offs[i+1] = s-first, e-first
				}
			}
			s := array.NewSlice(ll.ListValues(), first, last)
			defer s.Release()
			sub = append(sub, s)
		}
		child, err := MergeParts(alloc, t.(arrow.ListLikeType).Elem(), sub)
		if err != nil {
			return nil, err
		}
		defer child.Release()
		return ListOf(dt, n, offs, vb, nulls, child), nil
	}
	if len(parts) != 1 {
		return nil, fmt.Errorf("%d leaf columns for type %s", len(parts), dt)
	}
	parts[0].Retain()
	return parts[0], nil
}

// errCorrupt is wrapped by every error caused by malformed input.
var errCorrupt = wire.ErrCorrupt
