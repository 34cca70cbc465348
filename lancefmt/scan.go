package lancefmt

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/bpconvert/bpconvert/lancefmt/internal/assemble"
	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
)

// defaultAlloc allocates buffers where no dataset allocator applies.
var defaultAlloc = memory.DefaultAllocator

// ScanOptions tunes Dataset.Scan.
type ScanOptions struct {
	// Columns names the top-level columns to read, in order; nil reads every
	// column except blob columns (and fails if one of them has a type this
	// package cannot read: see Schema.Unsupported).
	Columns []string
	// BatchSize is the number of physical rows (before deletions) read per
	// batch; 0 means 8192.
	BatchSize int
	// Fragments, when not nil, limits the scan to the fragments with these
	// ids (still in the dataset's order); the others are not read.
	Fragments []uint64
	// PageBatches ends a batch where a page of one of its columns ends, so
	// that no batch joins pages (BatchSize is then the most rows a batch
	// holds): a scan of large pages holds about one page per column (two
	// where values grow in decoding), however many pages a fragment has,
	// and copies no values into batches.
	PageBatches bool
}

// Scanner iterates over the record batches of a scan, fragment by fragment.
// It reads one page per column at a time: with files 2.1 and later, into a
// buffer reused from page to page; a binary column's full-zip values stay
// in that buffer (moved to its start) when none grows in decoding, or go
// into a second one, and a buffer comes back for a later page when the
// batches using it are released, so a scan of large pages holds about one
// page of such a column, two otherwise (see TestScanPeakLargePages).
type Scanner struct {
	ctx    context.Context
	ds     *Dataset
	fields []*Field
	schema *arrow.Schema
	batch  int
	// pageBatches: no batch joins pages (ScanOptions.PageBatches).
	pageBatches bool
	fragIdx     int
	only        map[uint64]bool // ScanOptions.Fragments; nil for all
	fr          *fragmentReader
	rec         arrow.RecordBatch
	err         error
	mem         pageMem // buffers reused from page to page
}

// Scan starts a scan of the dataset. The caller must Close the scanner.
func (d *Dataset) Scan(ctx context.Context, opts ScanOptions) (*Scanner, error) {
	var fields []*Field
	var afs []arrow.Field
	cols := opts.Columns
	if cols == nil {
		for _, f := range d.schema.Fields {
			if !f.IsBlob() {
				cols = append(cols, f.Name)
			}
		}
	}
	for _, name := range cols {
		if err := d.schema.Unsupported[name]; err != nil {
			return nil, fmt.Errorf("lance: %s: column %q: %w", d.dir, name, err)
		}
	}
	for _, name := range cols {
		f := d.schema.Field(name)
		if f == nil {
			return nil, fmt.Errorf("lance: %s: no column %q", d.dir, name)
		}
		if f.IsBlob() {
			return nil, fmt.Errorf("lance: %s: column %q is a blob column; read it with Blobs", d.dir, name)
		}
		af, err := arrowField(f, 0)
		if err != nil {
			return nil, fmt.Errorf("lance: %s: %w", d.dir, err)
		}
		fields = append(fields, f)
		afs = append(afs, af)
	}
	bs := opts.BatchSize
	if bs <= 0 {
		bs = 8192
	}
	sc := &Scanner{ctx: ctx, ds: d, fields: fields, schema: arrow.NewSchema(afs, nil), batch: bs, pageBatches: opts.PageBatches}
	if opts.Fragments != nil {
		sc.only = map[uint64]bool{}
		for _, id := range opts.Fragments {
			sc.only[id] = true
		}
	}
	return sc, nil
}

// Schema returns the schema of the batches.
func (s *Scanner) Schema() *arrow.Schema { return s.schema }

