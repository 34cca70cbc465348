package dsverify

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/bpconvert/bpconvert/internal/pqread"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
)

// metaKey is the key under which converters record what they did, in
// parquet key-value metadata and Lance schema metadata.
const metaKey = "bpconvert"

// batchRows is the number of rows read per batch.
const batchRows = 8192

// cellFunc receives one string cell: its top-level row, the dotted column
// path and the value.
type cellFunc func(row int64, column, value string)

// table reads one table and checks every reference it holds.
func (v *Check) table(t tableFile) error {
	tr := Table{Path: t.rel, Format: t.format}
	check := func(row int64, column, value string) {
		if w := v.wds; w != nil && w.rel == t.rel {
			switch {
			case column == "__key__":
				w.rowKeys[row] = value
				return
			case w.inline[column]:
				return // text stored inline, not a reference
			}
		}
		if !packcore.IsRef(value) {
			return
		}
		tr.Refs++
		if reason := v.resolve(value); reason != "" {
			v.problem(Problem{Table: t.rel, Row: row, Column: column, Ref: value, Reason: reason})
			return
		}
		if v.wds != nil && v.wds.rel == t.rel {
			v.wds.checkRow(v, t.rel, row, column, value)
		}
	}
	p := v.out.file(t.rel)
	record := func(rec string) { v.records[t.rel] = tableRecord{format: t.format, text: rec} }
	var err error
	switch t.format {
	case "parquet":
		tr.Rows, err = v.parquetTable(p, t.rel, func(rec string) {
			record(rec)
			if strings.HasSuffix(t.rel, "samples.parquet") {
				if w, err := newWDSTable(t.rel, rec); err == nil {
					v.wds = w
				}
			}
		}, check)
	case "arrow":
		tr.Rows, err = v.arrowTable(p, record, check)
	case "lance":
		tr.Rows, err = v.lanceTable(p, func(rec string) {
			if lanceRecorded(rec) {
				record(rec)
			} else {
				v.plainLance = append(v.plainLance, t.rel)
			}
		}, check)
	case "json":
		tr.Rows, err = v.jsonTable(p, check)
	case "jsonl":
		tr.Rows, err = v.jsonlTable(p, check)
	}
	if err != nil {
		if v.ctx.Err() != nil {
			return v.ctx.Err()
		}
		v.problem(Problem{Table: t.rel, Row: -1, Reason: fmt.Sprintf("unreadable: %v", err)})
	}
	v.rep.Tables = append(v.rep.Tables, tr)
	v.rep.Refs += tr.Refs
	return nil
}

// parquetTable reads the string columns of a parquet file, after handing
// its bpconvert record, if it has one, to record (when set: the reference
// check's pass).
func (v *Check) parquetTable(p treeFile, rel string, record func(string), fn cellFunc) (int64, error) {
	pf, err := v.openParquet(p)
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	if kv := pf.MetaData().KeyValueMetadata(); kv != nil && record != nil {
		if rec := kv.FindValue(metaKey); rec != nil {
			record(*rec)
		}
	}
	sd := pf.MetaData().Schema
	var cols []int
	for i := 0; i < sd.NumColumns(); i++ {
		c := sd.Column(i)
		if c.PhysicalType() != parquet.Types.ByteArray {
			continue
		}
		if _, ok := c.LogicalType().(*schema.StringLogicalType); ok || c.ConvertedType() == schema.ConvertedTypes.UTF8 {
			cols = append(cols, i)
		}
	}
	rows := pf.NumRows()
	if len(cols) == 0 {
		return rows, nil
	}
	fr, sc, err := pqread.Open(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, memory.DefaultAllocator)
	if err != nil {
		return rows, err
	}
	rr, err := fr.GetRecordReader(v.ctx, wholeFixedLists(sd, sc, cols), nil)
	if err != nil {
		return rows, err
	}
	defer rr.Release()
	var base int64
	for rr.Next() {
		rec := rr.RecordBatch()
		if v.wds != nil && v.wds.rel == rel && record != nil {
			v.wds.rowKeys = map[int64]string{} // rows of this batch
		}
		visitRecord(rec, base, fn)
		base += rec.NumRows()
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return rows, err
	}
	return rows, nil
}

