package lancefmt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
)

// ValueOptions tunes Dataset.Values.
type ValueOptions struct {
	// Fragments, when not nil, limits the scan to the fragments with these
	// ids (still in the dataset's order); the others are not read.
	Fragments []uint64
}

// Memory bounds of a value scan.
const (
	// valueWindow is the most bytes of a full-zip page a value scan holds:
	// items are read through one window of this size, moved along the
	// page by positioned reads, and a value stored in no more bytes is
	// handed out from it.
	valueWindow = 4 << 20
	// maxHeldValue is the largest value a value scan decodes into memory
	// (compressed values); larger ones are read with Value.Open.
	maxHeldValue = 16 << 20
)

// ValueScanner reads the values of one binary or large_binary column row
// by row, fragment by fragment, skipping deleted rows. Unlike Scan, it does
// not hold a page: the variable-width values of a full-zip page (files 2.1
// and later, how Lance stores values of a few hundred bytes and more) are
// read item by item through a window of 4 MiB that moves along the page by
// positioned reads, and a value stored in more bytes is read from the file
// when it is opened, in pieces (a zstd frame of stored blocks, as Lance
// compresses incompressible payloads, block by block; a compressed zstd
// frame through a streaming decoder). Other pages are decoded whole, one at
// a time: mini-block and constant pages (small values: Lance writes a page
// as mini-blocks only when its values average a few hundred bytes or
// less), full-zip pages of fixed-width values, and the pages of files 2.0
// and of the legacy format. A scan is used from one goroutine.
type ValueScanner struct {
	ctx     context.Context
	ds      *Dataset
	field   *Field
	only    map[uint64]bool
	fragIdx int
	frag    *Fragment
	fr      *fragmentReader
	del     *roaring.Bitmap
	phys    uint64 // physical row of the next value of the fragment
	// paged: the fragment's column is in a 2.1+ file, read page by page
	// (pages, file); otherwise the fragment's cursor yields its arrays.
	paged bool
	pages []pageInfo
	file  *dataFile
	page  int // next page
	src   valueSource
	mem   pageMem
	win   window
	buf   []byte        // decoded values
	br    *bufio.Reader // reads of streamed zstd frames
	cur   Value
	err   error
	// window and maxHeld are valueWindow and maxHeldValue (smaller in
	// tests, to read small values in pieces).
	window, maxHeld int64
}

// valueSource yields the values of one page (or array).
type valueSource interface {
	// next sets v's Null, Size and way to its bytes for the next row,
	// and reports false at the end of the source.
	next(v *Value) (bool, error)
	close()
}

// Value is one row's value of a binary column, as a ValueScanner yields
// it. It is valid until the scanner's next call to Next.
type Value struct {
	Fragment uint64 // fragment id
	Row      uint64 // physical row offset within the fragment
	Null     bool
	Size     int64 // bytes of the value
	s        *ValueScanner
	data     []byte // the value, when held (held)
	held     bool
	// A full-zip value: its stored bytes [off, off+n) in the page's file.
	zip    *decode.ZipValues
	off, n int64
}

// Values starts reading the binary or large_binary (or utf8, large_utf8)
// column named column.
// The caller must Close the scanner.
func (d *Dataset) Values(ctx context.Context, column string, opts ValueOptions) (*ValueScanner, error) {
	f := d.schema.Field(column)
	if f == nil {
		return nil, fmt.Errorf("lance: %s: no column %q", d.dir, column)
	}
	if err := d.schema.Unsupported[column]; err != nil {
		return nil, fmt.Errorf("lance: %s: column %q: %w", d.dir, column, err)
	}
	if f.IsBlob() {
		return nil, fmt.Errorf("lance: %s: column %q is a blob column; read it with Blobs", d.dir, column)
	}
	af, err := arrowField(f, 0)
	if err != nil {
		return nil, fmt.Errorf("lance: %s: %w", d.dir, err)
	}
	switch af.Type.(type) {
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.StringType, *arrow.LargeStringType:
	default:
		return nil, fmt.Errorf("lance: %s: column %q is %s, not binary", d.dir, column, af.Type)
	}
	s := &ValueScanner{ctx: ctx, ds: d, field: f, window: valueWindow, maxHeld: maxHeldValue}
	if opts.Fragments != nil {
		s.only = map[uint64]bool{}
		for _, id := range opts.Fragments {
			s.only[id] = true
		}
	}
	return s, nil
}

