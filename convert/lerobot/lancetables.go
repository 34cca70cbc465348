package lerobot

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/lancefmt"
)

// The data tables of a dataset stored as Lance are written from
// frames.lance where the parquet layout keeps them: the rows
// [dataset_from_index, dataset_to_index) of each episode go to the table
// data_path names for its data/chunk_index and data/file_index, in episode
// order, so a table holds what the parquet twin's does. Each column is
// named after the feature whose name, dots replaced by underscores, is the
// column's (LeRobot's Lance writer renames them so; a column no feature
// names keeps its name), and a fixed-size list column becomes a list (the
// writer made it fixed-size from the tables' lists). Values are copied as
// they are. The tables are snappy-compressed parquet with the Arrow schema
// stored, one row group per maxRowGroupRows rows or maxRowGroupBytes.

// Row groups of the written tables: at most this many rows (the pyarrow
// default LeRobot writes with) or about this many bytes.
const (
	maxRowGroupRows  = 1 << 20
	maxRowGroupBytes = 128 << 20
)

// lanceTables is the plan of the tables written from frames.lance.
type lanceTables struct {
	// tables in the order of their first row.
	tables []*lanceTable
	// pieces are the episodes in row order with their table.
	pieces []tablePiece
	// columns are frames.lance's columns, and schema the tables'.
	columns []string
	schema  *arrow.Schema
	// renamed lists "lance name -> feature name" for the plan.
	renamed []string
	// lists counts the fixed-size list columns written as lists.
	lists int
	// episodeCol and indexCol are the positions of episode_index and
	// index among columns, or -1: every row is checked against them.
	episodeCol, indexCol int
}

// lanceTable is one table written from frames.lance.
type lanceTable struct {
	Rel  string // path under the dataset, "data/chunk-000/file-000.parquet"
	Rows int64
	// last is the index in pieces of its last episode.
	last int
}

// tablePiece is one episode's rows and the table they go to.
type tablePiece struct {
	episode  int64
	from, to int64
	table    *lanceTable
}

// planLanceTables checks that the episodes' frame ranges tile the rows of
// frames.lance and locate their tables, and plans the tables.
func (ins *Inspection) planLanceTables(ctx context.Context) error {
	d := ins.Dataset
	ls := d.lance
	eps := slices.Clone(d.Episodes)
	slices.SortStableFunc(eps, func(a, b Episode) int { return cmpInt(a.From, b.From) })
	lt := &lanceTables{episodeCol: -1, indexCol: -1}
	byRel := map[string]*lanceTable{}
	next := int64(0)
	for _, e := range eps {
		var missing []string
		if e.From < 0 {
			missing = append(missing, "dataset_from_index", "dataset_to_index")
		}
		if e.DataChunk < 0 {
			missing = append(missing, "data/chunk_index", "data/file_index")
		}
		if len(missing) > 0 {
			return invalid("", fmt.Errorf("episode %d has no %s in %s: the rows of %s cannot be placed", e.Index, strings.Join(missing, ", "), strings.Join(d.EpisodeFiles, ", "), framesTable))
		}
		if e.From != next || e.To <= e.From {
			return invalid("", fmt.Errorf("episode %d holds frames [%d, %d) of the dataset, but the episodes before it end at frame %d: the episodes must tile the rows of %s (row N is frame N)", e.Index, e.From, e.To, next, framesTable))
		}
		if e.To-e.From != e.Length {
			return invalid("", fmt.Errorf("episode %d: length %d, but dataset_to_index - dataset_from_index = %d", e.Index, e.Length, e.To-e.From))
		}
		next = e.To
		rel, err := formatTemplate(d.DataPath, map[string]any{"chunk_index": e.DataChunk, "file_index": e.DataFile})
		if err != nil {
			return invalid("meta/info.json", fmt.Errorf("data_path: %w", err))
		}
		t := byRel[rel]
		if t == nil {
			t = &lanceTable{Rel: rel}
			byRel[rel] = t
			lt.tables = append(lt.tables, t)
		}
		t.Rows += e.To - e.From
		t.last = len(lt.pieces)
		lt.pieces = append(lt.pieces, tablePiece{episode: e.Index, from: e.From, to: e.To, table: t})
	}
	if next != ls.frameRows {
		return lanceInvalid(framesTable, -1, "", fmt.Errorf("has %d rows, but the episodes hold %d frames (dataset_to_index of the last episode)", ls.frameRows, next))
	}
	if d.TotalFrames > 0 && d.TotalFrames != next {
		ins.Warnings = append(ins.Warnings, fmt.Sprintf("meta/info.json: total_frames is %d, the episodes hold %d frames", d.TotalFrames, next))
	}

	// Columns: every readable column, renamed back to its feature.
	features := map[string][]string{}
	for _, k := range d.Features {
		features[strings.ReplaceAll(k, ".", "_")] = append(features[strings.ReplaceAll(k, ".", "_")], k)
	}
	var fields []arrow.Field
	seen := map[string]string{}
	for _, f := range ls.frames.Schema().Fields {
		if f.IsBlob() {
			return lanceInvalid(framesTable, -1, f.Name, errors.New("is a blob column; LeRobot's frame table holds none"))
		}
		lt.columns = append(lt.columns, f.Name)
	}
	sc, err := ls.frames.Scan(ctx, lancefmt.ScanOptions{Columns: lt.columns})
	if err != nil {
		return invalid(framesTable, err)
	}
	in := sc.Schema()
	sc.Close()
	for i, f := range in.Fields() {
		name := f.Name
		switch names := features[f.Name]; {
		case len(names) > 1:
			slices.Sort(names)
			return lanceInvalid(framesTable, -1, f.Name, fmt.Errorf("could be the feature %s: their names differ only in dots and underscores", strings.Join(names, " or ")))
		case len(names) == 1:
			name = names[0]
		}
		if prev, dup := seen[name]; dup {
			return lanceInvalid(framesTable, -1, f.Name, fmt.Errorf("and column %q both stand for %q", prev, name))
		}
		seen[name] = f.Name
		if name != f.Name {
			lt.renamed = append(lt.renamed, f.Name+" -> "+name)
		}
		if fl, ok := f.Type.(*arrow.FixedSizeListType); ok {
			ef := fl.ElemField()
			f.Type = arrow.ListOfField(arrow.Field{Name: "element", Type: ef.Type, Nullable: ef.Nullable, Metadata: ef.Metadata})
			lt.lists++
		}
		f.Name = name
		fields = append(fields, f)
		switch name {
		case "episode_index":
			lt.episodeCol = i
		case "index":
			lt.indexCol = i
		}
	}
	lt.schema = arrow.NewSchema(fields, nil)
	if _, err := pqarrow.ToParquet(lt.schema, pq.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())); err != nil {
		return lanceInvalid(framesTable, -1, "", fmt.Errorf("its columns cannot be written as parquet: %w", err))
	}
	ins.lanceTables = lt
	return nil
}