// Next advances to the next batch and reports whether there is one.
func (s *Scanner) Next() bool {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	for s.err == nil {
		if err := s.ctx.Err(); err != nil {
			s.err = err
			return false
		}
		if s.fr == nil {
			if s.fragIdx >= len(s.ds.manifest.Fragments) {
				return false
			}
			if s.only != nil && !s.only[s.ds.manifest.Fragments[s.fragIdx].ID] {
				s.fragIdx++
				continue
			}
			fr, err := s.ds.openFragment(s.ctx, &s.ds.manifest.Fragments[s.fragIdx], s.fields, &s.mem)
			if err != nil {
				s.err = err
				return false
			}
			fr.pageBatches = s.pageBatches
			s.fragIdx++
			s.fr = fr
		}
		rec, err := s.fr.next(s.batch, s.schema)
		if err != nil {
			s.err = err
			return false
		}
		if rec == nil {
			s.fr.close()
			s.fr = nil
			continue
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		s.rec = rec
		return true
	}
	return false
}

// RecordBatch returns the current batch, valid until the next call to Next.
// To keep it, or arrays of it, longer, Retain them: the value bytes of a
// binary column's large pages are reused for a later page once the batches
// holding them are released, so a slice from Value must not outlive them.
func (s *Scanner) RecordBatch() arrow.RecordBatch { return s.rec }

// Fragment returns the id of the fragment the current batch comes from.
func (s *Scanner) Fragment() uint64 {
	if s.fr != nil {
		return s.fr.frag.ID
	}
	return 0
}

// Err returns the error that stopped the scan, if any.
func (s *Scanner) Err() error { return s.err }

// Close releases the scanner's resources.
func (s *Scanner) Close() error {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
	if s.fr != nil {
		s.fr.close()
		s.fr = nil
	}
	s.mem.release()
	return nil
}

// cursor yields consecutive rows of one top-level field.
type cursor interface {
	next(n int) (arrow.Array, error)
	// avail returns how many rows next can hand out without joining
	// pages, reading the next page when the current one is used up; 0 at
	// the end of the column.
	avail() (int, error)
	// release frees the buffered page.
	release()
}

// dataFile is an open data file of a fragment.
type dataFile struct {
	path   string
	f      File
	meta   *fileMeta   // v2 files
	legacy *legacyMeta // legacy (0.x) files
}

// fragmentReader reads the projected fields of one fragment.
type fragmentReader struct {
	ctx     context.Context // of the reads
	ds      *Dataset
	frag    *Fragment
	files   []*dataFile
	cursors []cursor
	deleted *roaring.Bitmap
	pos     uint64
	// mem, when not nil, lends the buffers that 2.0+ pages are read and
	// decoded into (see pageMem).
	mem *pageMem
	// pageBatches: no batch joins pages (ScanOptions.PageBatches).
	pageBatches bool
}

// batchAlloc returns the allocator of the arrays of type dt that cursors
// put together from several pages: for binary arrays the scan's pool, whose
// buffers come back for later batches once released, unless the dataset
// was opened with an allocator of the caller's. Strings are never pooled:
// the strings that Value returns point into the array's buffer, and callers
// keep them.
func (fr *fragmentReader) batchAlloc(dt arrow.DataType) memory.Allocator {
	if fr.mem != nil && fr.ds.alloc == defaultAlloc && isBinary(dt) {
		return &fr.mem.pool
	}
	return fr.ds.alloc
}

func (fr *fragmentReader) close() {
	for _, c := range fr.cursors {
		c.release()
	}
	fr.cursors = nil
	for _, f := range fr.files {
		if f != nil && f.f != nil {
			f.f.Close()
		}
	}
}

// where builds an error location prefix.
func (d *Dataset) where(frag uint64, column string) string {
	return fmt.Sprintf("lance: %s: fragment %d: column %q", d.dir, frag, column)
}

// openFragment opens the data files of fr and a cursor per field; mem, when
// not nil, lends the cursors page buffers (see pageMem).
func (d *Dataset) openFragment(ctx context.Context, frag *Fragment, fields []*Field, mem *pageMem) (*fragmentReader, error) {
	fr := &fragmentReader{ctx: ctx, ds: d, frag: frag, mem: mem}
	var err error
	if fr.deleted, err = d.Deleted(frag); err != nil {
		return nil, fmt.Errorf("lance: %s: fragment %d: %w", d.dir, frag.ID, err)
	}
	fr.files = make([]*dataFile, len(frag.Files))
	for _, f := range fields {
		c, err := fr.cursorFor(f)
		if err != nil {
			fr.close()
			return nil, err
		}
		fr.cursors = append(fr.cursors, c)
	}
	return fr, nil
}

// file opens (once) the i-th data file of the fragment.
func (fr *fragmentReader) file(i int) (*dataFile, error) {
	if fr.files[i] != nil {
		return fr.files[i], nil
	}
	df := &fr.frag.Files[i]
	legacy := df.Major == 0 && df.Minor < 3
	if df.Major == 2 && df.Minor > 2 || df.Major > 2 || df.Major == 1 {
		return nil, fmt.Errorf("data file %s: file format %d.%d is not supported", df.Path, df.Major, df.Minor)
	}
	p, err := fr.ds.dataFilePath(df)
	if err != nil {
		return nil, err
	}
	f, err := fr.ds.openFile(fr.ctx, p)
	if err != nil {
		return nil, err
	}
	if legacy {
		lm, err := readLegacyMeta(f, f.Size())
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("data file %s: %w", df.Path, err)
		}
		fr.files[i] = &dataFile{path: p, f: f, legacy: lm}
		return fr.files[i], nil
	}
	meta, err := readFileMeta(f, f.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data file %s: %w", df.Path, err)
	}
	fr.files[i] = &dataFile{path: p, f: f, meta: meta}
	return fr.files[i], nil
}

