package parquet

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/pqread"
	"github.com/bpconvert/bpconvert/packcore"
)

var _ convert.TableJoiner = JoinTable

// Joiner names the convert.TableJoiner of each file that the parts of a
// split parquet conversion write: JoinTable for parquet tables,
// JoinArrowTable for the Arrow data files of a save_to_disk dataset, nil
// for the rest (copied from part 1).
func Joiner(rel string) convert.TableJoiner {
	switch {
	case strings.HasSuffix(rel, ".parquet"):
		return JoinTable
	case strings.HasSuffix(rel, ".arrow"):
		return JoinArrowTable
	}
	return nil
}

// JoinTable is the convert.TableJoiner of a table that one part of a split
// conversion wrote (each table belongs to one part): it writes the table
// again with every reference renumbered by rename, row group by row group,
// with the same schema, metadata and column codecs. Strings that are not
// references are kept as they are; a table that holds no reference is
// linked unchanged.
func JoinTable(ctx context.Context, out string, parts []string, rename func(part int, ref string) (string, error)) (err error) {
	defer recovered(out, &err)
	part, path := -1, ""
	for i, p := range parts {
		if p == "" {
			continue
		}
		if part >= 0 {
			return fmt.Errorf("written by part %d and by part %d", part+1, i+1)
		}
		part, path = i, p
	}
	if part < 0 {
		return fmt.Errorf("no part wrote it")
	}
	mem := memory.DefaultAllocator
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return err
	}
	defer pf.Close()
	fr, read, err := pqread.Open(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return err
	}
	md := pf.MetaData()
	// The columns keep their exact types (see exact.go), which the part
	// stored in its Arrow schema. The file's key-value metadata (such as
	// "huggingface" and the converter's record) is written again, with a
	// fresh Arrow schema where the part stored one.
	kv := md.KeyValueMetadata()
	exact := withoutUnsetIDs(exactFields(read.Fields(), originSchema(kv, mem), md.Schema.Root()))
	var keys, vals []string
	for i, k := range kv.Keys() {
		if k != arrowSchemaKey {
			keys, vals = append(keys, k), append(vals, kv.Values()[i])
		}
	}
	if kv.FindValue(arrowSchemaKey) != nil {
		// The stored Arrow schema carries the file's metadata too: readers
		// that find one (pyarrow, datasets) take the metadata from it.
		own := arrow.NewMetadata(keys, vals)
		plain := arrow.NewSchema(exact, &own)
		keys, vals = append(keys, arrowSchemaKey), append(vals, base64.StdEncoding.EncodeToString(flight.SerializeSchema(plain, mem)))
	}
	merged := arrow.NewMetadata(keys, vals)
	schema := arrow.NewSchema(exact, &merged)
	props := []pq.WriterProperty{
		pq.WithAllocator(mem),
		pq.WithStoreDecimalAsInteger(decimalsAsIntegers(md.Schema)),
		pq.WithMaxRowGroupLength(math.MaxInt32),
		pq.WithRootName(md.Schema.Root().Name()),
		pq.WithPageIndexEnabled(hasPageIndex(md)),
	}
	if md.NumRowGroups() > 0 {
		rg := md.RowGroup(0)
		for i := 0; i < md.Schema.NumColumns(); i++ {
			if cc, err := rg.ColumnChunk(i); err == nil {
				props = append(props, pq.WithCompressionFor(md.Schema.Column(i).ColumnPath().String(), cc.Compression()))
			}
		}
	} else {
		props = append(props, pq.WithCompression(compress.Codecs.Snappy))
	}
	all := func(string) bool { return true }
	ws := arrow.NewSchema(writerFields(exact, md.Schema, all, pq.NewWriterProperties(props...)), &merged)
	aprops := []pqarrow.WriterOption{pqarrow.WithAllocator(mem)}
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	fw, err := pqarrow.NewFileWriter(ws, struct{ io.Writer }{f}, pq.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		return err
	}
	defer fw.Close()
	changed := false
	renameRef := func(s string) (string, bool, error) {
		if _, _, err := packcore.ParseRef(s); err != nil {
			return s, false, nil
		}
		r, err := rename(part, s)
		changed = changed || r != s
		return r, r != s, err
	}
	leaves := make([]int, md.Schema.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		tbl, err := fr.ReadRowGroups(ctx, leaves, []int{rg})
		if err != nil {
			return fmt.Errorf("row group %d: %w", rg, err)
		}
		cols := make([]arrow.Array, tbl.NumCols())
		for c := 0; c < int(tbl.NumCols()); c++ {
			col := tbl.Column(c)
			var chunks []arrow.Array
			for _, ch := range col.Data().Chunks() {
				ex := relabel(ch, exact[c].Type)
				nch, err := renameRefs(ex, renameRef, mem)
				ex.Release()
				if err != nil {
					tbl.Release()
					return fmt.Errorf("row group %d: column %q: %w", rg, col.Name(), err)
				}
				chunks = append(chunks, nch)
			}
			joined, err := concatChunks(chunks, exact[c].Type, mem)
			if err != nil {
				tbl.Release()
				return fmt.Errorf("row group %d: column %q: %w", rg, col.Name(), err)
			}
			cols[c] = joined
		}
		rows := tbl.NumRows()
		tbl.Release()
		rec := array.NewRecordBatch(schema, cols, rows)
		releaseAll(cols)
		wrec := forWriter(rec, ws, mem)
		rec.Release()
		err = fw.NewBufferedRowGroupChecked()
		if err == nil {
			err = fw.WriteBuffered(wrec)
		}
		wrec.Release()
		if err != nil {
			return err
		}
	}
	if err := fw.Close(); err != nil {
		return err
	}
	if hasPageIndex(md) {
		if err := fixColumnIndexes(f.File, mem); err != nil {
			return fmt.Errorf("column indexes: %w", err)
		}
	}
	if !changed {
		// A table without references (copied unchanged by the converter)
		// stays byte for byte what the part wrote.
		f.Abort()
		return os.Link(path, out)
	}
	return f.Commit()
}