// Next advances to the next row's value.
func (s *ValueScanner) Next() bool {
	for s.err == nil {
		if s.fr == nil && !s.openNext() {
			return false
		}
		if s.src == nil {
			src, err := s.nextSource()
			if err != nil {
				s.err = err
				return false
			}
			if src == nil { // the fragment's end
				if s.phys != s.frag.PhysicalRows {
					s.err = fmt.Errorf("%s: %w: column holds %d of %d rows", s.loc(), errCorrupt, s.phys, s.frag.PhysicalRows)
					return false
				}
				s.closeFragment()
				continue
			}
			s.src = src
		}
		s.cur = Value{Fragment: s.frag.ID, Row: s.phys, s: s}
		ok, err := s.src.next(&s.cur)
		if err != nil {
			s.err = err
			return false
		}
		if !ok {
			s.src.close()
			s.src = nil
			continue
		}
		if s.phys >= s.frag.PhysicalRows {
			s.err = fmt.Errorf("%s: %w: column holds more than the fragment's %d rows", s.loc(), errCorrupt, s.frag.PhysicalRows)
			return false
		}
		s.phys++
		if s.phys%4096 == 0 {
			if err := s.ctx.Err(); err != nil {
				s.err = err
				return false
			}
		}
		if s.del != nil && s.del.Contains(uint32(s.cur.Row)) {
			continue
		}
		return true
	}
	return false
}

// Value returns the current value, valid until the next call to Next.
func (s *ValueScanner) Value() *Value { return &s.cur }

// Err returns the error that stopped the scan, if any.
func (s *ValueScanner) Err() error { return s.err }

// Close releases the scanner's files and buffers.
func (s *ValueScanner) Close() error {
	s.closeFragment()
	s.mem.release()
	s.win.buf, s.buf = nil, nil
	return nil
}

// loc names the dataset, fragment and column for errors.
func (s *ValueScanner) loc() string { return s.ds.where(s.frag.ID, s.field.Name) }

// openNext opens the next fragment to read; false at the end (or on an
// error, in s.err).
func (s *ValueScanner) openNext() bool {
	for {
		if err := s.ctx.Err(); err != nil {
			s.err = err
			return false
		}
		if s.fragIdx >= len(s.ds.manifest.Fragments) {
			return false
		}
		frag := &s.ds.manifest.Fragments[s.fragIdx]
		s.fragIdx++
		if s.only != nil && !s.only[frag.ID] {
			continue
		}
		fr, err := s.ds.openFragment(s.ctx, frag, []*Field{s.field}, &s.mem)
		if err != nil {
			s.err = err
			return false
		}
		s.frag, s.fr, s.del, s.phys, s.page = frag, fr, fr.deleted, 0, 0
		s.paged, s.pages, s.file = false, nil, nil
		if _, ok := fr.cursors[0].(*pagedCursor); ok {
			file, _, ci, err := fr.column(s.field.ID)
			if err != nil {
				s.err = fmt.Errorf("%s: %w", s.loc(), err)
				return false
			}
			if file != nil && file.meta != nil && !(file.meta.major == 2 && file.meta.minor == 0) && !(file.meta.major == 0) {
				s.paged, s.pages, s.file = true, file.meta.columns[ci].pages, file
			}
		}
		return true
	}
}

func (s *ValueScanner) closeFragment() {
	if s.src != nil {
		s.src.close()
		s.src = nil
	}
	if s.fr != nil {
		s.fr.close()
		s.fr = nil
	}
}

// nextSource returns the source of the fragment's next values: its next
// page, or the next array its cursor yields; nil at its end.
func (s *ValueScanner) nextSource() (valueSource, error) {
	if !s.paged {
		c := s.fr.cursors[0]
		n, err := c.avail()
		if err != nil || n == 0 {
			return nil, err
		}
		n = int(min(uint64(n), s.frag.PhysicalRows-min(s.phys, s.frag.PhysicalRows), 1<<20))
		if n == 0 {
			return nil, nil
		}
		a, err := c.next(n)
		if err != nil {
			return nil, err
		}
		return newArraySource(a, s.loc())
	}
	if s.page >= len(s.pages) {
		return nil, nil
	}
	i := s.page
	s.page++
	p := &s.pages[i]
	where := fmt.Sprintf("%s: page %d: encoding %s", s.loc(), i, pageEncodingName(p))
	if src, err := s.zipSource(p, where); src != nil || err != nil {
		return src, err
	}
	a, err := s.fr.cursors[0].(*pagedCursor).decode(i)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if uint64(a.Len()) != p.length {
		a.Release()
		return nil, fmt.Errorf("%s: %w: page of %d rows decodes to %d", where, errCorrupt, p.length, a.Len())
	}
	return newArraySource(a, where)
}