// column finds the data file and column holding field id.
func (fr *fragmentReader) column(id int32) (*dataFile, *DataFile, int, error) {
	for i := range fr.frag.Files {
		df := &fr.frag.Files[i]
		for k, fid := range df.Fields {
			if fid != id || df.ColumnIndices[k] < 0 {
				continue
			}
			f, err := fr.file(i)
			if err != nil {
				return nil, nil, 0, err
			}
			ci := int(df.ColumnIndices[k])
			if f.legacy != nil {
				return f, df, ci, nil
			}
			if ci >= len(f.meta.columns) {
				return nil, nil, 0, fmt.Errorf("%w: column index %d of %d in %s", errCorrupt, ci, len(f.meta.columns), df.Path)
			}
			return f, df, ci, nil
		}
	}
	return nil, nil, -1, nil
}

// readPageBuffers reads the buffers of a page.
func readPageBuffers(r io.ReaderAt, size int64, p *pageInfo) (decode.PageBuffers, error) {
	bufs := make(decode.PageBuffers, len(p.bufOffsets))
	for i, off := range p.bufOffsets {
		n := p.bufSizes[i]
		if off > uint64(size) || n > uint64(size)-off {
			return nil, fmt.Errorf("%w: page buffer %d at %d+%d outside the file", errCorrupt, i, off, n)
		}
		b := make([]byte, n)
		if _, err := r.ReadAt(b, int64(off)); err != nil {
			return nil, fmt.Errorf("read page buffer: %w", err)
		}
		bufs[i] = b
	}
	return bufs, nil
}

// cursorFor builds the cursor of a top-level field.
func (fr *fragmentReader) cursorFor(f *Field) (cursor, error) {
	af, err := arrowField(f, 0)
	if err != nil {
		return nil, err
	}
	loc := fr.ds.where(fr.frag.ID, f.Name)
	// The file version decides the structure: find any column of the field.
	ver := -1
	for i := range fr.frag.Files {
		df := &fr.frag.Files[i]
		for _, id := range df.Fields {
			if fieldContains(f, id) {
				ver = int(df.Major)*10 + int(df.Minor)
				if df.Major == 0 && df.Minor == 3 {
					ver = 20
				}
				if df.Major == 0 && df.Minor < 3 {
					ver = 0
				}
				break
			}
		}
		if ver >= 0 {
			break
		}
	}
	if ver < 0 {
		return &nullCursor{dt: af.Type, alloc: fr.ds.alloc}, nil
	}
	if ver == 0 {
		return fr.cursorLegacy(f, af, loc)
	}
	if ver == 20 {
		return fr.cursor20(f, af, loc)
	}
	return fr.cursor21(f, af, loc)
}

// fieldContains reports whether id is f or one of its descendants.
func fieldContains(f *Field, id int32) bool {
	if f.ID == id {
		return true
	}
	for _, c := range f.Children {
		if fieldContains(c, id) {
			return true
		}
	}
	return false
}

// nullCursor yields nulls for a field without any column.
type nullCursor struct {
	dt    arrow.DataType
	alloc memory.Allocator
}

func (c *nullCursor) release() {}

