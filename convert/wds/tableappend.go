package wds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
	"github.com/bpconvert/bpconvert/internal/offheap"
)

// newRowsName is the staged table of an append's new samples, before it is
// joined to the committed table (a temporary name: never committed).
const newRowsName = ".samples-new.parquet.tmp"

// appendTable writes final, the samples table of an append: the committed
// table's rows (read from b), then the new rows of newRows, whose file it
// removes. A field only one of them has is null in the other's rows; the
// columns stay sorted by name after __key__ and __shard__. It returns the
// row count of the whole table. Only the committed table is read of the
// committed output, never a payload.
func appendTable(ctx context.Context, b *convert.Base, newRows, final string, mem memory.Allocator) (int64, error) {
	if mem == nil {
		mem = offheap.NewAllocator()
	}
	old, err := b.Open(ctx, TableName)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("the committed output has no %s to append to (it was converted with --no-table?)", TableName)
	}
	if err != nil {
		return 0, err
	}
	defer old.Close()
	oldR, err := file.NewParquetReader(io.NewSectionReader(old, 0, old.Size()))
	if err != nil {
		return 0, fmt.Errorf("committed %s: %w", TableName, err)
	}
	defer oldR.Close()
	nf, err := os.Open(newRows)
	if err != nil {
		return 0, err
	}
	defer os.Remove(newRows)
	defer nf.Close()
	newR, err := file.NewParquetReader(nf)
	if err != nil {
		return 0, err
	}
	defer newR.Close()
	readers := make([]*pqarrow.FileReader, 2)
	schemas := make([]*arrow.Schema, 2)
	for i, r := range []*file.Reader{oldR, newR} {
		if readers[i], err = pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{BatchSize: tableBatchRows}, mem); err != nil {
			return 0, err
		}
		if schemas[i], err = readers[i].Schema(); err != nil {
			return 0, err
		}
	}
	schema := unionSchema(schemas[1], schemas[0], tableMeta(newR))
	f, err := atomicfile.Create(final, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Abort()
	var popts []parquet.WriterProperty
	popts = append(popts, parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(1<<40), parquet.WithAllocator(mem),
		parquet.WithDictionaryFor(ColumnKey, false))
	inline := inlineFields(schema)
	for _, fd := range schema.Fields()[2:] {
		// Inline fields keep the dictionary the table writer gives them.
		if !slices.Contains(inline, fd.Name) {
			popts = append(popts, parquet.WithDictionaryFor(fd.Name, false))
		}
	}
	fw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{f}, parquet.NewWriterProperties(popts...), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return 0, err
	}
	var n int64
	for _, r := range readers {
		rows, err := copyRows(ctx, r, schema, fw, mem)
		n += rows
		if err != nil {
			fw.Close()
			return 0, err
		}
	}
	if err := fw.Close(); err != nil {
		return 0, err
	}
	return n, f.Commit()
}

// unionSchema is the samples schema holding the fields of both: __key__
// and __shard__, then every field column sorted by name, with the newer
// table's metadata.
func unionSchema(newer, older *arrow.Schema, md arrow.Metadata) *arrow.Schema {
	fields := slices.Clone(newer.Fields()[:2])
	seen := map[string]bool{}
	var rest []arrow.Field
	for _, s := range []*arrow.Schema{newer, older} {
		for _, f := range s.Fields()[2:] {
			if !seen[f.Name] {
				seen[f.Name] = true
				rest = append(rest, f)
			}
		}
	}
	slices.SortFunc(rest, func(a, b arrow.Field) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return arrow.NewSchema(append(fields, rest...), &md)
}

// tableMeta is the samples table's record (MetaKey) of r, as schema
// metadata.
func tableMeta(r *file.Reader) arrow.Metadata {
	v := r.MetaData().KeyValueMetadata().FindValue(MetaKey)
	if v == nil {
		return arrow.Metadata{}
	}
	return arrow.NewMetadata([]string{MetaKey}, []string{*v})
}

// inlineFields are the fields the table's record (MetaKey) lists as
// inline.
func inlineFields(schema *arrow.Schema) []string {
	md := schema.Metadata()
	i := md.FindKey(MetaKey)
	if i < 0 {
		return nil
	}
	var rec TableRecord
	if err := json.Unmarshal([]byte(md.Values()[i]), &rec); err != nil {
		return nil
	}
	return rec.Inline
}

// copyRows writes every row of r into fw under schema, a field r lacks as
// nulls, one row group per batch; it returns the rows copied.
func copyRows(ctx context.Context, r *pqarrow.FileReader, schema *arrow.Schema, fw *pqarrow.FileWriter, mem memory.Allocator) (int64, error) {
	rr, err := r.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	var n int64
	for rr.Next() {
		batch := rr.RecordBatch()
		cols := make([]arrow.Array, len(schema.Fields()))
		for i, f := range schema.Fields() {
			if idx := batch.Schema().FieldIndices(f.Name); len(idx) > 0 {
				cols[i] = batch.Column(idx[0])
				cols[i].Retain()
			} else {
				cols[i] = array.MakeArrayOfNull(mem, f.Type, int(batch.NumRows()))
			}
		}
		out := array.NewRecordBatch(schema, cols, batch.NumRows())
		for _, c := range cols {
			c.Release()
		}
		err := fw.Write(out)
		out.Release()
		if err != nil {
			return n, err
		}
		n += batch.NumRows()
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return n, err
	}
	return n, nil
}