// zipSource returns the source reading the values of page p item by item
// when it is a full-zip page of variable-width values of one item per row;
// nil (and no error) for a page to decode whole.
func (s *ValueScanner) zipSource(p *pageInfo, where string) (valueSource, error) {
	if p.encoding.name() != "PageLayout" || len(p.bufOffsets) == 0 {
		return nil, nil
	}
	pl, err := decode.ParsePageLayout(p.encoding.value)
	if err != nil || pl.Kind != decode.LayoutFullZip {
		return nil, nil // decoding the page reports the error
	}
	z, err := decode.ParseZipValues(pl.Raw)
	if errors.Is(err, decode.ErrNotStreamed) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if z.Repeated() {
		return nil, nil
	}
	if z.NumItems != p.length {
		return nil, fmt.Errorf("%s: %w: full-zip page of %d rows holds %d items", where, errCorrupt, p.length, z.NumItems)
	}
	off, n := p.bufOffsets[0], p.bufSizes[0]
	if size := uint64(s.file.meta.size); off > size || n > size-off {
		return nil, fmt.Errorf("%s: %w: page buffer 0 at %d+%d outside the file", where, errCorrupt, off, n)
	}
	if s.win.buf == nil {
		s.win.buf = make([]byte, 0, s.window)
	}
	s.win.reset(s.file.f, int64(off), int64(off+n))
	return &zipSource{s: s, z: z, pos: int64(off), where: where}, nil
}

// zipSource reads the values of a full-zip page item by item.
type zipSource struct {
	s     *ValueScanner
	z     *decode.ZipValues
	pos   int64 // file position of the next item
	item  uint64
	where string
}

func (z *zipSource) close() {}

func (z *zipSource) next(v *Value) (bool, error) {
	if z.item >= z.z.NumItems {
		return false, nil
	}
	item := z.item
	z.item++
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("%s: item %d: %w", z.where, item, err)
	}
	w := &z.s.win
	if cw := z.z.CtrlBytes(); cw > 0 {
		b, err := w.at(z.pos, cw)
		if err != nil {
			return fail(err)
		}
		z.pos += int64(cw)
		visible, valid := z.z.Item(b)
		if !visible {
			return fail(fmt.Errorf("%w: an item without a value in a page of one value a row", errCorrupt))
		}
		if !valid {
			v.Null = true
			return true, nil
		}
	}
	lb := z.z.LenBytes()
	b, err := w.at(z.pos, lb)
	if err != nil {
		return fail(err)
	}
	z.pos += int64(lb)
	n := z.z.Length(b)
	if n > uint64(w.end-z.pos) {
		return fail(fmt.Errorf("%w: value of %d bytes exceeds the page", errCorrupt, n))
	}
	v.zip, v.off, v.n = z.z, z.pos, int64(n)
	z.pos += int64(n)
	head, err := w.at(v.off, int(min(v.n, decode.SizeHead)))
	if err != nil {
		return fail(err)
	}
	size, known := z.z.DecodedSize(head, v.n)
	if !known {
		// FSST or a zstd frame without its size: decoded to be measured.
		if size, err = v.measure(); err != nil {
			return fail(err)
		}
	}
	v.Size = size
	return true, nil
}

// measure decodes a value whose stored form does not tell its size, and
// returns the size: in memory when it is held, else through the stream.
func (v *Value) measure() (int64, error) {
	v.Size = -1
	if v.n <= v.s.window || !v.zip.Streamable() {
		b, _, err := v.Bytes()
		return int64(len(b)), err
	}
	r, err := v.Open()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return io.Copy(io.Discard, r)
}

// Bytes returns the value's bytes when it is held in memory, or can be: a
// value stored in at most 4 MiB whose decoded size is at most 16 MiB, or a
// value that cannot be read in pieces (lz4, FSST), held whole. They are
// valid until the scanner's next call to Next. held is false for a value
// to read with Open. Null values have no bytes.
func (v *Value) Bytes() (b []byte, held bool, err error) {
	if v.Null {
		return nil, false, nil
	}
	if v.held || v.zip == nil {
		return v.data, v.zip == nil || v.held, nil
	}
	s := v.s
	if v.zip.Streamable() && (v.n > s.window || v.Size > s.maxHeld) {
		return nil, false, nil
	}
	var stored []byte
	if v.n <= s.window {
		if stored, err = s.win.at(v.off, int(v.n)); err != nil {
			return nil, false, v.rowErr(err)
		}
	} else {
		// A value that only decodes whole.
		stored = make([]byte, v.n)
		if _, err := s.win.r.ReadAt(stored, v.off); err != nil {
			return nil, false, v.rowErr(err)
		}
	}
	// A value stored as it is (plain, or a zstd frame of one raw block,
	// as Lance stores incompressible payloads) is handed out from the
	// window; others are decoded into the scan's buffer.
	out, ok := v.zip.Verbatim(stored)
	if !ok {
		if out, err = v.zip.Decode(s.buf, stored); err != nil {
			return nil, false, v.rowErr(err)
		}
		s.buf = out
	}
	if v.Size >= 0 && int64(len(out)) != v.Size {
		return nil, false, v.rowErr(fmt.Errorf("%w: value of %d bytes decodes to %d", errCorrupt, v.Size, len(out)))
	}
	v.data, v.held = out, true
	return out, true, nil
}