func (c *nullCursor) next(n int) (arrow.Array, error) {
	return array.MakeArrayOfNull(c.alloc, c.dt, n), nil
}

func (c *nullCursor) avail() (int, error) { return math.MaxInt, nil }

// pagedCursor buffers the array of one page at a time and hands out rows.
type pagedCursor struct {
	loc     string
	npages  int
	page    int
	decode  func(i int) (arrow.Array, error)
	cur     arrow.Array
	off     int
	dt      arrow.DataType
	pageTag func(i int) string
	alloc   memory.Allocator
	subs    []cursor // cursors the page decoder reads from (2.0 list items)
}

func (c *pagedCursor) release() {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	for _, s := range c.subs {
		s.release()
	}
}

// load makes the next page current once the current one is used up (and
// released); at the end of the pages it leaves none current.
func (c *pagedCursor) load() error {
	for c.cur == nil || c.off >= c.cur.Len() {
		if c.cur != nil {
			c.cur.Release()
			c.cur = nil
		}
		if c.page >= c.npages {
			return nil
		}
		a, err := c.decode(c.page)
		if err != nil {
			return fmt.Errorf("%s: page %d: %s: %w", c.loc, c.page, c.pageTag(c.page), err)
		}
		c.page++
		c.cur, c.off = a, 0
	}
	return nil
}

func (c *pagedCursor) avail() (int, error) {
	if err := c.load(); err != nil || c.cur == nil {
		return 0, err
	}
	return c.cur.Len() - c.off, nil
}

func (c *pagedCursor) next(n int) (arrow.Array, error) {
	var parts []arrow.Array
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for n > 0 {
		if err := c.load(); err != nil {
			return nil, err
		}
		if c.cur == nil {
			return nil, fmt.Errorf("%s: %w: column ends before the fragment", c.loc, errCorrupt)
		}
		k := min(n, c.cur.Len()-c.off)
		parts = append(parts, array.NewSlice(c.cur, int64(c.off), int64(c.off+k)))
		c.off += k
		n -= k
	}
	if len(parts) == 0 {
		return array.MakeArrayOfNull(c.alloc, c.dt, 0), nil
	}
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	return array.Concatenate(parts, c.alloc)
}

// structCursor assembles a struct from its children's cursors (files 2.0
// and legacy, which store no struct validity).
type structCursor struct {
	dt       arrow.DataType
	children []cursor
}

func (c *structCursor) release() {
	for _, ch := range c.children {
		ch.release()
	}
}

func (c *structCursor) avail() (int, error) { return minAvail(c.children) }

// minAvail is the least avail of cursors (math.MaxInt for none).
func minAvail(cs []cursor) (int, error) {
	n := math.MaxInt
	for _, c := range cs {
		k, err := c.avail()
		if err != nil {
			return 0, err
		}
		n = min(n, k)
	}
	return n, nil
}

func (c *structCursor) next(n int) (arrow.Array, error) {
	parts := make([]arrow.Array, 0, len(c.children))
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for _, ch := range c.children {
		a, err := ch.next(n)
		if err != nil {
			return nil, err
		}
		if a.Len() != n {
			a.Release()
			return nil, fmt.Errorf("%w: struct child yields %d of %d rows", errCorrupt, a.Len(), n)
		}
		parts = append(parts, a)
	}
	// 2.0: children are the struct's fields; 2.0 stores no struct nulls.
	st := c.dt.(*arrow.StructType)
	data := make([]arrow.ArrayData, len(parts))
	for i, p := range parts {
		data[i] = p.Data()
	}
	return array.MakeFromData(array.NewData(st, n, []*memory.Buffer{nil}, data, 0, 0)), nil
}

