package parquet

import (
	"encoding/base64"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Kept columns keep their exact type.
//
// arrow-go's parquet reader gives a column the type it infers from the
// parquet schema and applies only part of the Arrow schema that the writer
// stored (ARROW:schema): an extension type whose storage is a string (JSON,
// as pyarrow and Hugging Face's Json() write it) comes back as its parquet
// storage, binary, and a list element loses its field metadata (which is
// where an extension type arrow-go does not know, such as a fixed-shape
// tensor or one of Hugging Face's, is named). Written back as read, such a
// column would change type. So the table's exact schema is worked out here
// from the stored Arrow schema (or, without one, from the parquet logical
// types), and every column read is relabelled to it before it is written:
// the two differ only in names of types whose buffers are the same, so no
// value is copied.

// originSchema returns the Arrow schema a writer stored in the parquet
// key-value metadata kv (ARROW:schema), or nil when there is none or it
// does not decode.
func originSchema(kv metadata.KeyValueMetadata, mem memory.Allocator) *arrow.Schema {
	v := kv.FindValue(arrowSchemaKey)
	if v == nil {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(*v)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(*v); err != nil {
			return nil
		}
	}
	sc, err := deserializeSchema(b, mem)
	if err != nil {
		return nil
	}
	return sc
}

// deserializeSchema decodes an IPC schema message, turning a panic of the
// decoder on malformed bytes into an error.
func deserializeSchema(b []byte, mem memory.Allocator) (sc *arrow.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed Arrow schema: %v", r)
		}
	}()
	return flight.DeserializeSchema(b, mem)
}

// exactFields returns the fields a table's columns are written back with:
// read, the fields as the parquet reader gives them, with the types,
// names, nullability and field metadata of origin (the stored Arrow
// schema, may be nil) wherever the two describe the same buffers, and,
// for a column origin does not describe, JSON leaves (parquet logical
// type JSON) as Arrow's JSON extension type. root is the parquet schema's
// root, whose fields are read's.
func exactFields(read []arrow.Field, origin *arrow.Schema, root *schema.GroupNode) []arrow.Field {
	out := make([]arrow.Field, len(read))
	for i, f := range read {
		if origin != nil && origin.NumFields() == len(read) && origin.Field(i).Name == f.Name {
			out[i] = mergeField(f, origin.Field(i))
			continue
		}
		out[i] = f
		if i < root.NumFields() {
			out[i].Type = jsonLeaves(f.Type, root.Field(i))
		}
	}
	return out
}

// extKeys are the field metadata keys under which an Arrow IPC schema
// names an extension type that the reader does not know.
var extKeys = []string{"ARROW:extension:name", "ARROW:extension:metadata"}

// mergeField returns read with origin's type, name and field metadata
// when its type describes the same buffers; else read's type (with
// origin's where its parts do), without extension metadata that would
// name an extension over another storage. Nullability stays read's: it
// is the parquet repetition, which the output must keep.
func mergeField(read, origin arrow.Field) arrow.Field {
	t, exact := mergeType(read.Type, origin.Type)
	out := arrow.Field{Name: origin.Name, Type: t, Nullable: read.Nullable, Metadata: origin.Metadata}
	if !exact {
		out.Metadata = withoutKeys(out.Metadata, extKeys...)
	}
	if id, ok := read.Metadata.GetValue(fieldIDKey); ok && id != "-1" {
		if _, has := out.Metadata.GetValue(fieldIDKey); !has {
			out.Metadata = arrow.NewMetadata(append(out.Metadata.Keys(), fieldIDKey), append(out.Metadata.Values(), id))
		}
	}
	return out
}

// withoutKeys returns m without keys.
func withoutKeys(m arrow.Metadata, keys ...string) arrow.Metadata {
	var ks, vs []string
	for i, k := range m.Keys() {
		drop := false
		for _, d := range keys {
			drop = drop || k == d
		}
		if !drop {
			ks, vs = append(ks, k), append(vs, m.Values()[i])
		}
	}
	return arrow.NewMetadata(ks, vs)
}

// mergeType returns the type that values read as r take when the writer
// declared them o: o itself (exact) when r's buffers are o's, else r with
// the parts of o that fit.
func mergeType(r, o arrow.DataType) (arrow.DataType, bool) {
	if arrow.TypeEqual(r, o) {
		return o, true
	}
	if ot, ok := o.(arrow.ExtensionType); ok {
		if st, exact := mergeType(r, ot.StorageType()); !exact {
			return st, false
		}
		return o, true
	}
	if rt, ok := r.(arrow.ExtensionType); ok {
		// an extension the reader recovered from the parquet logical type
		// (UUID) that the writer declared as its storage
		return mergeType(rt.StorageType(), o)
	}
	switch ot := o.(type) {
	case *arrow.StructType:
		rt, ok := r.(*arrow.StructType)
		if !ok || rt.NumFields() != ot.NumFields() {
			return r, false
		}
		fields := make([]arrow.Field, ot.NumFields())
		exact := true
		for i := range fields {
			fields[i] = mergeField(rt.Field(i), ot.Field(i))
			exact = exact && sameField(fields[i], ot.Field(i))
		}
		return arrow.StructOf(fields...), exact
	case *arrow.MapType:
		rt, ok := r.(*arrow.MapType)
		if !ok {
			return r, false
		}
		k, v := mergeField(rt.KeyField(), ot.KeyField()), mergeField(rt.ItemField(), ot.ItemField())
		return mapOf(ot, k, v), sameField(k, ot.KeyField()) && sameField(v, ot.ItemField())
	case *arrow.ListType, *arrow.LargeListType, *arrow.FixedSizeListType:
		return mergeList(r, o)
	}
	return mergeLeaf(r, o)
}

