package parquet

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Payload columns read value by value.
//
// When every selected field of a table is a top-level binary column or a
// top-level Hugging Face media struct<bytes, path> (the common case), the
// payload leaves are not decoded into Arrow arrays. Each one is read from
// its column chunk a page at a time (file.ByteArrayColumnChunkReader's
// ReadBatchInPage: the values are slices of the decoded page), and every
// value goes to the pack writer from there: no copy into an Arrow builder
// and no fresh, zeroed buffer per batch. The other leaves (a media struct's
// path among them) are read as Arrow batches as before, of the same sizes,
// and the output batches are the same arrays the general path builds, so
// the output is the same file. A table with any other selection (nested
// fields, lists, fixed-size binary) takes the general path.

// directBatchLevels caps the levels (rows) one read from a page returns.
const directBatchLevels = 1024

// directCol is one payload column read value by value.
type directCol struct {
	field int    // index among the table's top-level fields
	out   int    // index among the output's top-level fields
	name  string // the field's name
	hf    bool   // a media struct<bytes, path>; else a binary column
	leaf  int    // the parquet leaf column holding the payload bytes
	// maxDef is the bytes leaf's definition level of a present value;
	// structDef that at which a media struct is present.
	maxDef, structDef int16

	cr   *file.ByteArrayColumnChunkReader
	vals []pq.ByteArray
	defs []int16
	// n levels were read from the current page, pos of them used; nv
	// values, vpos of them used.
	n, pos, nv, vpos int
}

// directColumns returns the payload columns of a table whose selection can
// be read value by value, in field order, and the parquet leaves that the
// Arrow reader reads (all others); ok is false when the selection needs
// the general path.
func directColumns(sd *schema.Schema, fields []arrow.Field, tree map[string]*selNode) (cols []*directCol, kept []int, ok bool) {
	for name, n := range tree {
		if !n.leaf || len(n.children) > 0 {
			return nil, nil, false
		}
		idx := slices.IndexFunc(fields, func(f arrow.Field) bool { return f.Name == name })
		if idx < 0 || slices.IndexFunc(fields[idx+1:], func(f arrow.Field) bool { return f.Name == name }) >= 0 {
			return nil, nil, false
		}
		d := &directCol{field: idx, name: name}
		t := fields[idx].Type
		want := []string{name}
		switch {
		case isBinary(t) && t.ID() != arrow.FIXED_SIZE_BINARY:
		case isHF(t):
			d.hf = true
			want = append(want, "bytes")
		default:
			return nil, nil, false
		}
		d.leaf = -1
		for i := 0; i < sd.NumColumns(); i++ {
			if slices.Equal([]string(sd.Column(i).ColumnPath()), want) {
				d.leaf = i
			}
		}
		if d.leaf < 0 {
			return nil, nil, false
		}
		c := sd.Column(d.leaf)
		if c.PhysicalType() != pq.Types.ByteArray || c.MaxRepetitionLevel() != 0 {
			return nil, nil, false
		}
		d.maxDef, d.structDef = c.MaxDefinitionLevel(), c.MaxDefinitionLevel()
		if d.hf && c.SchemaNode().RepetitionType() == pq.Repetitions.Optional {
			d.structDef--
		}
		cols = append(cols, d)
	}
	slices.SortFunc(cols, func(a, b *directCol) int { return cmp.Compare(a.field, b.field) })
	for i := 0; i < sd.NumColumns(); i++ {
		if !slices.ContainsFunc(cols, func(d *directCol) bool { return d.leaf == i }) {
			kept = append(kept, i)
		}
	}
	return cols, kept, len(cols) > 0
}

// isHF reports whether t is a media struct<bytes, path>.
func isHF(t arrow.DataType) bool {
	_, _, ok := hfStruct(t)
	return ok
}