// next reads up to n physical rows of every field, drops deleted rows and
// returns the batch, or nil at the end of the fragment.
func (fr *fragmentReader) next(n int, schema *arrow.Schema) (arrow.RecordBatch, error) {
	if fr.pos >= fr.frag.PhysicalRows {
		return nil, nil
	}
	n = int(min(uint64(n), fr.frag.PhysicalRows-fr.pos))
	if fr.pageBatches {
		k, err := minAvail(fr.cursors)
		if err != nil {
			return nil, err
		}
		if k > 0 { // 0: a column ended early, which next reports
			n = min(n, k)
		}
	}
	cols := make([]arrow.Array, len(fr.cursors))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range fr.cursors {
		a, err := c.next(n)
		if err != nil {
			return nil, err
		}
		if a.Len() != n {
			a.Release()
			return nil, fmt.Errorf("%s: %w: read %d of %d rows", fr.ds.where(fr.frag.ID, schema.Field(i).Name), errCorrupt, a.Len(), n)
		}
		cols[i] = a
	}
	start := fr.pos
	fr.pos += uint64(n)
	// Runs of kept rows.
	type run struct{ a, b int }
	var runs []run
	if fr.deleted != nil {
		i := 0
		for i < n {
			for i < n && fr.deleted.Contains(uint32(start)+uint32(i)) {
				i++
			}
			j := i
			for j < n && !fr.deleted.Contains(uint32(start)+uint32(j)) {
				j++
			}
			if j > i {
				runs = append(runs, run{i, j})
			}
			i = j
		}
	} else {
		runs = []run{{0, n}}
	}
	kept := 0
	for _, r := range runs {
		kept += r.b - r.a
	}
	out := make([]arrow.Array, len(cols))
	for i, c := range cols {
		if kept == n {
			c.Retain()
			out[i] = c
			continue
		}
		var parts []arrow.Array
		for _, r := range runs {
			parts = append(parts, array.NewSlice(c, int64(r.a), int64(r.b)))
		}
		var err error
		if len(parts) == 0 {
			out[i] = array.MakeArrayOfNull(fr.ds.alloc, c.DataType(), 0)
		} else {
			out[i], err = array.Concatenate(parts, fr.batchAlloc(c.DataType()))
		}
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return nil, err
		}
	}
	rec := array.NewRecordBatch(schema, out, int64(kept))
	for _, a := range out {
		a.Release()
	}
	return rec, nil
}

// cursor21 builds the cursor of top-level field f in a 2.1+ file: one
// cursor per leaf column, each yielding the field restricted to the path to
// its leaf, merged into the whole field.
func (fr *fragmentReader) cursor21(f *Field, af arrow.Field, loc string) (cursor, error) {
	var leaves []cursor
	if err := fr.leaves21(f, af, loc, nil, &leaves); err != nil {
		for _, c := range leaves {
			c.release()
		}
		return nil, err
	}
	if len(leaves) == 1 {
		return leaves[0], nil
	}
	return &mergeCursor{dt: af.Type, children: leaves, alloc: fr.ds.alloc}, nil
}

