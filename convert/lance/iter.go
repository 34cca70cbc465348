package lance

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bpconvert/bpconvert/convert"
	ld "github.com/bpconvert/bpconvert/lance"
	"github.com/bpconvert/bpconvert/sniff"
)

// cell is one row's value of a candidate column.
type cell struct {
	frag, phys uint64 // fragment id and physical row offset
	null       bool
	size       int64
	data       []byte   // plain binary columns: the value (valid until the next row)
	blob       *ld.Blob // blob columns: the handle
}

// reader returns the value's bytes.
func (c *cell) reader() (io.Reader, error) {
	if c.blob == nil {
		return bytes.NewReader(c.data), nil
	}
	return c.blob.ReaderAt()
}

// prefix returns the first bytes of the value, for sniffing.
func (c *cell) prefix() ([]byte, error) {
	if c.blob == nil {
		return c.data[:min(len(c.data), sniff.PrefixLen)], nil
	}
	r, err := c.blob.ReaderAt()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, min(c.size, sniff.PrefixLen))
	if _, err := r.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// rowIter yields a column's cells in scan order (deleted rows skipped).
type rowIter interface {
	Next() bool
	Cell() *cell
	Err() error
	Close() error
}

// iterate opens the row iterator of a candidate column: every fragment's
// rows, or, when keep is not nil, only those of the fragments in keep
// (ids, in order).
func (j *Job) iterate(ctx context.Context, c *candidate, keep map[uint64]bool, ids []uint64) (rowIter, error) {
	if c.blob > 0 {
		sc, err := j.ds.Blobs(ctx, c.field.Name)
		if err != nil {
			return nil, j.invalid(c, err)
		}
		// Blob handles are descriptors: skipping another part's rows
		// reads none of their bytes.
		return &blobIter{sc: sc, keep: keep}, nil
	}
	sc, err := j.ds.Scan(ctx, ld.ScanOptions{Columns: []string{c.field.Name}, Fragments: ids, PageBatches: true})
	if err != nil {
		return nil, j.invalid(c, err)
	}
	frags := map[uint64]*ld.Fragment{}
	for i, f := range j.ds.Fragments() {
		frags[f.ID] = &j.ds.Fragments()[i]
	}
	return &binIter{j: j, sc: sc, frags: frags}, nil
}

// invalid wraps a reader error as an input error naming the dataset and
// column (the reader's message names fragment, file and page).
func (j *Job) invalid(c *candidate, err error) *convert.InputError {
	ie := j.located(err)
	ie.Column = c.field.Name
	return ie
}

// located wraps err as an input error, naming the dataset unless the
// reader's message already does.
func (j *Job) located(err error) *convert.InputError {
	if strings.HasPrefix(err.Error(), "lance: ") {
		return convert.Invalid("", "", err)
	}
	return convert.Invalid("lance", j.src, err)
}

type blobIter struct {
	sc   *ld.BlobScanner
	keep map[uint64]bool // nil for every fragment
	cur  cell
}

func (b *blobIter) Next() bool {
	for b.sc.Next() {
		bl := b.sc.Blob()
		if b.keep != nil && !b.keep[bl.Fragment] {
			continue
		}
		b.cur = cell{frag: bl.Fragment, phys: bl.Row, null: bl.Null, size: bl.Size, blob: bl}
		return true
	}
	return false
}
func (b *blobIter) Cell() *cell  { return &b.cur }
func (b *blobIter) Err() error   { return b.sc.Err() }
func (b *blobIter) Close() error { return b.sc.Close() }

// binaryValues is what binary and large_binary arrays have in common.
type binaryValues interface {
	arrow.Array
	Value(i int) []byte
}

type binIter struct {
	j     *Job
	sc    *ld.Scanner
	frags map[uint64]*ld.Fragment

	started bool
	frag    uint64
	del     *roaring.Bitmap
	phys    uint64
	arr     binaryValues
	i       int
	cur     cell
	err     error
}

func (b *binIter) Next() bool {
	for b.arr == nil || b.i >= b.arr.Len() {
		if !b.sc.Next() {
			b.err = b.sc.Err()
			return false
		}
		rec := b.sc.RecordBatch()
		if f := b.sc.Fragment(); !b.started || f != b.frag {
			fr := b.frags[f]
			if fr == nil {
				b.err = fmt.Errorf("scan yields unknown fragment %d", f)
				return false
			}
			del, err := b.j.ds.Deleted(fr)
			if err != nil {
				b.err = err
				return false
			}
			b.started, b.frag, b.del, b.phys = true, f, del, 0
		}
		arr, ok := rec.Column(0).(binaryValues)
		if !ok {
			b.err = fmt.Errorf("column is %s, not binary", rec.Column(0).DataType())
			return false
		}
		b.arr, b.i = arr, 0
	}
	for b.del != nil && b.del.Contains(uint32(b.phys)) {
		b.phys++
	}
	b.cur = cell{frag: b.frag, phys: b.phys}
	if b.arr.IsNull(b.i) {
		b.cur.null = true
	} else {
		b.cur.data = b.arr.Value(b.i)
		b.cur.size = int64(len(b.cur.data))
	}
	b.phys++
	b.i++
	return true
}
func (b *binIter) Cell() *cell  { return &b.cur }
func (b *binIter) Err() error   { return b.err }
func (b *binIter) Close() error { return b.sc.Close() }
