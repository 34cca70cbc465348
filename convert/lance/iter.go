package lance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/lancefmt/lancestore"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/sniff"
)

// cell is one row's value of a candidate column.
type cell struct {
	frag, phys uint64 // fragment id and physical row offset
	null       bool
	size       int64
	val        *lancefmt.Value // plain binary columns: the value (valid until the next row)
	blob       *lancefmt.Blob  // blob columns: the handle
}

// reader returns the value's bytes; the caller closes it.
func (c *cell) reader() (io.ReadCloser, error) {
	if c.blob == nil {
		return c.val.Open()
	}
	r, err := c.blob.ReaderAt()
	if err != nil {
		return nil, err
	}
	return io.NopCloser(r), nil
}

// prefix returns the first bytes of the value, for sniffing.
func (c *cell) prefix() ([]byte, error) {
	if c.blob == nil {
		return c.val.Prefix(sniff.PrefixLen)
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
		if ids != nil {
			// An append's new fragments: the others are not opened.
			sc, err = j.ds.BlobsOf(ctx, c.field.Name, ids)
		}
		if err != nil {
			return nil, j.invalid(c, err)
		}
		// Blob handles are descriptors: skipping another part's rows
		// reads none of their bytes.
		return &blobIter{sc: sc, keep: keep}, nil
	}
	// Plain binary values are read item by item, never a page whole
	// where the page's layout allows it (see lancefmt.ValueScanner).
	vs, err := j.ds.Values(ctx, c.field.Name, lancefmt.ValueOptions{Fragments: ids})
	if err != nil {
		return nil, j.invalid(c, err)
	}
	return &binIter{sc: vs}, nil
}

// invalid wraps a reader error as an input error naming the dataset and
// column (the reader's message names fragment, file and page).
func (j *Job) invalid(c *candidate, err error) *convert.InputError {
	ie := j.located(err)
	ie.Column = c.field.Name
	return ie
}

// storeFailed reports whether err is a failure of object storage (not
// reachable, credentials refused, no bucket) rather than of the data.
func storeFailed(err error) bool {
	return errors.Is(err, objstore.ErrUnavailable) || errors.Is(err, objstore.ErrDenied) || errors.Is(err, objstore.ErrNoBucket)
}

// storeFirst returns the failure of the store that a read of a source in
// object storage met, when there was one, instead of err: a page that does
// not decode because the bucket stopped answering is not bad input (exit 3)
// but a failure (exit 1, or 2 for refused credentials).
func (j *Job) storeFirst(err error) error {
	if err == nil || j.ds == nil || errors.Is(err, context.Canceled) {
		return err
	}
	if serr := lancestore.Err(j.ds); serr != nil {
		return fmt.Errorf("lance: %s: %w", j.src, serr)
	}
	return err
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
	sc   *lancefmt.BlobScanner
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

// binIter yields the values of a plain binary column.
type binIter struct {
	sc  *lancefmt.ValueScanner
	cur cell
}

func (b *binIter) Next() bool {
	if !b.sc.Next() {
		return false
	}
	v := b.sc.Value()
	b.cur = cell{frag: v.Fragment, phys: v.Row, null: v.Null, size: v.Size, val: v}
	return true
}
func (b *binIter) Cell() *cell  { return &b.cur }
func (b *binIter) Err() error   { return b.sc.Err() }
func (b *binIter) Close() error { return b.sc.Close() }