// open starts reading the column's chunk in row group rg, closing the
// previous one.
func (d *directCol) open(pf *file.Reader, rg int) error {
	d.close()
	cr, err := pf.RowGroup(rg).Column(d.leaf)
	if err != nil {
		return err
	}
	bar, ok := cr.(*file.ByteArrayColumnChunkReader)
	if !ok {
		cr.Close()
		return fmt.Errorf("column %q: not a byte array column", d.name)
	}
	d.cr = bar
	if d.vals == nil {
		d.vals = make([]pq.ByteArray, directBatchLevels)
		d.defs = make([]int16, directBatchLevels)
	}
	d.n, d.pos, d.nv, d.vpos = 0, 0, 0, 0
	return nil
}

// close releases the current column chunk reader, if any, and forgets
// the values read, which alias its pages (keeping them would keep the
// pages).
func (d *directCol) close() {
	if d.cr != nil {
		d.cr.Close()
		d.cr = nil
	}
	clear(d.vals)
}

// next returns the next slot of the chunk: its definition level and, when
// the value is present, its bytes, which alias the decoded page and stay
// valid until the following call. ok is false at the end of the chunk.
func (d *directCol) next() (val []byte, def int16, ok bool, err error) {
	if d.pos == d.n {
		total, nv, err := d.cr.ReadBatchInPage(directBatchLevels, d.vals, d.defs, nil)
		if err != nil {
			return nil, 0, false, err
		}
		if total == 0 {
			return nil, 0, false, d.cr.Err()
		}
		d.n, d.pos, d.nv, d.vpos = int(total), 0, nv, 0
	}
	def = d.maxDef
	if d.maxDef > 0 {
		def = d.defs[d.pos]
	}
	d.pos++
	if def < d.maxDef {
		return nil, def, true, nil
	}
	if d.vpos == d.nv {
		return nil, 0, false, fmt.Errorf("column %q: a page holds fewer values than its levels say", d.name)
	}
	d.vpos++
	return d.vals[d.vpos-1], def, true, nil
}

// done reports an error when the chunk holds more values than the row
// group has rows.
func (d *directCol) done() error {
	if d.cr == nil {
		return nil
	}
	if d.pos < d.n || d.cr.HasNext() {
		return fmt.Errorf("column %q holds more values than the row group has rows", d.name)
	}
	return d.cr.Err()
}

// directBuild is a payload column's output being built for one batch.
type directBuild struct {
	refs  *array.StringBuilder // references (binary, or media as strings)
	paths array.Builder        // a kept media struct's path field
	st    *array.Struct        // a media struct's path, read as struct<path>
}