// writeLanceTables writes the planned tables under root (the output
// directory) in one scan of frames.lance, checking every row's
// episode_index and index against the episode metadata, and returns how
// many tables it wrote. Each table is written under a temporary name and
// renamed when complete.
func (ins *Inspection) writeLanceTables(ctx context.Context, root string) (int, error) {
	lt := ins.lanceTables
	mem := memory.DefaultAllocator
	sc, err := ins.Dataset.lance.frames.Scan(ctx, lancefmt.ScanOptions{Columns: lt.columns})
	if err != nil {
		return 0, invalid(framesTable, err)
	}
	defer sc.Close()
	open := map[*lanceTable]*frameWriter{}
	defer func() {
		for _, w := range open {
			w.abort()
		}
	}()
	written := 0
	pi := 0 // current piece
	row := int64(0)
	for sc.Next() {
		rec := sc.RecordBatch()
		n := rec.NumRows()
		for at := int64(0); at < n; {
			p := lt.pieces[pi]
			take := min(n-at, p.to-row)
			if err := lt.check(rec, at, take, row, p.episode); err != nil {
				return written, err
			}
			w := open[p.table]
			if w == nil {
				if w, err = newFrameWriter(filepath.Join(root, filepath.FromSlash(p.table.Rel)), lt.schema, mem); err != nil {
					return written, fmt.Errorf("lerobot: %s: %w", p.table.Rel, err)
				}
				open[p.table] = w
			}
			if err := w.write(rec, at, take, lt.schema, mem); err != nil {
				return written, fmt.Errorf("lerobot: %s: %w", p.table.Rel, err)
			}
			at += take
			row += take
			if row == p.to {
				if pi == p.table.last {
					delete(open, p.table)
					if err := w.commit(); err != nil {
						return written, fmt.Errorf("lerobot: %s: %w", p.table.Rel, err)
					}
					written++
				}
				pi++
				if pi == len(lt.pieces) && (at < n || sc.Next()) {
					return written, lanceInvalid(framesTable, row, "", errors.New("more rows than when inspected; the table changed"))
				}
			}
		}
		if pi == len(lt.pieces) {
			break
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return written, ctx.Err()
		}
		return written, invalid(framesTable, err)
	}
	if pi < len(lt.pieces) {
		return written, lanceInvalid(framesTable, row, "", fmt.Errorf("ended inside episode %d; the table changed since it was inspected", lt.pieces[pi].episode))
	}
	return written, nil
}