// leaves21 appends to out a cursor for every leaf column under f, whose
// ancestors (from the top level) are prefix.
func (fr *fragmentReader) leaves21(f *Field, af arrow.Field, loc string, prefix []arrow.Field, out *[]cursor) error {
	if len(prefix) > 32 {
		return fmt.Errorf("%s: %w: fields nested deeper than 32 levels", loc, errCorrupt)
	}
	path := append(append([]arrow.Field(nil), prefix...), af)
	switch t := af.Type.(type) {
	case *arrow.StructType:
		if f.BlobVersion() == 2 || isPacked(f) {
			break
		}
		if len(f.Children) != t.NumFields() {
			return fmt.Errorf("%s: %w: struct fields do not match the schema", loc, errCorrupt)
		}
		for i, c := range f.Children {
			if err := fr.leaves21(c, t.Field(i), loc, path, out); err != nil {
				return err
			}
		}
		return nil
	case *arrow.ListType, *arrow.LargeListType:
		if len(f.Children) != 1 {
			return fmt.Errorf("%s: %w: list without item field", loc, errCorrupt)
		}
		return fr.leaves21(f.Children[0], t.(arrow.ListLikeType).ElemField(), loc, path, out)
	}
	file, _, ci, err := fr.column(f.ID)
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	rpath := assemble.RestrictPath(path)
	if file == nil {
		*out = append(*out, &nullCursor{dt: rpath[0].Type, alloc: fr.ds.alloc})
		return nil
	}
	col := &file.meta.columns[ci]
	leafType := af.Type
	pc := &pagedCursor{loc: loc, npages: len(col.pages), dt: rpath[0].Type, alloc: fr.batchAlloc(rpath[0].Type)}
	pc.pageTag = func(i int) string { return "encoding " + pageEncodingName(&col.pages[i]) }
	pc.decode = func(i int) (arrow.Array, error) {
		p := &col.pages[i]
		if p.encoding.name() != "PageLayout" {
			return nil, fmt.Errorf("page encoding %s in a %d.%d file", p.encoding.typeURL, file.meta.major, file.meta.minor)
		}
		pl, err := decode.ParsePageLayout(p.encoding.value)
		if err != nil {
			return nil, err
		}
		if p.length > decode.MaxPageItems {
			return nil, fmt.Errorf("%w: page of %d rows", errCorrupt, p.length)
		}
		mem := fr.mem
		bufs, raw, err := mem.readPage(file.f, file.meta.size, p)
		if err != nil {
			return nil, err
		}
		// The values of a top-level binary column stay in the pooled
		// page buffer, moved to its start, when none grows in decoding;
		// otherwise they go into a pooled buffer. The page's array owns
		// whichever holds them.
		var vals []byte
		var vm decode.ValueMem
		if mem != nil && len(path) == 1 && isBinary(leafType) {
			vm.InPlace = raw != nil
			vm.Alloc = func(n int) []byte {
				if vals != nil {
					mem.pool.Free(vals)
				}
				vals = mem.pool.get(n)
				return vals
			}
		}
		sp, err := decode.Structural(pl, bufs, int(p.length), func(n int) decode.Leaf { return assemble.ZeroLeaf(leafType, n) }, vm)
		var a arrow.Array
		if err == nil {
			a, err = assemble.Unravel(sp, path)
		}
		if err != nil {
			mem.settle(nil, raw, vals)
			return nil, err
		}
		return mem.settle(a, raw, vals), nil
	}
	*out = append(*out, pc)
	return nil
}

// isBinary reports whether dt is binary or large binary.
func isBinary(dt arrow.DataType) bool {
	switch dt.(type) {
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return true
	}
	return false
}

// mergeCursor merges the per-leaf arrays of one top-level field.
type mergeCursor struct {
	dt       arrow.DataType
	children []cursor
	alloc    memory.Allocator
}

func (c *mergeCursor) release() {
	for _, ch := range c.children {
		ch.release()
	}
}

func (c *mergeCursor) avail() (int, error) { return minAvail(c.children) }

func (c *mergeCursor) next(n int) (arrow.Array, error) {
	parts := make([]arrow.Array, 0, len(c.children))
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	for _, ch := range c.children {
		a, err := ch.next(n)
		if err != nil {
			return nil, err
		}
		parts = append(parts, a)
		if a.Len() != n {
			return nil, fmt.Errorf("%w: leaf column yields %d of %d rows", errCorrupt, a.Len(), n)
		}
	}
	return assemble.MergeParts(c.alloc, c.dt, parts)
}

// pageEncodingName names the top encoding of a page for error messages.
func pageEncodingName(p *pageInfo) string {
	switch p.encoding.name() {
	case "PageLayout":
		if pl, err := decode.ParsePageLayout(p.encoding.value); err == nil {
			if n := decode.LayoutNames[pl.Kind]; n != "" {
				return n
			}
		}
	case "ArrayEncoding":
		if k, _, err := decode.Oneof(p.encoding.value); err == nil {
			return decode.Enc20Name(k)
		}
	}
	return p.encoding.name()
}

