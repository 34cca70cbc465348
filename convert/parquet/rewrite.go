package parquet

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// selNode is the selection inside one top-level column: a selected field
// (leaf) or a struct some of whose fields are selected.
type selNode struct {
	leaf     bool
	children map[string]*selNode
}

// buildTree groups selected paths by top-level column.
func buildTree(paths [][]string) map[string]*selNode {
	roots := map[string]*selNode{}
	for _, p := range paths {
		n, ok := roots[p[0]]
		if !ok {
			n = &selNode{}
			roots[p[0]] = n
		}
		for _, name := range p[1:] {
			if n.children == nil {
				n.children = map[string]*selNode{}
			}
			c, ok := n.children[name]
			if !ok {
				c = &selNode{}
				n.children[name] = c
			}
			n = c
		}
		n.leaf = true
	}
	return roots
}

// outOpts say how selected media structs are written (see Options.Media
// and Options.KeepPath).
type outOpts struct {
	keepMedia, keepPath bool
}

// outType returns the type a field takes after its selected parts become
// references: lists keep their kind and element field, structs their
// other fields (and gain the --keep-path fields), a selected binary leaf
// becomes utf8, and a selected media struct stays as it is with keepMedia
// (its path holds the reference) or becomes utf8.
func outType(t arrow.DataType, n *selNode, o outOpts) arrow.DataType {
	switch lt := t.(type) {
	case *arrow.ListType:
		ef := lt.ElemField()
		ef.Type = outType(ef.Type, n, o)
		return arrow.ListOfField(ef)
	case *arrow.LargeListType:
		ef := lt.ElemField()
		ef.Type = outType(ef.Type, n, o)
		return arrow.LargeListOfField(ef)
	}
	if n.leaf {
		if _, _, ok := hfStruct(t); ok && o.keepMedia {
			return t
		}
		return arrow.BinaryTypes.String
	}
	st := t.(*arrow.StructType)
	return arrow.StructOf(outFields(st.Fields(), n.children, o)...)
}

// outFields returns the fields of a struct (or a schema) after the
// selected ones are rewritten, each --keep-path field after its media
// field.
func outFields(fields []arrow.Field, sel map[string]*selNode, o outOpts) []arrow.Field {
	var out []arrow.Field
	for _, f := range fields {
		c := sel[f.Name]
		if c == nil {
			out = append(out, f)
			continue
		}
		nf := f
		nf.Type = outType(f.Type, c, o)
		out = append(out, nf)
		if hasSibling(f.Type, c, o) {
			out = append(out, arrow.Field{Name: f.Name + PathSuffix, Type: pathType(f.Type), Nullable: true})
		}
	}
	return out
}

// hasSibling reports whether a selected field gets a --keep-path field:
// a media struct, or a list of them.
func hasSibling(t arrow.DataType, n *selNode, o outOpts) bool {
	if !o.keepPath || !n.leaf {
		return false
	}
	for {
		ef, ok := listElemField(t)
		if !ok {
			break
		}
		t = ef.Type
	}
	_, _, ok := hfStruct(t)
	return ok
}

// pathType is the type of the --keep-path field of a media field of type
// t: its path's string type, in the same lists.
func pathType(t arrow.DataType) arrow.DataType {
	switch lt := t.(type) {
	case *arrow.ListType:
		ef := lt.ElemField()
		ef.Type, ef.Nullable, ef.Metadata = pathType(ef.Type), true, arrow.Metadata{}
		return arrow.ListOfField(ef)
	case *arrow.LargeListType:
		ef := lt.ElemField()
		ef.Type, ef.Nullable, ef.Metadata = pathType(ef.Type), true, arrow.Metadata{}
		return arrow.LargeListOfField(ef)
	}
	_, pi, _ := hfStruct(t)
	return t.(*arrow.StructType).Field(pi).Type
}