// check compares the episode_index and index of rows [at, at+n) of rec,
// rows first.. of frames.lance, with the episode the metadata puts them
// in and their position (row N is frame N).
func (lt *lanceTables) check(rec arrow.RecordBatch, at, n, first, episode int64) error {
	for _, col := range []int{lt.episodeCol, lt.indexCol} {
		if col < 0 {
			continue
		}
		name := lt.columns[col]
		vals, err := numbers(arrow.NewChunked(rec.Column(col).DataType(), []arrow.Array{array.NewSlice(rec.Column(col), at, at+n)}))
		if err != nil {
			return lanceInvalid(framesTable, -1, name, err)
		}
		for i, v := range vals {
			row := first + int64(i)
			want, why := episode, fmt.Sprintf("the episode metadata puts row %d in episode %d", row, episode)
			if col == lt.indexCol {
				want, why = row, fmt.Sprintf("row %d is frame %d of the dataset", row, row)
			}
			if v == nil || *v != float64(want) {
				got := "null"
				if v != nil {
					got = fmt.Sprint(*v)
				}
				return lanceInvalid(framesTable, row, name, fmt.Errorf("%s, but %s", got, why))
			}
		}
	}
	return nil
}

// frameWriter writes one table.
type frameWriter struct {
	f  *atomicfile.File
	fw *pqarrow.FileWriter
}

// noClose keeps pqarrow from closing the file, which commit renames.
type noClose struct{ *atomicfile.File }

func (noClose) Close() error { return nil }

func newFrameWriter(out string, schema *arrow.Schema, mem memory.Allocator) (*frameWriter, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(out); err == nil {
		return nil, os.ErrExist
	}
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return nil, err
	}
	props := pq.NewWriterProperties(pq.WithAllocator(mem), pq.WithCompression(compress.Codecs.Snappy), pq.WithMaxRowGroupLength(maxRowGroupRows))
	fw, err := pqarrow.NewFileWriter(schema, noClose{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem), pqarrow.WithStoreSchema()))
	if err != nil {
		f.Abort()
		return nil, err
	}
	return &frameWriter{f: f, fw: fw}, nil
}

// write appends rows [at, at+n) of rec, its columns converted to schema.
func (w *frameWriter) write(rec arrow.RecordBatch, at, n int64, schema *arrow.Schema, mem memory.Allocator) error {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		s := array.NewSlice(rec.Column(i), at, at+n)
		if fl, ok := s.(*array.FixedSizeList); ok {
			l, err := listFromFixed(fl, schema.Field(i).Type.(*arrow.ListType), mem)
			s.Release()
			if err != nil {
				return fmt.Errorf("column %q: %w", schema.Field(i).Name, err)
			}
			s = l
		}
		cols[i] = s
	}
	out := array.NewRecordBatch(schema, cols, n)
	defer out.Release()
	if w.fw.RowGroupTotalBytesWritten() >= maxRowGroupBytes {
		w.fw.NewBufferedRowGroup()
	}
	return w.fw.WriteBuffered(out)
}

func (w *frameWriter) commit() error {
	if err := w.fw.Close(); err != nil {
		w.f.Abort()
		return err
	}
	return w.f.Commit()
}

func (w *frameWriter) abort() {
	w.fw.Close()
	w.f.Abort()
}

// listFromFixed returns the fixed-size list array a as a list array of type
// lt: the same values, a null entry holding none.
func listFromFixed(a *array.FixedSizeList, lt *arrow.ListType, mem memory.Allocator) (arrow.Array, error) {
	n := a.Len()
	width := int64(a.DataType().(*arrow.FixedSizeListType).Len())
	if int64(n)*width > math.MaxInt32 {
		return nil, fmt.Errorf("%d lists of %d values do not fit a list array", n, width)
	}
	base := int64(a.Offset())
	child := a.ListValues()
	offsets := memory.NewResizableBuffer(mem)
	defer offsets.Release()
	offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	var valid *memory.Buffer
	if a.NullN() > 0 {
		valid = memory.NewResizableBuffer(mem)
		defer valid.Release()
		valid.Resize(int(bitutil.BytesForBits(int64(n))))
		clear(valid.Bytes())
	}
	var runs []arrow.Array
	defer func() {
		for _, r := range runs {
			r.Release()
		}
	}()
	pos, runStart := int64(0), int64(-1)
	flush := func(end int64) {
		if runStart >= 0 {
			runs = append(runs, array.NewSlice(child, (base+runStart)*width, (base+end)*width))
			runStart = -1
		}
	}
	for i := 0; i < n; i++ {
		offs[i] = int32(pos)
		if a.IsNull(i) {
			flush(int64(i))
			continue
		}
		if valid != nil {
			bitutil.SetBit(valid.Bytes(), i)
		}
		if runStart < 0 {
			runStart = int64(i)
		}
		pos += width
	}
	flush(int64(n))
	offs[n] = int32(pos)
	var values arrow.Array
	switch len(runs) {
	case 0:
		values = array.NewSlice(child, 0, 0)
	case 1:
		values = runs[0]
		values.Retain()
	default:
		var err error
		if values, err = array.Concatenate(runs, mem); err != nil {
			return nil, err
		}
	}
	defer values.Release()
	data := array.NewData(lt, n, []*memory.Buffer{valid, offsets}, []arrow.ArrayData{values.Data()}, a.NullN(), 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}
