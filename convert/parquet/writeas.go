package parquet

import (
	"errors"
	"reflect"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Kept columns keep their parquet schema too.
//
// arrow-go derives the parquet schema of the output from its Arrow schema,
// and annotates some leaves differently from the writer of the source:
// every integer gets an Int logical type (pyarrow annotates only those
// Arrow's int32 and int64 cannot stand for), decimals of precision 18 or
// less become INT32/INT64 or FIXED_LEN_BYTE_ARRAY as one option says. So
// the parquet schema arrow-go would write is compared with the source's,
// column by column, and a leaf whose annotation would change is written
// as a pinnedType, which gives arrow-go the source's annotation; the Arrow
// schema stored in the output still names the exact types.

// pinnedType is a leaf type written with the parquet logical type of its
// source column: arrow-go writes an extension type as its storage,
// annotated as the extension says (pqarrow.ExtensionCustomParquetType).
// It is never stored: only the writer sees it.
type pinnedType struct {
	arrow.ExtensionBase
	logical schema.LogicalType
}

var _ pqarrow.ExtensionCustomParquetType = (*pinnedType)(nil)

// pinnedArray is the array of a pinnedType.
type pinnedArray struct{ array.ExtensionArrayBase }

func (p *pinnedType) ArrayType() reflect.Type { return reflect.TypeOf(pinnedArray{}) }

func (p *pinnedType) ExtensionName() string { return "bpconvert.parquet_leaf" }

func (p *pinnedType) Serialize() string { return p.logical.String() }

func (p *pinnedType) Deserialize(arrow.DataType, string) (arrow.ExtensionType, error) {
	return nil, errors.New("parquet: a pinned leaf type is never stored")
}

func (p *pinnedType) ExtensionEquals(o arrow.ExtensionType) bool {
	op, ok := o.(*pinnedType)
	return ok && arrow.TypeEqual(p.Storage, op.Storage) && p.logical.Equals(op.logical)
}

// ParquetLogicalType is the source column's logical type.
func (p *pinnedType) ParquetLogicalType() schema.LogicalType { return p.logical }

// decimalsAsIntegers reports whether the source stores its decimals of
// precision 18 or less as INT32/INT64 (true, also when it has none) or
// as FIXED_LEN_BYTE_ARRAY, as pyarrow does by default.
func decimalsAsIntegers(sd *schema.Schema) bool {
	for i := 0; i < sd.NumColumns(); i++ {
		c := sd.Column(i)
		if d, ok := c.LogicalType().(schema.DecimalLogicalType); ok && d.Precision() <= 18 && c.PhysicalType() == pq.Types.FixedLenByteArray {
			return false
		}
	}
	return true
}

// writerFields returns fields (the output's exact fields) with each kept
// leaf whose parquet annotation would differ from the source's (src) as a
// pinnedType, and every field in the shape the writer gets right
// (writerType). kept reports whether a top-level field is kept whole.
func writerFields(fields []arrow.Field, src *schema.Schema, kept func(string) bool, props *pq.WriterProperties) []arrow.Field {
	out, err := pqarrow.ToParquet(arrow.NewSchema(fields, nil), props, pqarrow.DefaultWriterProps())
	if err != nil {
		return fields // the writer reports it
	}
	srcLeaves := map[string]schema.LogicalType{}
	for i := 0; i < src.NumColumns(); i++ {
		srcLeaves[src.Column(i).ColumnPath().String()] = src.Column(i).LogicalType()
	}
	wf := make([]arrow.Field, len(fields))
	copy(wf, fields)
	k := 0 // the output leaf
	for i, f := range fields {
		n := leafCount(f.Type)
		if !kept(f.Name) {
			k += n
			continue
		}
		pins := make([]schema.LogicalType, n)
		any := false
		for j := range n {
			c := out.Column(k + j)
			want, ok := srcLeaves[c.ColumnPath().String()]
			if ok && !want.Equals(c.LogicalType()) && physicalFits(want, c) {
				pins[j], any = want, true
			}
		}
		k += n
		if any {
			next := 0
			wf[i].Type = pinLeaves(f.Type, pins, &next)
		}
	}
	for i := range wf {
		wf[i].Type = writerType(wf[i].Type, false, props.StoreDecimalAsInteger())
	}
	return wf
}

// physicalFits reports whether logical type lt may annotate column c's
// physical type (a pin never changes how values are stored).
func physicalFits(lt schema.LogicalType, c *schema.Column) bool {
	return lt.IsApplicable(c.PhysicalType(), int32(c.TypeLength()))
}

// leafCount is the number of parquet leaves of a field of type t.
func leafCount(t arrow.DataType) int {
	switch tt := t.(type) {
	case *arrow.StructType:
		n := 0
		for _, f := range tt.Fields() {
			n += leafCount(f.Type)
		}
		return n
	case *arrow.MapType:
		return leafCount(tt.KeyType()) + leafCount(tt.ItemType())
	case arrow.ListLikeType:
		return leafCount(tt.Elem())
	}
	return 1
}

// pinLeaves returns t with leaf *next and those after it pinned to the
// logical types in pins (nil: left as is).
func pinLeaves(t arrow.DataType, pins []schema.LogicalType, next *int) arrow.DataType {
	switch tt := t.(type) {
	case *arrow.StructType:
		fields := tt.Fields()
		for i := range fields {
			fields[i].Type = pinLeaves(fields[i].Type, pins, next)
		}
		return arrow.StructOf(fields...)
	case *arrow.MapType:
		k, v := tt.KeyField(), tt.ItemField()
		k.Type = pinLeaves(k.Type, pins, next)
		v.Type = pinLeaves(v.Type, pins, next)
		return mapOf(tt, k, v)
	case *arrow.ListType, *arrow.LargeListType, *arrow.FixedSizeListType:
		ef := tt.(arrow.ListLikeType).ElemField()
		ef.Type = pinLeaves(ef.Type, pins, next)
		return listOf(t, ef)
	}
	lt := pins[*next]
	*next++
	if lt == nil {
		return t
	}
	st := t
	if et, ok := t.(arrow.ExtensionType); ok {
		st = et.StorageType()
	}
	return &pinnedType{ExtensionBase: arrow.ExtensionBase{Storage: st}, logical: lt}
}

// sourceLeafProps returns, per column path of the source, whether its
// chunks have an offset index (in any row group) and whether it is a
// repeated leaf some page of which holds nulls only (as its
// column index says, or its chunk's statistics without one).
func sourceLeafProps(pf *file.Reader) (indexed, allNull map[string]bool) {
	md := pf.MetaData()
	indexed, allNull = map[string]bool{}, map[string]bool{}
	var pir *metadata.PageIndexReader
	for r := 0; r < md.NumRowGroups(); r++ {
		rg := md.RowGroup(r)
		for i := 0; i < rg.NumColumns(); i++ {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				continue
			}
			p := cc.PathInSchema().String()
			if cc.GetOffsetIndexLocation() != nil {
				indexed[p] = true
			}
			col := md.Schema.Column(i)
			if allNull[p] || col.MaxRepetitionLevel() == 0 {
				continue
			}
			if st, err := cc.Statistics(); err == nil && st != nil && !st.HasMinMax() {
				allNull[p] = true
				continue
			}
			if cc.GetColumnIndexLocation() == nil {
				continue
			}
			if pir == nil {
				pir = pf.GetPageIndexReader()
			}
			if rr, err := pir.RowGroup(r); err == nil && rr != nil {
				if ci, err := rr.GetColumnIndex(i); err == nil && ci != nil && slices.Contains(ci.GetNullPages(), true) {
					allNull[p] = true
				}
			}
		}
	}
	return indexed, allNull
}

// forWriter returns rec with its columns relabelled to the writer's
// schema ws (pinned leaves); the caller releases it.
func forWriter(rec arrow.RecordBatch, ws *arrow.Schema, mem memory.Allocator) arrow.RecordBatch {
	cols := make([]arrow.Array, rec.NumCols())
	var made []arrow.Array
	for i := range cols {
		cols[i] = rec.Column(i)
		if t := ws.Field(i).Type; !arrow.TypeEqual(cols[i].DataType(), t) {
			d := toWriterData(cols[i].Data(), t, nil, mem)
			cols[i] = array.MakeFromData(d)
			d.Release()
			made = append(made, cols[i])
		}
	}
	out := array.NewRecordBatch(ws, cols, rec.NumRows())
	releaseAll(made)
	return out
}
