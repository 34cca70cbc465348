package wds

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
)

var _ convert.TableJoiner = JoinTable

// Joiner names the convert.TableJoiner of each file that the parts of a
// split WebDataset conversion write: JoinTable for the samples table, nil
// for the rest.
func Joiner(rel string) convert.TableJoiner {
	if rel == TableName {
		return JoinTable
	}
	return nil
}

// JoinTable joins the samples tables of the parts of a split conversion
// (a convert.TableJoiner for TableName): the parts' rows, in part order and
// so in shard order, with the references of every field that is not
// inline renumbered by rename. Parts that met different fields get the
// union of the columns (sorted by name, as one run writes them), null where
// a part had no such field. parts[i] is "" for a part without a table.
func JoinTable(ctx context.Context, out string, parts []string, rename func(part int, ref string) (string, error)) error {
	mem := memory.DefaultAllocator
	type partTable struct {
		pf *file.Reader
		fr *pqarrow.FileReader
	}
	tables := make([]*partTable, len(parts))
	defer func() {
		for _, t := range tables {
			if t != nil {
				t.pf.Close()
			}
		}
	}()
	var meta *arrow.Metadata
	var rec TableRecord
	fields := map[string]bool{}
	for i, p := range parts {
		if p == "" {
			continue
		}
		pf, err := file.OpenParquetFile(p, false)
		if err != nil {
			return fmt.Errorf("part %d: %w", i+1, err)
		}
		tables[i] = &partTable{pf: pf}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: tableBatchRows}, mem)
		if err != nil {
			return fmt.Errorf("part %d: %w", i+1, err)
		}
		tables[i].fr = fr
		sc, err := fr.Schema()
		if err != nil {
			return fmt.Errorf("part %d: %w", i+1, err)
		}
		if meta == nil {
			// The table's record, as writeTable stores it: the file's
			// key-value metadata under MetaKey.
			v := pf.MetaData().KeyValueMetadata().FindValue(MetaKey)
			if v == nil {
				return fmt.Errorf("part %d: no %s metadata", i+1, MetaKey)
			}
			if err := json.Unmarshal([]byte(*v), &rec); err != nil {
				return fmt.Errorf("part %d: %s metadata: %w", i+1, MetaKey, err)
			}
			md := arrow.NewMetadata([]string{MetaKey}, []string{*v})
			meta = &md
		}
		for _, f := range sc.Fields() {
			if f.Type.ID() != arrow.STRING {
				return fmt.Errorf("part %d: column %q is %s, not a string column", i+1, f.Name, f.Type)
			}
			if f.Name != ColumnKey && f.Name != ColumnShard {
				fields[f.Name] = true
			}
		}
	}
	if meta == nil {
		return fmt.Errorf("no part has a table")
	}
	outFields := []arrow.Field{
		{Name: ColumnKey, Type: arrow.BinaryTypes.String},
		{Name: ColumnShard, Type: arrow.BinaryTypes.String},
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		outFields = append(outFields, arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	schema := arrow.NewSchema(outFields, meta)

	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(1<<40),
		parquet.WithAllocator(mem),
	)
	fw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return err
	}
	defer fw.Close()
	rows := 0
	for i, t := range tables {
		if t == nil {
			continue
		}
		rr, err := t.fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			return fmt.Errorf("part %d: %w", i+1, err)
		}
		for rr.Next() {
			b := rr.RecordBatch()
			joined, err := joinBatch(b, schema, rec.Inline, func(ref string) (string, error) { return rename(i, ref) })
			if err != nil {
				rr.Release()
				return fmt.Errorf("part %d: %w", i+1, err)
			}
			err = fw.Write(joined)
			joined.Release()
			if err != nil {
				rr.Release()
				return err
			}
			rows += int(b.NumRows())
		}
		err = rr.Err()
		rr.Release()
		if err != nil && err != io.EOF {
			return fmt.Errorf("part %d: %w", i+1, err)
		}
	}
	if rows == 0 {
		// An empty table still has one (empty) row group, as a run writes it.
		empty := array.NewRecordBatch(schema, emptyColumns(schema, mem), 0)
		err := fw.Write(empty)
		empty.Release()
		if err != nil {
			return err
		}
	}
	if err := fw.Close(); err != nil {
		return err
	}
	return f.Commit()
}

// joinBatch maps one part's batch onto the joined schema, renumbering the
// references of reference columns.
func joinBatch(b arrow.RecordBatch, schema *arrow.Schema, inline []string, rename func(string) (string, error)) (arrow.RecordBatch, error) {
	mem := memory.DefaultAllocator
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	in := b.Schema()
	for i, f := range schema.Fields() {
		idx := in.FieldIndices(f.Name)
		if len(idx) == 0 {
			nb := array.NewStringBuilder(mem)
			nb.AppendNulls(int(b.NumRows()))
			cols[i] = nb.NewArray()
			nb.Release()
			continue
		}
		src := b.Column(idx[0]).(*array.String)
		if f.Name == ColumnKey || f.Name == ColumnShard || slices.Contains(inline, f.Name) {
			src.Retain()
			cols[i] = src
			continue
		}
		sb := array.NewStringBuilder(mem)
		sb.Reserve(src.Len())
		for r := 0; r < src.Len(); r++ {
			if src.IsNull(r) {
				sb.AppendNull()
				continue
			}
			ref, err := rename(src.Value(r))
			if err != nil {
				sb.Release()
				return nil, fmt.Errorf("row %d: column %q: %w", r, f.Name, err)
			}
			sb.Append(ref)
		}
		cols[i] = sb.NewArray()
		sb.Release()
	}
	out := array.NewRecordBatch(schema, cols, b.NumRows())
	return out, nil
}

func emptyColumns(schema *arrow.Schema, mem memory.Allocator) []arrow.Array {
	cols := make([]arrow.Array, schema.NumFields())
	for i := range cols {
		sb := array.NewStringBuilder(mem)
		cols[i] = sb.NewArray()
		sb.Release()
	}
	return cols
}