// wholeFixedLists returns the leaves cols of the parquet schema sd with
// every leaf of each top-level column that holds a fixed-size list (Arrow
// schema sc) and one of cols: arrow-go reads a part of a struct under a
// fixed-size list with a type of its own in each batch, which then do not
// concatenate, and the whole struct right.
func wholeFixedLists(sd *schema.Schema, sc *arrow.Schema, cols []int) []int {
	whole := map[string]bool{}
	for _, c := range cols {
		root := sd.ColumnRoot(c).Name()
		if i := sc.FieldIndices(root); len(i) == 1 && hasFixedList(sc.Field(i[0]).Type) {
			whole[root] = true
		}
	}
	if len(whole) == 0 {
		return cols
	}
	var out []int
	for i := 0; i < sd.NumColumns(); i++ {
		if whole[sd.ColumnRoot(i).Name()] || slices.Contains(cols, i) {
			out = append(out, i)
		}
	}
	return out
}

// hasFixedList reports whether t is or holds a fixed-size list.
func hasFixedList(t arrow.DataType) bool {
	switch tt := t.(type) {
	case arrow.ExtensionType:
		return hasFixedList(tt.StorageType())
	case *arrow.FixedSizeListType:
		return true
	case arrow.NestedType:
		for _, f := range tt.Fields() {
			if hasFixedList(f.Type) {
				return true
			}
		}
	}
	return false
}

// arrowTable reads an Arrow IPC file (a save_to_disk data file that
// convert-parquet wrote again, stream or file format), after handing its
// schema metadata's bpconvert record, if it has one, to record (when set).
func (v *Check) arrowTable(p treeFile, record func(string), fn cellFunc) (int64, error) {
	c, err := v.openArrowColumn(p, "")
	if err != nil {
		return 0, err
	}
	defer c.close()
	if rec, ok := c.schema.Metadata().GetValue(metaKey); ok && record != nil {
		record(rec)
	}
	var base int64
	for {
		rec, ok := c.batch()
		if !ok {
			break
		}
		visitRecord(rec, base, fn)
		base += rec.NumRows()
	}
	return base, c.Err()
}

// lanceTable scans the string columns of the Lance dataset at p (in object
// storage, read with ranged requests), deleted rows excluded, rows numbered
// in scan order, after handing its schema metadata's bpconvert record ("" for
// none) to record (when set).
func (v *Check) lanceTable(p treeFile, record func(string), fn cellFunc) (int64, error) {
	ds, err := openLance(v.ctx, v.out, p.rel, lancefmt.OpenOptions{})
	if err != nil {
		return 0, err
	}
	sc := ds.Schema()
	if record != nil {
		record(string(sc.Metadata[metaKey]))
	}
	var cols []string
	for _, f := range sc.Fields {
		if f.IsBlob() || sc.Unsupported[f.Name] != nil {
			continue
		}
		if i := sc.Arrow.FieldIndices(f.Name); len(i) == 1 && hasString(sc.Arrow.Field(i[0]).Type) {
			cols = append(cols, f.Name)
		}
	}
	if len(cols) == 0 {
		return int64(ds.NumRows()), nil
	}
	s, err := ds.Scan(v.ctx, lancefmt.ScanOptions{Columns: cols, BatchSize: batchRows})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	var base int64
	for s.Next() {
		rec := s.RecordBatch()
		visitRecord(rec, base, fn)
		base += rec.NumRows()
	}
	return base, s.Err()
}

// hasString reports whether a type holds strings at any depth.
func hasString(t arrow.DataType) bool {
	switch tt := t.(type) {
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return true
	case arrow.NestedType:
		for _, f := range tt.Fields() {
			if hasString(f.Type) {
				return true
			}
		}
	}
	return false
}

// visitRecord calls fn for every non-null string of a record batch, at any
// depth: struct fields as dotted names, list elements under the list's name.
func visitRecord(rec arrow.RecordBatch, base int64, fn cellFunc) {
	for ci, f := range rec.Schema().Fields() {
		col := rec.Column(ci)
		for i := 0; i < col.Len(); i++ {
			visitValue(col, i, f.Name, base+int64(i), fn)
		}
	}
}