// pathArray returns the --keep-path values of a media field: the path of
// each struct (null where the struct or its path is null), in the same
// lists; the caller releases it.
func (r *rewriter) pathArray(arr arrow.Array) arrow.Array {
	if l, ok := arr.(array.ListLike); ok && (arr.DataType().ID() == arrow.LIST || arr.DataType().ID() == arrow.LARGE_LIST) {
		child := r.pathArray(l.ListValues())
		defer child.Release()
		d := arr.Data()
		data := array.NewData(pathType(arr.DataType()), d.Len(), d.Buffers()[:2], []arrow.ArrayData{child.Data()}, d.NullN(), d.Offset())
		defer data.Release()
		return array.MakeFromData(data)
	}
	st := arr.(*array.Struct)
	_, pi, _ := hfStruct(st.DataType())
	return pathColumn(r.mem, st, st.Field(pi))
}

// pathColumn returns the --keep-path values of the media structs st whose
// path field is pa: each path, null where the struct or its path is null.
func pathColumn(mem memory.Allocator, st *array.Struct, pa arrow.Array) arrow.Array {
	b := array.NewBuilder(mem, pa.DataType())
	defer b.Release()
	for i := 0; i < st.Len(); i++ {
		if st.IsNull(i) || pa.IsNull(i) {
			b.AppendNull()
			continue
		}
		appendString(b, stringAt(pa, i))
	}
	return b.NewArray()
}

// elemID identifies one payload slot: its row and, inside lists, the
// element index at each list level.
type elemID struct {
	row int64
	sub []int32
}

// packFunc stores one payload of the field at path and returns its
// reference. data is nil for a Hugging Face value whose bytes are null and
// whose path names a file (srcName).
type packFunc func(path []string, id elemID, data []byte, srcName string, fromPath bool) (string, error)

// rewriter turns the selected parts of a column into references.
type rewriter struct {
	mem  memory.Allocator
	pack packFunc
	o    outOpts
}

// rewrite returns arr, the values of the field at path, with the selected
// parts replaced. live[i] is false for slots that are unreachable (under a
// null parent or outside every list). nullable is the field's nullability.
func (r *rewriter) rewrite(arr arrow.Array, out arrow.DataType, n *selNode, path []string, ids []elemID, live []bool, nullable bool) (arrow.Array, error) {
	if l, ok := arr.(array.ListLike); ok && (arr.DataType().ID() == arrow.LIST || arr.DataType().ID() == arrow.LARGE_LIST) {
		return r.rewriteList(l, out, n, path, ids, live)
	}
	if n.leaf {
		if st, ok := arr.(*array.Struct); ok {
			return r.packStruct(st, path, ids, live, nullable)
		}
		return r.packBinary(arr, path, ids, live, nullable)
	}
	st, ok := arr.(*array.Struct)
	if !ok {
		return nil, fmt.Errorf("expected a struct, got %s", arr.DataType())
	}
	return r.rewriteStruct(st, out.(*arrow.StructType), n, path, ids, live)
}

func (r *rewriter) rewriteList(a array.ListLike, out arrow.DataType, n *selNode, path []string, ids []elemID, live []bool) (arrow.Array, error) {
	child := a.ListValues()
	cids := make([]elemID, child.Len())
	clive := make([]bool, child.Len())
	for i := 0; i < a.Len(); i++ {
		if !live[i] || a.IsNull(i) {
			continue
		}
		s, e := a.ValueOffsets(i)
		for k := s; k < e; k++ {
			cids[k] = elemID{row: ids[i].row, sub: append(slices.Clone(ids[i].sub), int32(k-s))}
			clive[k] = true
		}
	}
	var ef arrow.Field
	switch lt := out.(type) {
	case *arrow.ListType:
		ef = lt.ElemField()
	case *arrow.LargeListType:
		ef = lt.ElemField()
	}
	nc, err := r.rewrite(child, ef.Type, n, path, cids, clive, ef.Nullable)
	if err != nil {
		return nil, err
	}
	defer nc.Release()
	d := a.Data()
	data := array.NewData(out, d.Len(), d.Buffers()[:2], []arrow.ArrayData{nc.Data()}, d.NullN(), d.Offset())
	defer data.Release()
	return array.MakeFromData(data), nil
}