// concatChunks returns the chunks (released) of one column as one array
// of type t.
func concatChunks(chunks []arrow.Array, t arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	defer releaseAll(chunks)
	if len(chunks) == 1 {
		chunks[0].Retain()
		return chunks[0], nil
	}
	if len(chunks) == 0 {
		return array.MakeArrayOfNull(mem, t, 0), nil
	}
	return array.Concatenate(chunks, mem)
}

// renameRefs returns arr with every string value (in string columns and
// inside structs and lists) passed through f; arr itself (retained) when f
// changes nothing.
func renameRefs(arr arrow.Array, f func(string) (string, bool, error), mem memory.Allocator) (arrow.Array, error) {
	switch a := arr.(type) {
	case *array.String:
		return renameStrings(a, a.Len(), a.IsNull, a.Value, array.NewStringBuilder(mem), f)
	case *array.LargeString:
		return renameStrings(a, a.Len(), a.IsNull, a.Value, array.NewLargeStringBuilder(mem), f)
	case *array.Struct:
		if a.Data().Offset() != 0 {
			break // children are sliced; never the case for arrays read from a file
		}
		changed := false
		children := make([]arrow.ArrayData, a.NumField())
		var keep []arrow.Array
		defer func() {
			for _, k := range keep {
				k.Release()
			}
		}()
		for i := 0; i < a.NumField(); i++ {
			nc, err := renameRefs(a.Field(i), f, mem)
			if err != nil {
				return nil, err
			}
			keep = append(keep, nc)
			changed = changed || nc != a.Field(i)
			children[i] = nc.Data()
		}
		if !changed {
			break
		}
		d := a.Data()
		nd := array.NewData(d.DataType(), d.Len(), d.Buffers(), children, d.NullN(), 0)
		defer nd.Release()
		return array.MakeFromData(nd), nil
	case array.ListLike:
		if a.Data().Offset() != 0 {
			break
		}
		if _, ok := a.(*array.Map); ok {
			break
		}
		if _, ok := a.(*array.FixedSizeList); ok {
			break
		}
		vals := a.ListValues()
		nv, err := renameRefs(vals, f, mem)
		if err != nil {
			return nil, err
		}
		defer nv.Release()
		if nv == vals {
			break
		}
		d := a.Data()
		nd := array.NewData(d.DataType(), d.Len(), d.Buffers(), []arrow.ArrayData{nv.Data()}, d.NullN(), 0)
		defer nd.Release()
		return array.MakeFromData(nd), nil
	}
	arr.Retain()
	return arr, nil
}

// stringBuilder is what renameStrings needs of a (large) string builder.
type stringBuilder interface {
	array.Builder
	Append(string)
}

func renameStrings(a arrow.Array, n int, isNull func(int) bool, value func(int) string, b stringBuilder, f func(string) (string, bool, error)) (arrow.Array, error) {
	defer b.Release()
	changed := false
	b.Reserve(n)
	for i := 0; i < n; i++ {
		if isNull(i) {
			b.AppendNull()
			continue
		}
		v, ch, err := f(value(i))
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		changed = changed || ch
		b.Append(v)
	}
	if !changed {
		a.Retain()
		return a, nil
	}
	return b.NewArray(), nil
}

var _ convert.TableJoiner = JoinArrowTable

// JoinArrowTable is JoinTable for an Arrow data file of a save_to_disk
// dataset that one part wrote: it is written again, as an Arrow IPC
// stream, batch by batch, with every reference renumbered by rename.
func JoinArrowTable(ctx context.Context, out string, parts []string, rename func(part int, ref string) (string, error)) (err error) {
	defer recovered(out, &err)
	part, src := -1, ""
	for i, p := range parts {
		if p == "" {
			continue
		}
		if part >= 0 {
			return fmt.Errorf("written by part %d and by part %d", part+1, i+1)
		}
		part, src = i, p
	}
	if part < 0 {
		return fmt.Errorf("no part wrote it")
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	mem := memory.DefaultAllocator
	r, err := openArrow(src, src, st.Size(), mem)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := ipc.NewWriter(noCloser{f}, ipc.WithSchema(r.Schema()), ipc.WithAllocator(mem))
	defer w.Close()
	renameRef := func(s string) (string, bool, error) {
		if _, _, err := packcore.ParseRef(s); err != nil {
			return s, false, nil
		}
		n, err := rename(part, s)
		return n, n != s, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := r.Next()
		if err != nil {
			return err
		}
		if rec == nil {
			break
		}
		cols := make([]arrow.Array, rec.NumCols())
		for c := range cols {
			if cols[c], err = renameRefs(rec.Column(c), renameRef, mem); err != nil {
				rec.Release()
				releaseAll(cols[:c])
				return fmt.Errorf("record batch column %q: %w", rec.ColumnName(c), err)
			}
		}
		nr := array.NewRecordBatch(r.Schema(), cols, rec.NumRows())
		rec.Release()
		releaseAll(cols)
		err = w.Write(nr)
		nr.Release()
		if err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Commit()
}
