package wds

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/offheap"
)

// Column names of the samples table besides the fields.
const (
	ColumnKey   = "__key__"
	ColumnShard = "__shard__"
)

// MetaKey is the parquet key-value metadata key under which the samples
// table records how it was made (JSON, see TableRecord).
const MetaKey = "bpconvert"

// TableRecord is the JSON value stored under MetaKey in samples.parquet.
type TableRecord struct {
	// SourceFormat is "webdataset".
	SourceFormat string `json:"source_format"`
	// PackBase is the directory, relative to the table, that references
	// name.
	PackBase string `json:"pack_base"`
	// Inline lists the fields stored inline rather than as references.
	Inline []string `json:"inline"`
	// ShardPrefix tells whether keys carry their shard's name.
	ShardPrefix bool `json:"shard_prefix"`
}

// Batch limits for the samples table: a row group is written when either
// is reached, which bounds the memory the table needs (with references of
// about 40 bytes, 16Ki rows are about 1 MB of values; the heap sees
// several times that in garbage while the writer encodes them).
const (
	tableBatchRows  = 16 << 10
	tableBatchBytes = 8 << 20
)

// tableSpec is what writeTable needs besides the spooled rows.
type tableSpec struct {
	fields []string // by field id, in order of first appearance
	shards []string // shard names by index
	record TableRecord
	// resolve returns the table value of a cell: a reference for cellRef,
	// the content for cellInlineKey.
	resolve func(c cell) (string, error)
	mem     memory.Allocator
}

// writeTable writes the spooled samples to final through a temporary file
// in the same directory, synced and renamed, and returns the row count.
// Columns: __key__ and __shard__ (required strings), then one nullable
// string column per field, sorted by name.
func writeTable(final string, rows *spoolReader, spec tableSpec) (int64, error) {
	mem := spec.mem
	if mem == nil {
		// The batch's columns and the encoders' buffers leave the heap,
		// so they are returned as each row group is written instead of
		// piling up until the collector runs.
		mem = offheap.NewAllocator()
	}
	order := make([]int, len(spec.fields)) // column position -> field id
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if spec.fields[a] < spec.fields[b] {
			return -1
		}
		if spec.fields[a] > spec.fields[b] {
			return 1
		}
		return 0
	})
	colOf := make([]int, len(spec.fields)) // field id -> column position
	fields := []arrow.Field{
		{Name: ColumnKey, Type: arrow.BinaryTypes.String},
		{Name: ColumnShard, Type: arrow.BinaryTypes.String},
	}
	for pos, id := range order {
		colOf[id] = pos
		fields = append(fields, arrow.Field{Name: spec.fields[id], Type: arrow.BinaryTypes.String, Nullable: true})
	}
	rec, err := json.Marshal(spec.record)
	if err != nil {
		return 0, err
	}
	meta := arrow.NewMetadata([]string{MetaKey}, []string{string(rec)})
	schema := arrow.NewSchema(fields, &meta)

	f, err := atomicfile.Create(final, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Abort()
	popts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Snappy), // read everywhere; zstd's encoder would need ~20 MB
		parquet.WithMaxRowGroupLength(1 << 40),          // row groups are the batches below
		parquet.WithAllocator(mem),
		// Keys and references are distinct in every row: a dictionary
		// of them would hold a row group's values twice, in a hash table
		// on the heap, only to be given up at its size limit.
		parquet.WithDictionaryFor(ColumnKey, false),
	}
	for _, f := range spec.fields {
		if !slices.Contains(spec.record.Inline, f) {
			popts = append(popts, parquet.WithDictionaryFor(f, false))
		}
	}
	props := parquet.NewWriterProperties(popts...)
	// The struct hides f's Close: the writer would close the file before
	// it could be synced.
	fw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return 0, err
	}
	b := newTableBatch(mem, schema, len(spec.fields))
	defer b.release()
	var n int64
	var r row
	// vals holds a row's values by column position, has whether the
	// row has one.
	vals := make([]string, len(spec.fields))
	has := make([]bool, len(spec.fields))
	for {
		err := rows.next(&r)
		if err == io.EOF {
			break
		}
		if err != nil {
			fw.Close()
			return 0, err
		}
		clear(has)
		for i := range r.cells {
			c := &r.cells[i]
			v := c.value
			if c.kind != cellInline {
				if v, err = spec.resolve(*c); err != nil {
					fw.Close()
					return 0, err
				}
			}
			vals[colOf[c.field]], has[colOf[c.field]] = v, true
		}
		b.append(r.key, spec.shards[r.shard], vals, has)
		n++
		if b.rows >= tableBatchRows || b.bytes >= tableBatchBytes {
			if err := b.flush(fw); err != nil {
				fw.Close()
				return 0, err
			}
		}
	}
	if b.rows > 0 || n == 0 {
		if err := b.flush(fw); err != nil {
			fw.Close()
			return 0, err
		}
	}
	if err := fw.Close(); err != nil {
		return 0, err
	}
	return n, f.Commit()
}

// tableBatch builds one record batch of the samples table.
type tableBatch struct {
	mem    memory.Allocator
	schema *arrow.Schema
	key    *array.StringBuilder
	shard  *array.StringBuilder
	cols   []*array.StringBuilder
	rows   int64
	bytes  int64
}

func newTableBatch(mem memory.Allocator, schema *arrow.Schema, nfields int) *tableBatch {
	b := &tableBatch{mem: mem, schema: schema,
		key: array.NewStringBuilder(mem), shard: array.NewStringBuilder(mem)}
	for range nfields {
		b.cols = append(b.cols, array.NewStringBuilder(mem))
	}
	return b
}

// append adds a row; vals holds one value per column position, where has
// is set (null where it is not).
func (b *tableBatch) append(key, shard string, vals []string, has []bool) {
	b.key.Append(key)
	b.shard.Append(shard)
	b.bytes += int64(len(key) + len(shard))
	for i, v := range vals {
		if !has[i] {
			b.cols[i].AppendNull()
			continue
		}
		b.cols[i].Append(v)
		b.bytes += int64(len(v))
	}
	b.rows++
}

// flush writes the batch as one row group and empties it.
func (b *tableBatch) flush(fw *pqarrow.FileWriter) error {
	arrs := make([]arrow.Array, 0, 2+len(b.cols))
	arrs = append(arrs, b.key.NewArray(), b.shard.NewArray())
	for _, c := range b.cols {
		arrs = append(arrs, c.NewArray())
	}
	rec := array.NewRecordBatch(b.schema, arrs, b.rows)
	for _, a := range arrs {
		a.Release()
	}
	defer rec.Release()
	b.rows, b.bytes = 0, 0
	if err := fw.Write(rec); err != nil {
		return fmt.Errorf("samples table: %w", err)
	}
	return nil
}

func (b *tableBatch) release() {
	b.key.Release()
	b.shard.Release()
	for _, c := range b.cols {
		c.Release()
	}
}