func (r *rewriter) rewriteStruct(a *array.Struct, out *arrow.StructType, n *selNode, path []string, ids []elemID, live []bool) (arrow.Array, error) {
	clive := make([]bool, a.Len())
	for i := range clive {
		clive[i] = live[i] && a.IsValid(i)
	}
	in := a.DataType().(*arrow.StructType)
	children := make([]arrow.ArrayData, 0, out.NumFields())
	var made []arrow.Array
	defer func() {
		for _, m := range made {
			m.Release()
		}
	}()
	for j, f := range in.Fields() {
		c := n.children[f.Name]
		if c == nil {
			children = append(children, a.Field(j).Data())
			continue
		}
		nc, err := r.rewrite(a.Field(j), out.Field(len(children)).Type, c, append(slices.Clone(path), f.Name), ids, clive, f.Nullable)
		if err != nil {
			return nil, err
		}
		made = append(made, nc)
		children = append(children, nc.Data())
		if hasSibling(f.Type, c, r.o) {
			pa := r.pathArray(a.Field(j))
			made = append(made, pa)
			children = append(children, pa.Data())
		}
	}
	d := a.Data()
	var validity *memory.Buffer
	if b := d.Buffers()[0]; b != nil && d.NullN() > 0 {
		if d.Offset() == 0 {
			validity = b
		} else {
			validity = memory.NewResizableBuffer(r.mem)
			validity.Resize(int(bitutil.BytesForBits(int64(d.Len()))))
			bitutil.CopyBitmap(b.Bytes(), d.Offset(), d.Len(), validity.Bytes(), 0)
			defer validity.Release()
		}
	}
	data := array.NewData(out, d.Len(), []*memory.Buffer{validity}, children, d.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// appendAbsent appends the value of a slot that holds no payload: null, or
// "" when the field is not nullable and the slot is unreachable anyway.
func appendAbsent(b *array.StringBuilder, nullable bool) {
	if nullable {
		b.AppendNull()
	} else {
		b.Append("")
	}
}

func (r *rewriter) packBinary(arr arrow.Array, path []string, ids []elemID, live []bool, nullable bool) (arrow.Array, error) {
	if !isBinary(arr.DataType()) {
		return nil, fmt.Errorf("expected a binary field, got %s", arr.DataType())
	}
	b := array.NewStringBuilder(r.mem)
	defer b.Release()
	b.Reserve(arr.Len())
	for i := 0; i < arr.Len(); i++ {
		if arr.IsNull(i) {
			b.AppendNull()
			continue
		}
		if !live[i] {
			appendAbsent(b, nullable)
			continue
		}
		ref, err := r.pack(path, ids[i], binaryAt(arr, i), "", false)
		if err != nil {
			return nil, err
		}
		b.Append(ref)
	}
	return b.NewArray(), nil
}

func (r *rewriter) packStruct(a *array.Struct, path []string, ids []elemID, live []bool, nullable bool) (arrow.Array, error) {
	bi, pi, ok := hfStruct(a.DataType())
	if !ok {
		return nil, fmt.Errorf("expected struct<bytes: binary, path: string>, got %s", a.DataType())
	}
	by, pa := a.Field(bi), a.Field(pi)
	if r.o.keepMedia {
		return r.keepStruct(a, bi, pi, path, ids, live)
	}
	b := array.NewStringBuilder(r.mem)
	defer b.Release()
	b.Reserve(a.Len())
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		if !live[i] {
			appendAbsent(b, nullable)
			continue
		}
		ref, ok, err := r.packMedia(path, ids[i], by.IsValid(i), binaryAt(by, i), pa, i)
		if err != nil {
			return nil, err
		}
		if !ok {
			appendAbsent(b, nullable)
			continue
		}
		b.Append(ref)
	}
	return b.NewArray(), nil
}

// packMedia packs the payload of slot i of a media struct that is not
// null: its bytes val when they are present (hasBytes), else the file its
// path (slot i of pa) names; ok is false when it has neither.
func (r *rewriter) packMedia(path []string, id elemID, hasBytes bool, val []byte, pa arrow.Array, i int) (ref string, ok bool, err error) {
	switch {
	case hasBytes:
		ref, err = r.pack(path, id, val, stringAt(pa, i), false)
	case pa.IsValid(i):
		ref, err = r.pack(path, id, nil, stringAt(pa, i), true)
	default:
		return "", false, nil
	}
	return ref, err == nil, err
}

// keepStruct packs a media struct's payloads and keeps the struct: the
// same type and nulls, bytes null, path the reference (null where the
// value had neither bytes nor a path).
func (r *rewriter) keepStruct(a *array.Struct, bi, pi int, path []string, ids []elemID, live []bool) (arrow.Array, error) {
	st := a.DataType().(*arrow.StructType)
	by, pa := a.Field(bi), a.Field(pi)
	pb := array.NewBuilder(r.mem, pa.DataType())
	defer pb.Release()
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) || !live[i] {
			pb.AppendNull()
			continue
		}
		ref, ok, err := r.packMedia(path, ids[i], by.IsValid(i), binaryAt(by, i), pa, i)
		if err != nil {
			return nil, err
		}
		if !ok {
			pb.AppendNull()
			continue
		}
		appendString(pb, ref)
	}
	return keptMedia(r.mem, st, a, pb), nil
}