// directBatch packs the payloads of the n rows from row first on (their
// slots, from src) and returns the output batch: the columns of rec (the
// kept leaves; nil when there are none) with the payload columns in place.
// recIdx maps a top-level field to its column in rec (-1 for a binary
// payload column, which rec lacks). The caller releases it.
func (tc *tableConv) directBatch(rec arrow.RecordBatch, n int, outSchema *arrow.Schema, src *slotReader, recIdx []int, first int64) (arrow.RecordBatch, error) {
	dcols := src.ds.cols
	mem := tc.opts.Allocator
	o := tc.outOpts()
	bs := make([]directBuild, len(dcols))
	defer func() {
		for _, b := range bs {
			if b.refs != nil {
				b.refs.Release()
			}
			if b.paths != nil {
				b.paths.Release()
			}
		}
	}()
	r := &rewriter{mem: mem, pack: tc.pack, o: o}
	for i, d := range dcols {
		b := &bs[i]
		if d.hf {
			st, ok := rec.Column(recIdx[d.field]).(*array.Struct)
			if !ok || st.NumField() != 1 {
				return nil, fmt.Errorf("parquet: %s: column %q: the media struct's path reads as %s", tc.t.Rel, d.name, rec.Column(recIdx[d.field]).DataType())
			}
			b.st = st
		}
		if d.hf && o.keepMedia {
			b.paths = array.NewBuilder(mem, b.st.Field(0).DataType())
			b.paths.Reserve(n)
		} else {
			b.refs = array.NewStringBuilder(mem)
			b.refs.Reserve(n)
		}
	}
	for i := 0; i < n; i++ {
		row := first + int64(i)
		for c, d := range dcols {
			val, def, err := src.next()
			if err != nil {
				return nil, err
			}
			b := &bs[c]
			path, id := []string{d.name}, elemID{row: row}
			if !d.hf {
				if def < d.maxDef {
					b.refs.AppendNull()
					continue
				}
				ref, err := tc.pack(path, id, val, "", false)
				if err != nil {
					return nil, err
				}
				b.refs.Append(ref)
				continue
			}
			if (def < d.structDef) != b.st.IsNull(i) {
				return nil, inputErr(tc.t.Rel, row, d.name, "the media struct's bytes and path disagree on whether it is null")
			}
			pa := b.st.Field(0)
			if b.st.IsNull(i) {
				appendNullRef(b)
				continue
			}
			ref, ok, err := r.packMedia(path, id, def == d.maxDef, val, pa, i)
			if err != nil {
				return nil, err
			}
			switch {
			case ok && b.paths != nil:
				appendString(b.paths, ref)
			case ok:
				b.refs.Append(ref)
			case b.paths != nil:
				b.paths.AppendNull()
			default:
				appendAbsent(b.refs, outSchema.Field(d.out).Nullable)
			}
		}
	}

	cols := make([]arrow.Array, outSchema.NumFields())
	var made []arrow.Array
	defer func() { releaseAll(made) }()
	k, c := 0, 0 // output column, direct column
	for j := range recIdx {
		f := outSchema.Field(k)
		if c < len(dcols) && dcols[c].field == j {
			b := bs[c]
			c++
			var a arrow.Array
			if b.paths != nil {
				a = keptMedia(mem, f.Type.(*arrow.StructType), b.st, b.paths)
			} else {
				a = b.refs.NewArray()
			}
			made = append(made, a)
			cols[k] = a
			if b.st != nil && o.keepPath {
				k++
				pa := pathColumn(mem, b.st, b.st.Field(0))
				made = append(made, pa)
				cols[k] = pa
			}
			k++
			continue
		}
		col := rec.Column(recIdx[j])
		if !arrow.TypeEqual(col.DataType(), f.Type, arrow.CheckMetadata()) {
			col = relabel(col, f.Type)
			made = append(made, col)
		}
		cols[k] = col
		k++
	}
	return arrowRecord(outSchema, cols, int64(n)), nil
}

// appendNullRef appends a null media value (a null struct).
func appendNullRef(b *directBuild) {
	if b.paths != nil {
		b.paths.AppendNull()
	} else {
		b.refs.AppendNull()
	}
}

// appendString appends s to a string or large string builder.
func appendString(b array.Builder, s string) {
	switch sb := b.(type) {
	case *array.StringBuilder:
		sb.Append(s)
	case *array.LargeStringBuilder:
		sb.Append(s)
	}
}

// directLayout sets each direct column's output field and returns, for
// each top-level field of in, its column in the batches the Arrow reader
// reads (-1 for a binary payload column, which they lack).
func (tc *tableConv) directLayout(in *arrow.Schema, dcols []*directCol) []int {
	recIdx := make([]int, in.NumFields())
	r, k, c := 0, 0, 0
	for j := range recIdx {
		if c < len(dcols) && dcols[c].field == j {
			d := dcols[c]
			c++
			d.out = k
			k++
			if d.hf && tc.outOpts().keepPath {
				k++
			}
			if !d.hf {
				recIdx[j] = -1
				continue
			}
		} else {
			k++
		}
		recIdx[j] = r
		r++
	}
	return recIdx
}

// collectAfter is the size of a row group (uncompressed) after which the
// garbage is collected before the next one is read (see directSource.open
// and sample): a collection costs a few hundred microseconds, so tables of
// many small row groups (LeRobot's episodes) skip it.
const collectAfter = 4 << 20

// directChunkBytes is the payload bytes a chunk gathers before it is sent
// (a larger value makes a chunk of its own), and directChunks the chunks
// in use at a time: one being filled by the reader, one being packed,
// one between them.
const (
	directChunkBytes = 1 << 20
	directChunks     = 3
)

// slotChunk holds consecutive payload slots of the direct columns, in row
// order and, within a row, in column order: their values back to back in
// data (ends[i] ends slot i's) and their definition levels.
type slotChunk struct {
	data []byte
	ends []int
	defs []int16
}