func visitValue(a arrow.Array, i int, name string, row int64, fn cellFunc) {
	if a.IsNull(i) {
		return
	}
	switch arr := a.(type) {
	case *array.String:
		fn(row, name, arr.Value(i))
	case *array.LargeString:
		fn(row, name, arr.Value(i))
	case *array.StringView:
		fn(row, name, arr.Value(i))
	case *array.Struct:
		st := arr.DataType().(*arrow.StructType)
		for k := 0; k < arr.NumField(); k++ {
			visitValue(arr.Field(k), i, name+"."+st.Field(k).Name, row, fn)
		}
	case array.ListLike:
		start, end := arr.ValueOffsets(i)
		for k := start; k < end; k++ {
			visitValue(arr.ListValues(), int(k), name, row, fn)
		}
	case *array.Dictionary:
		visitValue(arr.Dictionary(), arr.GetValueIndex(i), name, row, fn)
	}
}

// openParquet opens a parquet file, local (a regular file) or in object
// storage (its footer and column chunks then fetched with ranged reads).
func (v *Check) openParquet(p treeFile) (*file.Reader, error) {
	f, err := p.open(v.ctx)
	if err != nil {
		return nil, err
	}
	pf, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return pf, nil
}

// openText opens a text table for reading front to back: the local file
// itself, an object with reads fetched ahead.
func (v *Check) openText(p treeFile) (io.ReadCloser, error) {
	f, err := p.open(v.ctx)
	if err != nil {
		return nil, err
	}
	return readCloser{f.stream(v.ctx), f}, nil
}

// jsonTable reads a JSON document: the row is the index in the innermost
// array around a string, the column its path of object keys.
func (v *Check) jsonTable(p treeFile, fn cellFunc) (int64, error) {
	f, err := v.openText(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return 0, err
	}
	var rows int64
	visitJSON(doc, "", -1, fn, &rows)
	return rows, nil
}

// jsonlTable reads JSON lines: one row per line.
func (v *Check) jsonlTable(p treeFile, fn cellFunc) (int64, error) {
	f, err := v.openText(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var row int64
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var doc any
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return row, fmt.Errorf("line %d: %w", row+1, err)
		}
		var n int64
		visitJSON(doc, "", row, fn, &n)
		row++
	}
	return row, sc.Err()
}

func visitJSON(x any, name string, row int64, fn cellFunc, rows *int64) {
	switch t := x.(type) {
	case string:
		fn(row, name, t)
	case map[string]any:
		for k, v := range t {
			n := k
			if name != "" {
				n = name + "." + k
			}
			visitJSON(v, n, row, fn, rows)
		}
	case []any:
		*rows = max(*rows, int64(len(t)))
		for i, v := range t {
			visitJSON(v, name, int64(i), fn, rows)
		}
	}
}

// wdsTable is what samples.parquet records about itself that the
// reference check needs: its inline fields, which hold text, not
// references, and that each reference names a member of its row's sample.
type wdsTable struct {
	rel    string
	inline map[string]bool
	// rowKeys holds each row's __key__, for checking that a reference
	// names a member of its own sample.
	rowKeys map[int64]string
}

func newWDSTable(rel, record string) (*wdsTable, error) {
	// (pack_base and shard_prefix decoded too: a record whose fields do
	// not decode is no samples table's, as the comparison reads it)
	var rec struct {
		SourceFormat string   `json:"source_format"`
		PackBase     string   `json:"pack_base"`
		Inline       []string `json:"inline"`
		ShardPrefix  bool     `json:"shard_prefix"`
	}
	if err := json.Unmarshal([]byte(record), &rec); err != nil {
		return nil, err
	}
	if rec.SourceFormat != "webdataset" {
		return nil, fmt.Errorf("not a samples table")
	}
	w := &wdsTable{rel: rel, inline: map[string]bool{}}
	for _, f := range rec.Inline {
		w.inline[f] = true
	}
	return w, nil
}

// checkRow checks that a samples table reference names a member of the
// row's sample and field: KEY is "<__key__>.<field>" up to case.
func (w *wdsTable) checkRow(v *Check, rel string, row int64, column, ref string) {
	sample, ok := w.rowKeys[row]
	if !ok {
		return
	}
	key, _, _ := packcore.ParseRef(ref)
	if !strings.HasPrefix(key, sample+".") || !strings.EqualFold(key[len(sample)+1:], column) {
		v.problem(Problem{Table: rel, Row: row, Column: column, Ref: ref,
			Reason: fmt.Sprintf("names member %q, which is not field %q of sample %q", key, column, sample)})
	}
}