// cursor20 builds the cursor of field f in a 2.0 file.
func (fr *fragmentReader) cursor20(f *Field, af arrow.Field, loc string) (cursor, error) {
	if st, ok := af.Type.(*arrow.StructType); ok && !isPacked(f) {
		return structCursorOf(f, st, loc, fr.cursor20)
	}
	file, _, ci, err := fr.column(f.ID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	if file == nil {
		return &nullCursor{dt: af.Type, alloc: fr.ds.alloc}, nil
	}
	col := &file.meta.columns[ci]
	pc := &pagedCursor{loc: loc, npages: len(col.pages), dt: af.Type, alloc: fr.batchAlloc(af.Type)}
	pc.pageTag = func(i int) string { return "encoding " + pageEncodingName(&col.pages[i]) }
	items, err := listItemsCursor(f, af, loc, fr.cursor20)
	if err != nil {
		return nil, err
	}
	if items != nil {
		pc.subs = append(pc.subs, items)
	}
	decode20 := fr.page20(f, af, items)
	pc.decode = func(i int) (arrow.Array, error) {
		p := &col.pages[i]
		if p.encoding.name() != "ArrayEncoding" {
			return nil, fmt.Errorf("page encoding %s in a 2.0 file", p.encoding.typeURL)
		}
		bufs, raw, err := fr.mem.readPage(file.f, file.meta.size, p)
		if err != nil {
			return nil, err
		}
		a, err := decode20(p, bufs)
		if err != nil {
			fr.mem.settle(nil, raw, nil)
			return nil, err
		}
		return fr.mem.settle(a, raw, nil), nil
	}
	return pc, nil
}

// page20 decodes one page of field f (Arrow field af) of a 2.0 file from its
// buffers; items is the cursor of a list's items (nil for other types).
func (fr *fragmentReader) page20(f *Field, af arrow.Field, items cursor) func(p *pageInfo, bufs decode.PageBuffers) (arrow.Array, error) {
	return func(p *pageInfo, bufs decode.PageBuffers) (arrow.Array, error) {
		if p.length > decode.MaxPageItems {
			return nil, fmt.Errorf("%w: page of %d rows", errCorrupt, p.length)
		}
		n := int(p.length)
		if items != nil {
			kind, val, err := decode.Oneof(p.encoding.value)
			if err != nil {
				return nil, err
			}
			if kind != decode.Enc20List {
				return nil, fmt.Errorf("list column page with encoding %s", decode.Enc20Name(kind))
			}
			lp, err := decode.List20(val, bufs, n)
			if err != nil {
				return nil, err
			}
			if lp.NumItems > decode.MaxPageItems {
				return nil, fmt.Errorf("%w: %d list items", errCorrupt, lp.NumItems)
			}
			child, err := items.next(int(lp.NumItems))
			if err != nil {
				return nil, err
			}
			defer child.Release()
			return listArray(af.Type, lp.Offs, lp.Valid, child), nil
		}
		l, valid, err := decode.Array20(p.encoding.value, bufs, n, 0, strings.HasPrefix(f.LogicalType, "dict:"))
		if err != nil {
			return nil, err
		}
		if l.Data == nil && l.Offs == nil && valid != nil {
			// all null
			return array.MakeArrayOfNull(fr.ds.alloc, af.Type, n), nil
		}
		return assemble.LeafArray(af.Type, l, valid)
	}
}

// cursorBuilder makes the cursor of field f (Arrow field af) in the data
// files of one format; loc names the fragment and column for errors.
type cursorBuilder func(f *Field, af arrow.Field, loc string) (cursor, error)

// structCursorOf makes the cursor of a struct field from its children's
// cursors, made by build.
func structCursorOf(f *Field, st *arrow.StructType, loc string, build cursorBuilder) (cursor, error) {
	sc := &structCursor{dt: st}
	for i, c := range f.Children {
		cc, err := build(c, st.Field(i), loc)
		if err != nil {
			sc.release()
			return nil, err
		}
		sc.children = append(sc.children, cc)
	}
	return sc, nil
}

// listItemsCursor makes, with build, the cursor of the items of a list or
// large list field; nil for other types.
func listItemsCursor(f *Field, af arrow.Field, loc string, build cursorBuilder) (cursor, error) {
	switch af.Type.(type) {
	case *arrow.ListType, *arrow.LargeListType:
	default:
		return nil, nil
	}
	if len(f.Children) != 1 {
		return nil, fmt.Errorf("%s: %w: list without item field", loc, errCorrupt)
	}
	iaf, err := arrowField(f.Children[0], 0)
	if err != nil {
		return nil, err
	}
	return build(f.Children[0], iaf, loc)
}

// listArray makes a list (int32 offsets) or large list (int64 offsets)
// array of len(offs)-1 lists over child: offs are relative to the child's
// first item, valid is nil when every list is valid.
func listArray(dt arrow.DataType, offs []int64, valid []bool, child arrow.Array) arrow.Array {
	vb, nulls := assemble.BitmapOf(valid)
	return assemble.ListOf(dt, len(offs)-1, offs, vb, nulls, child)
}
