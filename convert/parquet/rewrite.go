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

// outType returns the type a field takes after its selected parts become
// reference strings: lists keep their kind and element field, structs their
// other fields, and a selected payload (binary leaf or media struct) becomes
// utf8.
func outType(t arrow.DataType, n *selNode) arrow.DataType {
	switch lt := t.(type) {
	case *arrow.ListType:
		ef := lt.ElemField()
		ef.Type = outType(ef.Type, n)
		return arrow.ListOfField(ef)
	case *arrow.LargeListType:
		ef := lt.ElemField()
		ef.Type = outType(ef.Type, n)
		return arrow.LargeListOfField(ef)
	}
	if n.leaf {
		return arrow.BinaryTypes.String
	}
	st := t.(*arrow.StructType)
	fields := slices.Clone(st.Fields())
	for i, f := range fields {
		if c := n.children[f.Name]; c != nil {
			fields[i].Type = outType(f.Type, c)
		}
	}
	return arrow.StructOf(fields...)
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

// rewriter turns the selected parts of a column into reference strings.
type rewriter struct {
	mem  memory.Allocator
	pack packFunc
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
	children := make([]arrow.ArrayData, in.NumFields())
	var made []arrow.Array
	defer func() {
		for _, m := range made {
			m.Release()
		}
	}()
	for j, f := range in.Fields() {
		c := n.children[f.Name]
		if c == nil {
			children[j] = a.Field(j).Data()
			continue
		}
		nc, err := r.rewrite(a.Field(j), out.Field(j).Type, c, append(slices.Clone(path), f.Name), ids, clive, f.Nullable)
		if err != nil {
			return nil, err
		}
		made = append(made, nc)
		children[j] = nc.Data()
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
		var ref string
		var err error
		switch {
		case by.IsValid(i):
			ref, err = r.pack(path, ids[i], binaryAt(by, i), stringAt(pa, i), false)
		case pa.IsValid(i):
			ref, err = r.pack(path, ids[i], nil, stringAt(pa, i), true)
		default:
			appendAbsent(b, nullable)
			continue
		}
		if err != nil {
			return nil, err
		}
		b.Append(ref)
	}
	return b.NewArray(), nil
}