// Open returns a reader of the value's bytes, read from the file in pieces
// for a value that Bytes does not hold. The caller closes it; it is valid
// until the scanner's next call to Next.
func (v *Value) Open() (io.ReadCloser, error) {
	if v.Null {
		return nil, fmt.Errorf("lance: fragment %d: row %d: value is null", v.Fragment, v.Row)
	}
	b, held, err := v.Bytes()
	if err != nil {
		return nil, err
	}
	if held {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	s := v.s
	if s.br == nil {
		s.br = bufio.NewReaderSize(nil, 1<<20)
	}
	r, err := v.zip.Stream(s.win.r, v.off, v.n, v.Size, s.br)
	if err != nil {
		return nil, v.rowErr(err)
	}
	return r, nil
}

// Prefix returns the value's first bytes, up to n.
func (v *Value) Prefix(n int) ([]byte, error) {
	b, held, err := v.Bytes()
	if err != nil || held || v.Null {
		return b[:min(len(b), n)], err
	}
	r, err := v.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	p := make([]byte, min(int64(n), v.Size))
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, v.rowErr(err)
	}
	return p, nil
}

// rowErr locates an error at the value's row.
func (v *Value) rowErr(err error) error {
	return fmt.Errorf("%s: row %d: %w", v.s.ds.where(v.Fragment, v.s.field.Name), v.Row, err)
}

// arraySource yields the values of a decoded binary or string array.
type arraySource struct {
	a arrow.Array
	b func(i int) []byte
	i int
}

func newArraySource(a arrow.Array, where string) (valueSource, error) {
	src := &arraySource{a: a}
	switch x := a.(type) {
	case *array.Binary:
		src.b = x.Value
	case *array.LargeBinary:
		src.b = x.Value
	case *array.String:
		src.b = func(i int) []byte { return []byte(x.Value(i)) }
	case *array.LargeString:
		src.b = func(i int) []byte { return []byte(x.Value(i)) }
	default:
		a.Release()
		return nil, fmt.Errorf("%s: column is %s, not binary", where, a.DataType())
	}
	return src, nil
}

func (a *arraySource) next(v *Value) (bool, error) {
	if a.i >= a.a.Len() {
		return false, nil
	}
	i := a.i
	a.i++
	if a.a.IsNull(i) {
		v.Null = true
		return true, nil
	}
	v.data = a.b(i)
	v.Size, v.held = int64(len(v.data)), true
	return true, nil
}

func (a *arraySource) close() { a.a.Release() }

// window holds a stretch of [start, end) of a file, read by positioned
// reads of up to its capacity: the bytes a value scan reads from a page
// come from it, so small items cost no read each.
type window struct {
	r     io.ReaderAt
	start int64 // file position of buf[0]
	end   int64 // end of the span read
	buf   []byte
}

// reset points the window at [start, end) of r.
func (w *window) reset(r io.ReaderAt, start, end int64) {
	w.r, w.start, w.end, w.buf = r, start, end, w.buf[:0]
}

// at returns the n bytes at file position off (n at most the window's
// capacity), reading them when they are not held.
func (w *window) at(off int64, n int) ([]byte, error) {
	if off >= w.start && off+int64(n) <= w.start+int64(len(w.buf)) {
		i := off - w.start
		return w.buf[i : i+int64(n) : i+int64(n)], nil
	}
	if off < 0 || int64(n) > w.end-off || n > cap(w.buf) {
		return nil, fmt.Errorf("%w: %d bytes at %d pass the end of the page at %d", errCorrupt, n, off, w.end)
	}
	// Keep the held bytes from off on; read the rest.
	kept := 0
	if off >= w.start && off < w.start+int64(len(w.buf)) {
		kept = copy(w.buf[:cap(w.buf)], w.buf[off-w.start:])
	}
	m := int(min(int64(cap(w.buf)), w.end-off))
	b := w.buf[:m]
	if _, err := w.r.ReadAt(b[kept:], off+int64(kept)); err != nil {
		w.buf = w.buf[:0]
		return nil, fmt.Errorf("read page: %w", unexpectedEOF(err))
	}
	w.start, w.buf = off, b
	return b[:n:n], nil
}

// unexpectedEOF turns io.EOF into io.ErrUnexpectedEOF (a short file).
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
