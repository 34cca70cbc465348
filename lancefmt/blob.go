package lancefmt

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/bpconvert/bpconvert/lancefmt/internal/bitpack"
	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// BlobKind tells where the bytes of a blob are stored.
type BlobKind uint8

// Blob storage kinds. Blob v1 values are always BlobInline.
const (
	BlobInline    BlobKind = 0 // inside the fragment's data file
	BlobPacked    BlobKind = 1 // a slice of a shared sidecar file data/<file>/<id>.blob
	BlobDedicated BlobKind = 2 // a whole sidecar file data/<file>/<id>.blob
	BlobExternal  BlobKind = 3 // a file outside the dataset, named by URI
	BlobManaged   BlobKind = 4 // a range of a Lance-owned object (_blobs/<uuid>.blob) under a base path
)

// blobManagedWithBase is the descriptor kind of a managed blob whose object
// lies under the base path its blob_id names (Lance writes it for a
// dataset written with target bases); it resolves to a BlobManaged value.
const blobManagedWithBase = 5

// String names the kind.
func (k BlobKind) String() string {
	switch k {
	case BlobInline:
		return "inline"
	case BlobPacked:
		return "packed"
	case BlobDedicated:
		return "dedicated"
	case BlobExternal:
		return "external"
	case BlobManaged:
		return "managed"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// BlobLocation is the physical identity of a blob's bytes: rows whose
// locations are equal share one stored blob.
type BlobLocation struct {
	Path   string // location of the file holding the bytes (a path, or a URL in object storage)
	Offset int64  // first byte in Path
	Size   int64  // number of bytes
}

// Blob is the blob value of one row.
type Blob struct {
	Fragment uint64 // fragment id
	Row      uint64 // row offset within the fragment
	Null     bool   // the row holds no blob
	Size     int64  // payload size in bytes
	Kind     BlobKind
	// RefID is the sharing id of the descriptor's optional sixth field
	// (rows with the same positive RefID share one physical blob); 0 when
	// absent.
	RefID    uint32
	Location BlobLocation
	// URI is the external URI of a BlobExternal value, or the object path
	// (relative to its base) of a BlobManaged value, as stored.
	URI string
	// Ranged is true for a BlobExternal value that is a slice of its
	// object (a stored size or position other than 0), not the whole
	// object.
	Ranged bool
	// baseRelative is set for a BlobExternal value whose URI is a path
	// relative to one of the manifest's base paths.
	baseRelative bool

	files *blobFiles
}

// KeptURI returns a URI that names a BlobExternal value's object on its
// own, outside this dataset: the stored URI when it is absolute, else (a
// path relative to one of the manifest's base paths, which a table written
// elsewhere does not carry) the object's location, as a file:// URI when
// it is a local path.
func (b Blob) KeptURI() string {
	if !b.baseRelative {
		return b.URI
	}
	if isURL(b.Location.Path) {
		return b.Location.Path
	}
	p := filepath.ToSlash(b.Location.Path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// ReaderAt returns a reader of exactly the blob's bytes. It is valid until
// the BlobScanner that produced the blob is closed.
func (b *Blob) ReaderAt() (*io.SectionReader, error) {
	if b.Null {
		return nil, fmt.Errorf("lance: fragment %d: row %d: blob is null", b.Fragment, b.Row)
	}
	if b.Size == 0 {
		return io.NewSectionReader(emptyReaderAt{}, 0, 0), nil
	}
	f, err := b.files.open(b.Location.Path)
	if err != nil {
		return nil, fmt.Errorf("lance: fragment %d: row %d: %w", b.Fragment, b.Row, err)
	}
	return io.NewSectionReader(f, b.Location.Offset, b.Location.Size), nil
}

type emptyReaderAt struct{}

func (emptyReaderAt) ReadAt(p []byte, off int64) (int, error) { return 0, io.EOF }

// blobFiles caches the files blobs are read from, opened through the
// storage of ds with the context ctx.
type blobFiles struct {
	ctx   context.Context
	ds    *Dataset
	open_ map[string]File
}

func (bf *blobFiles) open(p string) (File, error) {
	if f, ok := bf.open_[p]; ok {
		return f, nil
	}
	f, err := bf.ds.openFile(bf.ctx, p)
	if err != nil {
		return nil, err
	}
	if bf.open_ == nil {
		bf.open_ = map[string]File{}
	}
	bf.open_[p] = f
	return f, nil
}

func (bf *blobFiles) close() {
	for _, f := range bf.open_ {
		f.Close()
	}
	bf.open_ = nil
}

// BlobScanner iterates over the blobs of one blob column, fragment by
// fragment, skipping deleted rows. It holds one page of descriptors at a
// time, and none for a blob v2 column of file 2.2 (full-zip pages of
// descriptors): those are read item by item through a window of positioned
// reads, as ValueScanner reads values.
type BlobScanner struct {
	ctx     context.Context
	ds      *Dataset
	field   *Field
	fragIdx int
	// The open fragment: its blob column's pages (or, for a fragment
	// without the column or of a legacy file, every row's blob in cur).
	frag    *Fragment
	fr      *fragmentReader
	file    *dataFile
	df      *DataFile
	pages   []pageInfo
	page    int
	row     uint64 // physical row of the fragment's next blob
	deleted *roaring.Bitmap
	cur     []Blob // the blobs of a page decoded whole
	pos     int
	zip     *blobZip // the page read item by item
	blob    Blob
	files   blobFiles
	win     window
	err     error
	// only, when not nil, limits the scan to these fragments.
	only map[uint64]bool
}

// blobZip reads the descriptors of a blob v2 page item by item.
type blobZip struct {
	z     *decode.ZipValues
	vc    *decode.Compression
	pos   int64 // file position of the next item
	item  uint64
	page  int
	where string
}

// Blobs starts reading the blob column named column. The caller must Close
// the scanner.
func (d *Dataset) Blobs(ctx context.Context, column string) (*BlobScanner, error) {
	f := d.schema.Field(column)
	if f == nil {
		return nil, fmt.Errorf("lance: %s: no column %q", d.dir, column)
	}
	if !f.IsBlob() {
		return nil, fmt.Errorf("lance: %s: column %q is not a blob column", d.dir, column)
	}
	return &BlobScanner{ctx: ctx, ds: d, field: f, files: blobFiles{ctx: ctx, ds: d}}, nil
}

// BlobsOf is Blobs limited to the fragments with the given ids (still in
// the dataset's order): the others are not read at all.
func (d *Dataset) BlobsOf(ctx context.Context, column string, ids []uint64) (*BlobScanner, error) {
	s, err := d.Blobs(ctx, column)
	if err != nil {
		return nil, err
	}
	s.only = map[uint64]bool{}
	for _, id := range ids {
		s.only[id] = true
	}
	return s, nil
}

// Next advances to the next row's blob.
func (s *BlobScanner) Next() bool {
	for s.err == nil {
		if s.frag == nil {
			if err := s.ctx.Err(); err != nil {
				s.err = err
				return false
			}
			if s.fragIdx >= len(s.ds.manifest.Fragments) {
				return false
			}
			fr := &s.ds.manifest.Fragments[s.fragIdx]
			s.fragIdx++
			if s.only != nil && !s.only[fr.ID] {
				continue
			}
			s.err = s.open(fr)
			continue
		}
		b, ok, err := s.nextRow()
		if err != nil {
			s.err = err
			return false
		}
		if !ok {
			if s.row != s.frag.PhysicalRows {
				s.err = fmt.Errorf("%s: %w: blob column holds %d of %d rows", s.ds.where(s.frag.ID, s.field.Name), errCorrupt, s.row, s.frag.PhysicalRows)
				return false
			}
			s.closeFragment()
			continue
		}
		row := s.row
		s.row++
		if s.deleted != nil && s.deleted.Contains(uint32(row)) {
			continue
		}
		b.Fragment, b.Row, b.files = s.frag.ID, row, &s.files
		s.blob = b
		return true
	}
	return false
}

// open makes frag the fragment being read.
func (s *BlobScanner) open(frag *Fragment) error {
	loc := s.ds.where(frag.ID, s.field.Name)
	deleted, err := s.ds.Deleted(frag)
	if err != nil {
		return fmt.Errorf("lance: %s: fragment %d: %w", s.ds.dir, frag.ID, err)
	}
	fr := &fragmentReader{ctx: s.ctx, ds: s.ds, frag: frag, files: make([]*dataFile, len(frag.Files))}
	file, df, ci, err := fr.column(s.field.ID)
	if err != nil {
		fr.close()
		return fmt.Errorf("%s: %w", loc, err)
	}
	s.frag, s.fr, s.file, s.df, s.deleted = frag, fr, file, df, deleted
	s.pages, s.page, s.row, s.cur, s.pos, s.zip = nil, 0, 0, nil, 0, nil
	switch {
	case file == nil:
		s.cur = make([]Blob, frag.PhysicalRows)
		for i := range s.cur {
			s.cur[i].Null = true
		}
	case file.legacy != nil:
		s.cur, err = legacyBlobs(frag, s.field, file, nil, &s.files, loc)
	default:
		s.pages = file.meta.columns[ci].pages
	}
	return err
}

func (s *BlobScanner) closeFragment() {
	if s.fr != nil {
		s.fr.close()
	}
	s.frag, s.fr, s.file, s.df, s.cur, s.zip = nil, nil, nil, nil, nil, nil
}

// nextRow returns the blob of the fragment's next physical row (Fragment,
// Row and files not set); ok is false at the fragment's end.
func (s *BlobScanner) nextRow() (Blob, bool, error) {
	for {
		if s.zip != nil {
			if b, ok, err := s.nextItem(); ok || err != nil {
				return b, ok, err
			}
			s.zip = nil
		}
		if s.pos < len(s.cur) {
			s.pos++
			return s.cur[s.pos-1], true, nil
		}
		if s.page >= len(s.pages) {
			return Blob{}, false, nil
		}
		pi := s.page
		s.page++
		p := &s.pages[pi]
		where := fmt.Sprintf("%s: page %d: %s", s.ds.where(s.frag.ID, s.field.Name), pi, pageEncodingName(p))
		zp, err := s.zipPage(p, pi, where)
		if err != nil {
			return Blob{}, false, err
		}
		if zp != nil {
			s.zip = zp
			continue
		}
		bufs, err := readPageBuffers(s.file.f, s.file.meta.size, p)
		if err == nil && p.length > decode.MaxPageItems {
			err = fmt.Errorf("%w: page of %d rows", errCorrupt, p.length)
		}
		var blobs []Blob
		if err == nil {
			blobs, err = decodeBlobPage(p, bufs, s.file, s.df, s.ds, s.field.BlobVersion(), s.row)
		}
		if err != nil {
			return Blob{}, false, fmt.Errorf("%s: %w", where, err)
		}
		s.cur, s.pos = blobs, 0
	}
}

// zipPage returns the reader of a blob v2 page of full-zip descriptors of
// one row each; nil (and no error) for a page to decode whole.
func (s *BlobScanner) zipPage(p *pageInfo, pi int, where string) (*blobZip, error) {
	if s.field.BlobVersion() != 2 || p.encoding.name() != "PageLayout" || len(p.bufOffsets) == 0 {
		return nil, nil
	}
	pl, err := decode.ParsePageLayout(p.encoding.value)
	if err != nil || pl.Kind != decode.LayoutFullZip {
		return nil, nil
	}
	z, err := decode.ParseZipValues(pl.Raw)
	if err != nil || z.Repeated() || !z.Plain() {
		return nil, nil // decoding the page reports what is wrong
	}
	vc, err := blobV2Codec(pl.Raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if z.NumItems != p.length {
		return nil, fmt.Errorf("%s: %w: full-zip page of %d rows holds %d items", where, errCorrupt, p.length, z.NumItems)
	}
	off, n := p.bufOffsets[0], p.bufSizes[0]
	if size := uint64(s.file.meta.size); off > size || n > size-off {
		return nil, fmt.Errorf("%s: %w: page buffer 0 at %d+%d outside the file", where, errCorrupt, off, n)
	}
	if s.win.buf == nil {
		s.win.buf = make([]byte, 0, valueWindow)
	}
	s.win.reset(s.file.f, int64(off), int64(off+n))
	return &blobZip{z: z, vc: vc, pos: int64(off), page: pi, where: where}, nil
}

// nextItem reads the next descriptor of the current page; ok is false at
// the page's end.
func (s *BlobScanner) nextItem() (Blob, bool, error) {
	zp := s.zip
	if zp.item >= zp.z.NumItems {
		return Blob{}, false, nil
	}
	zp.item++
	fail := func(err error) (Blob, bool, error) {
		return Blob{}, false, fmt.Errorf("%s: row %d: %w", zp.where, s.row, err)
	}
	if cw := zp.z.CtrlBytes(); cw > 0 {
		b, err := s.win.at(zp.pos, cw)
		if err != nil {
			return fail(err)
		}
		zp.pos += int64(cw)
		visible, valid := zp.z.Item(b)
		if !visible {
			return fail(fmt.Errorf("%w: invisible blob descriptor", errCorrupt))
		}
		if !valid {
			return Blob{Null: true}, true, nil
		}
	}
	b, err := s.win.at(zp.pos, zp.z.LenBytes())
	if err != nil {
		return fail(err)
	}
	zp.pos += int64(zp.z.LenBytes())
	n := zp.z.Length(b)
	if n > uint64(cap(s.win.buf)) {
		return fail(fmt.Errorf("%w: blob descriptor of %d bytes", errCorrupt, n))
	}
	v, err := s.win.at(zp.pos, int(n))
	if err != nil {
		return fail(err)
	}
	zp.pos += int64(n)
	ds, err := parseBlobV2Descriptor(v, zp.vc)
	if err != nil {
		return fail(err)
	}
	file := s.file
	bl, err := s.ds.resolveBlobV2(ds, file, s.df, func(pos, size uint64) (Blob, error) { return inlineBlob(file, pos, size) })
	if err != nil {
		return fail(err)
	}
	return bl, true, nil
}

// inlineBlob is the blob stored at [pos, pos+size) of a data file.
func inlineBlob(file *dataFile, pos, size uint64) (Blob, error) {
	if pos > uint64(file.meta.size) || size > uint64(file.meta.size)-pos {
		return Blob{}, fmt.Errorf("%w: blob at %d+%d outside the data file", errCorrupt, pos, size)
	}
	return Blob{Size: int64(size), Kind: BlobInline, Location: BlobLocation{Path: file.path, Offset: int64(pos), Size: int64(size)}}, nil
}

// Blob returns the current blob, valid until the next call to Next.
func (s *BlobScanner) Blob() *Blob { return &s.blob }

// Err returns the error that stopped the scan, if any.
func (s *BlobScanner) Err() error { return s.err }

// Close closes the files opened for reading blobs.
func (s *BlobScanner) Close() error {
	s.closeFragment()
	s.files.close()
	s.win.buf = nil
	return nil
}

// fragmentBlobRows decodes the blob descriptors of one fragment, skipping
// the rows in deleted (nil: every physical row).
func (d *Dataset) fragmentBlobRows(frag *Fragment, f *Field, files *blobFiles, deleted *roaring.Bitmap) ([]Blob, error) {
	loc := d.where(frag.ID, f.Name)
	fr := &fragmentReader{ctx: files.ctx, ds: d, frag: frag, files: make([]*dataFile, len(frag.Files))}
	defer fr.close()
	file, df, ci, err := fr.column(f.ID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	var out []Blob
	if file == nil {
		for r := uint64(0); r < frag.PhysicalRows; r++ {
			if deleted == nil || !deleted.Contains(uint32(r)) {
				out = append(out, Blob{Fragment: frag.ID, Row: r, Null: true, files: files})
			}
		}
		return out, nil
	}
	if file.legacy != nil {
		return legacyBlobs(frag, f, file, deleted, files, loc)
	}
	col := &file.meta.columns[ci]
	var row uint64
	for pi := range col.pages {
		p := &col.pages[pi]
		bufs, err := readPageBuffers(file.f, file.meta.size, p)
		if err == nil && p.length > decode.MaxPageItems {
			err = fmt.Errorf("%w: page of %d rows", errCorrupt, p.length)
		}
		var blobs []Blob
		if err == nil {
			blobs, err = decodeBlobPage(p, bufs, file, df, d, f.BlobVersion(), row)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: page %d: %s: %w", loc, pi, pageEncodingName(p), err)
		}
		for i := range blobs {
			b := blobs[i]
			b.Fragment, b.Row, b.files = frag.ID, row, files
			if deleted == nil || !deleted.Contains(uint32(row)) {
				out = append(out, b)
			}
			row++
		}
	}
	if row != frag.PhysicalRows {
		return nil, fmt.Errorf("%s: %w: blob column holds %d of %d rows", loc, errCorrupt, row, frag.PhysicalRows)
	}
	return out, nil
}

// decodeBlobPage decodes the blob descriptors of one page.
// firstRow is the fragment row of the page's first row, for errors.
func decodeBlobPage(p *pageInfo, bufs decode.PageBuffers, file *dataFile, df *DataFile, d *Dataset, version int, firstRow uint64) ([]Blob, error) {
	n := int(p.length)
	inline := func(pos, size uint64) (Blob, error) { return inlineBlob(file, pos, size) }
	switch p.encoding.name() {
	case "ArrayEncoding": // 2.0: PackedStruct of (position, size)
		kind, _, err := decode.Oneof(p.encoding.value)
		if err != nil {
			return nil, err
		}
		if kind != decode.Enc20PackedStruct || len(bufs) != 1 || uint64(len(bufs[0])) < uint64(n)*16 {
			return nil, fmt.Errorf("blob v1 descriptors with encoding %s are not supported", decode.Enc20Name(kind))
		}
		out := make([]Blob, n)
		for i := range out {
			pos := binary.LittleEndian.Uint64(bufs[0][16*i:])
			size := binary.LittleEndian.Uint64(bufs[0][16*i+8:])
			if size == 0 {
				out[i] = Blob{Null: pos == 1}
				continue
			}
			if out[i], err = inline(pos, size); err != nil {
				return nil, err
			}
		}
		return out, nil
	case "PageLayout":
	default:
		return nil, fmt.Errorf("page encoding %s is not supported", p.encoding.typeURL)
	}
	pl, err := decode.ParsePageLayout(p.encoding.value)
	if err != nil {
		return nil, err
	}
	if pl.Kind == decode.LayoutBlob {
		pos, size, err := decodeBlobV1Layout(pl.Raw, bufs, n)
		if err != nil {
			return nil, err
		}
		out := make([]Blob, n)
		for i := range out {
			if size[i] == 0 {
				out[i] = Blob{Null: pos[i] != 0}
				continue
			}
			if out[i], err = inline(pos[i], size[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if version != 2 {
		return nil, fmt.Errorf("blob v1 page layout %s is not supported", decode.LayoutNames[pl.Kind])
	}
	if pl.Kind != decode.LayoutFullZip {
		return nil, fmt.Errorf("blob v2 descriptors in layout %s are not supported", decode.LayoutNames[pl.Kind])
	}
	sp, err := decode.FullZip(pl.Raw, bufs, n)
	if err != nil {
		return nil, err
	}
	descs, err := parseBlobV2Descriptors(sp, pl.Raw)
	if err != nil {
		return nil, err
	}
	if len(descs) != n {
		return nil, fmt.Errorf("%w: %d blob descriptors for %d rows", errCorrupt, len(descs), n)
	}
	out := make([]Blob, n)
	for i, ds := range descs {
		if ds == nil {
			out[i] = Blob{Null: true}
			continue
		}
		b, err := d.resolveBlobV2(ds, file, df, inline)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", firstRow+uint64(i), err)
		}
		out[i] = b
	}
	return out, nil
}

// Field numbers of the layouts read here: BlobLayout's inner layout, and
// FullZipLayout's value compression (blob v2 descriptors are full-zip
// pages).
const (
	blobLayoutInner         = 1
	fullZipValueCompression = 7
)

// decodeBlobV1Layout decodes a BlobLayout page into per-row positions and
// sizes (size 0 and position != 0 marks a null row).
func decodeBlobV1Layout(raw []byte, bufs decode.PageBuffers, rows int) ([]uint64, []uint64, error) {
	var inner decode.PageLayout
	err := wire.Walk(raw, func(f wire.Field) error {
		var err error
		if f.Num == blobLayoutInner {
			inner, err = decode.ParsePageLayout(f.B)
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if inner.Kind != decode.LayoutMiniBlock {
		return nil, nil, fmt.Errorf("blob layout over %s is not supported", decode.LayoutNames[inner.Kind])
	}
	sp, err := decode.MiniBlock(inner.Raw, bufs, rows)
	if err != nil {
		return nil, nil, err
	}
	if sp.Vals.Bits != 128 || sp.Vals.N != rows {
		return nil, nil, fmt.Errorf("%w: blob descriptions of %d bits for %d of %d rows", errCorrupt, sp.Vals.Bits, sp.Vals.N, rows)
	}
	pos := make([]uint64, rows)
	size := make([]uint64, rows)
	for i := range pos {
		pos[i] = binary.LittleEndian.Uint64(sp.Vals.Data[16*i:])
		size[i] = binary.LittleEndian.Uint64(sp.Vals.Data[16*i+8:])
	}
	return pos, size, nil
}

// blobV2Desc is one decoded blob v2 descriptor.
type blobV2Desc struct {
	kind     uint8
	position uint64
	size     uint64
	blobID   uint32
	uri      string
	refID    uint32
}

// blobV2Codec returns the value compression of a blob v2 descriptor page
// (FullZipLayout raw), checked to be the packed struct of the descriptor's
// five or six fields.
func blobV2Codec(raw []byte) (*decode.Compression, error) {
	var vc *decode.Compression
	if err := wire.Walk(raw, func(f wire.Field) error {
		var err error
		if f.Num == fullZipValueCompression {
			vc, err = decode.ParseCompression(f.B, 0)
		}
		return err
	}); err != nil {
		return nil, err
	}
	if vc == nil || vc.Kind != decode.CompressVariablePackedStruct || (len(vc.Fields) != 5 && len(vc.Fields) != 6) {
		return nil, fmt.Errorf("blob v2 descriptor encoding %s with %d fields is not supported", vc, len(vc.Fields))
	}
	wantBits := []uint64{8, 64, 64, 32}
	for i, w := range wantBits {
		if vc.Fields[i].Kind != decode.CompressFlat || vc.Fields[i].Bits != w {
			return nil, fmt.Errorf("%w: blob v2 descriptor field %d", errCorrupt, i)
		}
	}
	if vc.Fields[4].Kind != decode.CompressVariable || (vc.Fields[4].Bits != 32 && vc.Fields[4].Bits != 64) {
		return nil, fmt.Errorf("%w: blob v2 descriptor uri field", errCorrupt)
	}
	if len(vc.Fields) == 6 && (vc.Fields[5].Kind != decode.CompressFlat || vc.Fields[5].Bits != 32) {
		return nil, fmt.Errorf("blob v2 descriptor sixth field %s is not supported", vc.Fields[5])
	}
	return vc, nil
}

// parseBlobV2Descriptor decodes one packed descriptor v, of the fields vc
// describes (see blobV2Codec).
func parseBlobV2Descriptor(v []byte, vc *decode.Compression) (*blobV2Desc, error) {
	if len(v) < 21 {
		return nil, fmt.Errorf("%w: blob descriptor of %d bytes", errCorrupt, len(v))
	}
	ds := &blobV2Desc{
		kind:     v[0],
		position: binary.LittleEndian.Uint64(v[1:]),
		size:     binary.LittleEndian.Uint64(v[9:]),
		blobID:   binary.LittleEndian.Uint32(v[17:]),
	}
	rest := v[21:]
	lw := int(vc.Fields[4].Bits / 8)
	if len(rest) < lw {
		return nil, fmt.Errorf("%w: blob descriptor uri truncated", errCorrupt)
	}
	ul := bitpack.ReadWord(rest, 0, lw*8)
	rest = rest[lw:]
	if ul > uint64(len(rest)) {
		return nil, fmt.Errorf("%w: blob descriptor uri of %d bytes", errCorrupt, ul)
	}
	ds.uri = string(rest[:ul])
	rest = rest[ul:]
	if len(vc.Fields) == 6 {
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: blob descriptor ref_id truncated", errCorrupt)
		}
		ds.refID = binary.LittleEndian.Uint32(rest)
	}
	return ds, nil
}

// parseBlobV2Descriptors splits the per-row packed descriptors of a blob v2
// page; nil entries are null rows.
func parseBlobV2Descriptors(sp *decode.StructPage, raw []byte) ([]*blobV2Desc, error) {
	vc, err := blobV2Codec(raw)
	if err != nil {
		return nil, err
	}
	mv := decode.MaxVisibleDef(sp.Layers)
	var out []*blobV2Desc
	vi := 0
	n := sp.Rows
	if sp.Def != nil {
		n = len(sp.Def)
	}
	for i := 0; i < n; i++ {
		if sp.Def != nil && int(sp.Def[i]) > mv {
			return nil, fmt.Errorf("%w: invisible blob descriptor", errCorrupt)
		}
		if vi >= sp.Vals.N {
			return nil, fmt.Errorf("%w: blob descriptors end early", errCorrupt)
		}
		v := sp.Vals.Data[sp.Vals.Offs[vi]:sp.Vals.Offs[vi+1]]
		vi++
		if sp.Def != nil && sp.Def[i] != 0 {
			out = append(out, nil)
			continue
		}
		ds, err := parseBlobV2Descriptor(v, vc)
		if err != nil {
			return nil, err
		}
		out = append(out, ds)
	}
	return out, nil
}

// blobSidecarName returns the sidecar file name of a blob id: its 32 bits
// reversed, printed as 32 binary digits.
func blobSidecarName(id uint32) string {
	return fmt.Sprintf("%032b.blob", bits.Reverse32(id))
}

// resolveBlobV2 turns a descriptor into a located blob.
func (d *Dataset) resolveBlobV2(ds *blobV2Desc, file *dataFile, df *DataFile, inline func(pos, size uint64) (Blob, error)) (Blob, error) {
	sidecar := func() string {
		key := strings.TrimSuffix(basePath(file.path), ".lance")
		return joinPath(dirPath(file.path), key, blobSidecarName(ds.blobID))
	}
	var b Blob
	switch BlobKind(ds.kind) {
	case BlobInline:
		if ds.size == 0 {
			return Blob{Kind: BlobInline}, nil
		}
		var err error
		b, err = inline(ds.position, ds.size)
		if err != nil {
			return Blob{}, err
		}
	case BlobPacked:
		b = Blob{Kind: BlobPacked, Size: int64(ds.size), Location: BlobLocation{Path: sidecar(), Offset: int64(ds.position), Size: int64(ds.size)}}
	case BlobDedicated:
		b = Blob{Kind: BlobDedicated, Size: int64(ds.size), Location: BlobLocation{Path: sidecar(), Offset: int64(ds.position), Size: int64(ds.size)}}
	case BlobExternal:
		p, err := d.externalBlobPath(ds.blobID, ds.uri)
		if err != nil {
			return Blob{}, err
		}
		size := int64(ds.size)
		if size == 0 {
			// Size 0 means the whole object from position on.
			st, err := d.fileSize(p)
			if err != nil {
				return Blob{}, err
			}
			size = st - int64(ds.position)
		}
		b = Blob{Kind: BlobExternal, Size: size, URI: ds.uri, Ranged: ds.size != 0 || ds.position != 0, Location: BlobLocation{Path: p, Offset: int64(ds.position), Size: size},
			baseRelative: ds.blobID != 0}
	case BlobManaged, blobManagedWithBase:
		var err error
		if b, err = d.managedBlob(ds); err != nil {
			return Blob{}, err
		}
	default:
		return Blob{}, fmt.Errorf("blob kind %d is not supported", ds.kind)
	}
	if b.Location.Offset < 0 || b.Location.Size < 0 {
		return Blob{}, fmt.Errorf("%w: blob at %d+%d", errCorrupt, ds.position, ds.size)
	}
	b.RefID = ds.refID
	return b, nil
}

// managedBlob resolves a managed descriptor (kind 4, or 5 for one under a
// target base): blob_id is the id of a manifest base path (any value, 0
// included) and blob_uri the object's canonical path under it, with no
// prefix added, whether or not the base is a dataset root;
// [position, position+size) is the exact range, size 0 an empty blob.
// Lance 14.0.2 writes kind 4 with id 0 without a binding for the dataset
// root, which is read as such; kind 5 must name a bound base.
func (d *Dataset) managedBlob(ds *blobV2Desc) (Blob, error) {
	if err := checkManagedPath(ds.uri); err != nil {
		return Blob{}, fmt.Errorf("%w: managed blob path %q: %v", errCorrupt, ds.uri, err)
	}
	if ds.position > math.MaxInt64 || ds.size > math.MaxInt64-ds.position {
		return Blob{}, fmt.Errorf("%w: managed blob %q: range %d+%d overflows", errCorrupt, ds.uri, ds.position, ds.size)
	}
	base, bound := "", false
	for _, bp := range d.manifest.BasePaths {
		if bp.ID == ds.blobID {
			base, bound = bp.Path, true
		}
	}
	switch {
	case !bound && ds.blobID == 0 && ds.kind == uint8(BlobManaged):
		base = d.dir
	case !bound:
		return Blob{}, fmt.Errorf("%w: managed blob %q names base path %d, which the manifest does not bind", errCorrupt, ds.uri, ds.blobID)
	}
	p := joinPath(localBase(base), ds.uri)
	b := Blob{Kind: BlobManaged, Size: int64(ds.size), URI: ds.uri, Location: BlobLocation{Path: p, Offset: int64(ds.position), Size: int64(ds.size)}}
	if ds.size == 0 {
		return b, nil
	}
	st, err := d.fileSize(p)
	if err != nil {
		return Blob{}, fmt.Errorf("managed blob %s: %w", p, err)
	}
	if end := ds.position + ds.size; uint64(st) < end {
		return Blob{}, fmt.Errorf("%w: managed blob %s: range [%d, %d) past the object's %d bytes", errCorrupt, p, ds.position, end, st)
	}
	return b, nil
}

// checkManagedPath checks a managed blob's path against the format's
// rules: non-empty and relative, no scheme, backslash, empty, "." or ".."
// component.
func checkManagedPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty")
	case strings.Contains(p, "://"):
		return errors.New("has a URI scheme")
	case strings.Contains(p, "\\"):
		return errors.New("has a backslash")
	case strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/"):
		return errors.New("starts or ends with a slash")
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("has a component %q", c)
		}
	}
	return nil
}

// localBase turns a base path (a directory or a file:// URI) into a
// directory.
func localBase(base string) string {
	if u, err := url.Parse(base); err == nil && u.Scheme == "file" {
		return u.Path
	}
	return base
}

// externalBlobPath resolves an external blob URI: blobID 0 means an absolute
// URI, otherwise a path relative to base path blobID.
func (d *Dataset) externalBlobPath(blobID uint32, uri string) (string, error) {
	if blobID != 0 {
		for _, bp := range d.manifest.BasePaths {
			if bp.ID == blobID {
				return joinPath(bp.Path, uri), nil
			}
		}
		return "", fmt.Errorf("%w: external blob names unknown base path %d", errCorrupt, blobID)
	}
	if strings.HasPrefix(uri, "/") {
		return uri, nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("external blob uri %q: %w", uri, err)
	}
	if isURL(d.dir) && strings.HasPrefix(d.dir, u.Scheme+"://") {
		// A dataset in object storage: an object of the same store,
		// which its storage reads (or refuses) like the dataset's own.
		return uri, nil
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("external blob uri %q: only local files are supported", uri)
	}
	return u.Path, nil
}

// legacyBlobs reads the blob values of a legacy data file: variable-width
// pages whose offsets are absolute file positions. As in Lance's reading of
// legacy files, an empty value is null.
func legacyBlobs(frag *Fragment, f *Field, file *dataFile, deleted *roaring.Bitmap, files *blobFiles, loc string) ([]Blob, error) {
	lm := file.legacy
	lf := lm.fields[f.ID]
	if lf == nil || lf.encoding != legacyVarBinary {
		return nil, fmt.Errorf("%s: %w: legacy blob field is not var-binary", loc, errCorrupt)
	}
	var out []Blob
	var row uint64
	for batch := range lm.batchRows {
		pos, n, err := lm.page(file.f, f.ID, batch)
		if err == nil && n > decode.MaxPageItems {
			err = fmt.Errorf("%w: page of %d values", errCorrupt, n)
		}
		var ob []byte
		if err == nil {
			ob, err = lm.readRange(file.f, pos, (n+1)*8)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: page %d: legacy encoding var_binary: %w", loc, batch, err)
		}
		for i := uint64(0); i < n; i++ {
			start := binary.LittleEndian.Uint64(ob[8*i:])
			end := binary.LittleEndian.Uint64(ob[8*i+8:])
			if end < start || end > uint64(lm.size) {
				return nil, fmt.Errorf("%s: page %d: %w: blob offsets %d..%d", loc, batch, errCorrupt, start, end)
			}
			b := Blob{Fragment: frag.ID, Row: row, files: files, Null: end == start, Size: int64(end - start), Kind: BlobInline}
			if !b.Null {
				b.Location = BlobLocation{Path: file.path, Offset: int64(start), Size: int64(end - start)}
			}
			if deleted == nil || !deleted.Contains(uint32(row)) {
				out = append(out, b)
			}
			row++
		}
	}
	if row != frag.PhysicalRows {
		return nil, fmt.Errorf("%s: %w: blob column holds %d of %d rows", loc, errCorrupt, row, frag.PhysicalRows)
	}
	return out, nil
}