// keptMedia builds a kept media struct of type st: bytes null, path the
// references in paths, the validity of src (the struct as read).
func keptMedia(mem memory.Allocator, st *arrow.StructType, src *array.Struct, paths array.Builder) arrow.Array {
	bi, pi, _ := hfStruct(st)
	pa := paths.NewArray()
	defer pa.Release()
	nulls := array.MakeArrayOfNull(mem, st.Field(bi).Type, src.Len())
	defer nulls.Release()
	children := make([]arrow.ArrayData, 2)
	children[bi], children[pi] = nulls.Data(), pa.Data()
	d := src.Data()
	var validity *memory.Buffer
	if b := d.Buffers()[0]; b != nil && d.NullN() > 0 {
		validity = memory.NewResizableBuffer(mem)
		validity.Resize(int(bitutil.BytesForBits(int64(d.Len()))))
		bitutil.CopyBitmap(b.Bytes(), d.Offset(), d.Len(), validity.Bytes(), 0)
		defer validity.Release()
	}
	data := array.NewData(st, d.Len(), []*memory.Buffer{validity}, children, d.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// fieldIDKey is the field metadata key under which arrow-go's parquet
// reader gives every field its parquet field_id, "-1" when the file sets
// none.
const fieldIDKey = "PARQUET:field_id"

// withoutUnsetIDs returns fields without the "PARQUET:field_id" = "-1"
// metadata that reading a parquet file adds to every field (nested ones
// too) that has no field_id: written back, it would give the output field
// metadata the source did not have. Real field ids are kept.
func withoutUnsetIDs(fields []arrow.Field) []arrow.Field {
	out := make([]arrow.Field, len(fields))
	for i, f := range fields {
		if v, ok := f.Metadata.GetValue(fieldIDKey); ok && v == "-1" {
			var ks, vs []string
			for j, k := range f.Metadata.Keys() {
				if k != fieldIDKey {
					ks, vs = append(ks, k), append(vs, f.Metadata.Values()[j])
				}
			}
			f.Metadata = arrow.NewMetadata(ks, vs)
		}
		f.Type = withoutUnsetIDsType(f.Type)
		out[i] = f
	}
	return out
}

func withoutUnsetIDsType(t arrow.DataType) arrow.DataType {
	switch lt := t.(type) {
	case *arrow.ListType, *arrow.LargeListType, *arrow.FixedSizeListType:
		return listOf(t, withoutUnsetIDs([]arrow.Field{lt.(arrow.ListLikeType).ElemField()})[0])
	case *arrow.StructType:
		return arrow.StructOf(withoutUnsetIDs(lt.Fields())...)
	case *arrow.MapType:
		kv := withoutUnsetIDs(lt.Elem().(*arrow.StructType).Fields())
		return mapOf(lt, kv[0], kv[1])
	}
	return t
}