// directSource reads the direct columns on the reader goroutine and hands
// their slots over in chunks: the reader copies each value once, out of
// the decoded page into a chunk, so that the next pages are read and
// decompressed while the packing goroutine writes the previous ones. The
// chunks are reused.
type directSource struct {
	pf   *file.Reader
	cols []*directCol
	free chan *slotChunk
	rg   int // the row group open, -1 for none
}

func newDirectSource(pf *file.Reader, cols []*directCol) *directSource {
	ds := &directSource{pf: pf, cols: cols, free: make(chan *slotChunk, directChunks), rg: -1}
	for range directChunks {
		ds.free <- &slotChunk{}
	}
	return ds
}

// open checks that the chunks of the row group before are exhausted,
// closes them (their page buffers go back to the pageBuffers of the
// reader) and opens those of row group rg (none when rg < 0).
func (ds *directSource) open(rg int) error {
	for _, d := range ds.cols {
		if err := d.done(); err != nil {
			return err
		}
	}
	ds.close()
	prev := ds.rg
	ds.rg = rg
	if rg < 0 {
		return nil
	}
	// With the page buffers kept, what a row group leaves is small, but
	// the collector would let it grow to the size of the live heap (the
	// page buffers) before it runs: after a row group of some size it
	// runs here instead.
	if prev >= 0 && ds.pf.MetaData().RowGroup(prev).TotalByteSize() >= collectAfter {
		runtime.GC()
	}
	for _, d := range ds.cols {
		if err := d.open(ds.pf, rg); err != nil {
			return err
		}
	}
	return nil
}

// close closes the columns' chunk readers.
func (ds *directSource) close() {
	for _, d := range ds.cols {
		d.close()
	}
}

// send reads the slots of the n rows from row first on and sends them in
// chunks; send reports false when the receiver is gone.
func (ds *directSource) send(ctx context.Context, table string, first int64, n int, send func(batchItem) bool) error {
	var c *slotChunk
	get := func() bool {
		select {
		case c = <-ds.free:
			c.data, c.ends, c.defs = c.data[:0], c.ends[:0], c.defs[:0]
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !get() {
		return nil
	}
	for i := 0; i < n; i++ {
		for _, d := range ds.cols {
			val, def, ok, err := d.next()
			if err != nil {
				return inputErr(table, first+int64(i), d.name, "%w", err)
			}
			if !ok {
				return inputErr(table, first+int64(i), d.name, "the column ends before the row group's rows do")
			}
			if len(c.data) > 0 && len(c.data)+len(val) > directChunkBytes {
				if !send(batchItem{chunk: c}) || !get() {
					return nil
				}
			}
			c.data = append(c.data, val...)
			c.ends = append(c.ends, len(c.data))
			c.defs = append(c.defs, def)
		}
	}
	send(batchItem{chunk: c})
	return nil
}

// reader returns the packing goroutine's side of the slots, which come
// through in (one for the table: it holds the chunk in use).
func (ds *directSource) reader(in <-chan batchItem) *slotReader {
	return &slotReader{ds: ds, in: in}
}

// slotReader returns the slots that a directSource sends, in order.
type slotReader struct {
	ds  *directSource
	in  <-chan batchItem
	cur *slotChunk
	i   int
}

// next returns the next slot's value (valid until the chunk is used up,
// for the caller to pack before it asks for more) and definition level.
func (s *slotReader) next() ([]byte, int16, error) {
	for s.cur == nil || s.i == len(s.cur.ends) {
		if s.cur != nil {
			s.ds.free <- s.cur
			s.cur = nil
		}
		it, ok := <-s.in
		switch {
		case !ok:
			return nil, 0, context.Canceled
		case it.err != nil:
			return nil, 0, it.err
		case it.chunk == nil:
			return nil, 0, fmt.Errorf("parquet: a batch came before the payloads of the one before")
		}
		s.cur, s.i = it.chunk, 0
	}
	c := s.cur
	lo := 0
	if s.i > 0 {
		lo = c.ends[s.i-1]
	}
	val, def := c.data[lo:c.ends[s.i]:c.ends[s.i]], c.defs[s.i]
	s.i++
	return val, def, nil
}