// listOf returns a list of t's kind (list, large list, or fixed-size list
// of t's length) whose element is ef.
func listOf(t arrow.DataType, ef arrow.Field) arrow.DataType {
	switch lt := t.(type) {
	case *arrow.LargeListType:
		return arrow.LargeListOfField(ef)
	case *arrow.FixedSizeListType:
		return arrow.FixedSizeListOfField(lt.Len(), ef)
	}
	return arrow.ListOfField(ef)
}

// mapOf returns a map with m's key order whose key and item are k and v.
func mapOf(m *arrow.MapType, k, v arrow.Field) *arrow.MapType {
	out := arrow.MapOfFields(k, v)
	out.KeysSorted = m.KeysSorted
	return out
}

// mergeList merges list types of the same kind.
func mergeList(r, o arrow.DataType) (arrow.DataType, bool) {
	if r.ID() != o.ID() {
		return r, false
	}
	ro, oo := r.(arrow.ListLikeType), o.(arrow.ListLikeType)
	ef := mergeField(ro.ElemField(), oo.ElemField())
	if ot, ok := o.(*arrow.FixedSizeListType); ok && r.(*arrow.FixedSizeListType).Len() != ot.Len() {
		return r, false
	}
	return listOf(o, ef), sameField(ef, oo.ElemField())
}

// mergeLeaf merges types without children: o when its buffers are r's
// (binary and string alike, timestamps of one unit whatever their zone).
func mergeLeaf(r, o arrow.DataType) (arrow.DataType, bool) {
	same := func(a, b arrow.Type) bool {
		return (r.ID() == a || r.ID() == b) && (o.ID() == a || o.ID() == b)
	}
	switch {
	case same(arrow.BINARY, arrow.STRING), same(arrow.LARGE_BINARY, arrow.LARGE_STRING), same(arrow.BINARY_VIEW, arrow.STRING_VIEW):
		return o, true
	case r.ID() == arrow.TIMESTAMP && o.ID() == arrow.TIMESTAMP && r.(*arrow.TimestampType).Unit == o.(*arrow.TimestampType).Unit:
		return o, true
	}
	return r, false
}

// sameField reports whether a merged field is exactly the declared one
// (but for nullability, which the parquet repetition decides).
func sameField(a, b arrow.Field) bool {
	return a.Name == b.Name && a.Metadata.Equal(b.Metadata) && arrow.TypeEqual(a.Type, b.Type, arrow.CheckMetadata())
}

// jsonLeaves returns t, the type read for the parquet node n, with every
// byte-array leaf of logical type JSON as Arrow's JSON extension type
// over utf8, as the parquet writer then annotates it JSON again.
func jsonLeaves(t arrow.DataType, n schema.Node) arrow.DataType {
	switch tt := t.(type) {
	case *arrow.StructType:
		g, ok := n.(*schema.GroupNode)
		if !ok || g.NumFields() != tt.NumFields() {
			return t
		}
		fields := tt.Fields()
		for i := range fields {
			fields[i].Type = jsonLeaves(fields[i].Type, g.Field(i))
		}
		return arrow.StructOf(fields...)
	case *arrow.ListType, *arrow.LargeListType, *arrow.FixedSizeListType:
		en := listElemNode(n)
		if en == nil {
			return t
		}
		ef := tt.(arrow.ListLikeType).ElemField()
		ef.Type = jsonLeaves(ef.Type, en)
		return listOf(t, ef)
	case *arrow.MapType:
		kv := listElemNode(n)
		g, ok := kv.(*schema.GroupNode)
		if !ok || g.NumFields() != 2 {
			return t
		}
		k, v := tt.KeyField(), tt.ItemField()
		k.Type, v.Type = jsonLeaves(k.Type, g.Field(0)), jsonLeaves(v.Type, g.Field(1))
		return mapOf(tt, k, v)
	case *arrow.BinaryType:
		if _, ok := n.LogicalType().(schema.JSONLogicalType); ok {
			jt, err := extensions.NewJSONType(arrow.BinaryTypes.String)
			if err == nil {
				return jt
			}
		}
	}
	return t
}

// listElemNode returns the node of a list's (or a map's) element: the
// single field of its repeated group, or the repeated field itself when
// it is a primitive or a group of several fields (the older two-level
// lists).
func listElemNode(n schema.Node) schema.Node {
	g, ok := n.(*schema.GroupNode)
	if !ok || g.NumFields() != 1 {
		return nil
	}
	rep := g.Field(0)
	if rg, ok := rep.(*schema.GroupNode); ok && rg.NumFields() == 1 && n.LogicalType() != nil {
		if _, isMap := n.LogicalType().(schema.MapLogicalType); !isMap {
			return rg.Field(0)
		}
	}
	return rep
}

// relabel returns the array a with type to, whose buffers are a's (see
// mergeType); the caller releases it.
func relabel(a arrow.Array, to arrow.DataType) arrow.Array {
	d := relabelData(a.Data(), to)
	defer d.Release()
	return array.MakeFromData(d)
}

func relabelData(d arrow.ArrayData, to arrow.DataType) arrow.ArrayData {
	if arrow.TypeEqual(d.DataType(), to, arrow.CheckMetadata()) {
		d.Retain()
		return d
	}
	st := to
	if et, ok := to.(arrow.ExtensionType); ok {
		st = et.StorageType()
	}
	children := d.Children()
	var made []arrow.ArrayData
	switch t := st.(type) {
	case *arrow.StructType:
		for i, c := range children {
			made = append(made, relabelData(c, t.Field(i).Type))
		}
		children = made
	case arrow.ListLikeType:
		made = append(made, relabelData(children[0], t.Elem()))
		children = made
	}
	nd := array.NewData(to, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	for _, c := range made {
		c.Release()
	}
	return nd
}
