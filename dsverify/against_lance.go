package dsverify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/lancefmt/lancestore"
	"github.com/bpconvert/bpconvert/packcore"
)

// lanceRecorded reports whether a Lance table's bpconvert record names the
// columns extracted (convert-lance writes such a record): a table without
// one is compared as blobpack 0.2.0's.
func lanceRecorded(rec string) bool {
	// (source_version and pack_base decoded too: a record whose fields do
	// not decode is no convert-lance record, as its comparison reads it)
	var r struct {
		SourceVersion uint64   `json:"source_version"`
		PackBase      string   `json:"pack_base"`
		Extracted     []string `json:"extracted"`
	}
	return json.Unmarshal([]byte(rec), &r) == nil && len(r.Extracted) > 0
}

// openLance opens the Lance dataset at rel ("" for the root) of p: a local
// one directly at the tree's path of it, one in a bucket read through the
// tree. A prefix in a bucket that holds nothing gives an error
// matching lancestore.ErrEmpty.
func openLance(ctx context.Context, p place, rel string, o lancefmt.OpenOptions) (*lancefmt.Dataset, error) {
	if rel == "" && p.t.Empty() {
		return nil, emptyLance(p.t.Location())
	}
	if st, _ := p.t.Store(); st == nil {
		// on this machine: read directly at the tree's path of it
		o.Storage = nil
		return lancefmt.Open(ctx, p.t.Path(rel), o)
	}
	return lancestore.OpenIn(ctx, p.t, rel, o)
}

// emptyLance is the error for a prefix that holds no Lance dataset, nor
// anything else; it matches lancestore.ErrEmpty and fs.ErrNotExist.
type emptyLance string

func (e emptyLance) Error() string {
	return fmt.Sprintf("lance: %s %s; a Lance dataset holds _versions/ and data/", string(e), lancestore.ErrEmpty)
}

func (e emptyLance) Is(target error) bool {
	return target == lancestore.ErrEmpty || target == fs.ErrNotExist
}

// packsOf returns what opens the pack directory dir (cached by set) when
// first asked, at a Lance table's first reference: a table whose every
// value --external keep left as a URI has no pack to open.
func (v *Check) packsOf(dir string) func() (*packcore.Set, error) {
	return func() (*packcore.Set, error) {
		e := v.set(dir)
		if e.err != nil {
			return nil, fmt.Errorf("--against: pack directory %s: %w", dir, e.err)
		}
		return e.set, nil
	}
}

// lanceValues yields one column's values row by row: for a blob column a
// reader of the blob (nil for null); for a source's binary column a reader
// of the value, read in pieces (a ValueScanner holds no page, so a value of
// a 1 GB page costs a window, not the page); for the converted table's
// reference column the value's text.
type lanceValues struct {
	blobs *lancefmt.BlobScanner
	vals  *lancefmt.ValueScanner
	open  io.Closer // the reader vals handed out last, closed by next
	scan  *lancefmt.Scanner
	col   arrow.Array
	i     int
	// kept is, for a source row holding an external blob, the URI that
	// --external keep leaves as the converted cell's value.
	kept string
}

// openLanceValues opens column of ds: a source column (src) through Blobs
// or Values, a converted table's column through Scan.
func openLanceValues(v *Check, ds *lancefmt.Dataset, column string, src bool) (*lanceValues, error) {
	f := ds.Schema().Field(column)
	if f == nil {
		return nil, fmt.Errorf("%s: no column %q", ds.Dir(), column)
	}
	switch {
	case f.IsBlob():
		b, err := ds.Blobs(v.ctx, column)
		if err != nil {
			return nil, err
		}
		return &lanceValues{blobs: b}, nil
	case src:
		s, err := ds.Values(v.ctx, column, lancefmt.ValueOptions{})
		if err != nil {
			return nil, err
		}
		return &lanceValues{vals: s}, nil
	}
	s, err := ds.Scan(v.ctx, lancefmt.ScanOptions{Columns: []string{column}, BatchSize: 1024, PageBatches: true})
	if err != nil {
		return nil, err
	}
	return &lanceValues{scan: s}, nil
}

// next returns the next row's value: ok false at the end; r nil for null;
// text set for a string column of a converted table. r is valid until the
// next call.
func (lv *lanceValues) next() (r io.Reader, text string, isText, ok bool, err error) {
	if lv.open != nil {
		lv.open.Close()
		lv.open = nil
	}
	switch {
	case lv.blobs != nil:
		if !lv.blobs.Next() {
			return nil, "", false, false, lv.blobs.Err()
		}
		b := lv.blobs.Blob()
		lv.kept = ""
		if b.Null {
			return nil, "", false, true, nil
		}
		if b.Kind == lancefmt.BlobExternal {
			lv.kept = b.KeptURI()
		}
		sr, err := b.ReaderAt()
		return sr, "", false, true, err
	case lv.vals != nil:
		if !lv.vals.Next() {
			return nil, "", false, false, lv.vals.Err()
		}
		val := lv.vals.Value()
		if val.Null {
			return nil, "", false, true, nil
		}
		rc, err := val.Open()
		if err != nil {
			return nil, "", false, false, err
		}
		lv.open = rc
		return rc, "", false, true, nil
	}
	for lv.col == nil || lv.i+1 >= lv.col.Len() {
		if !lv.scan.Next() {
			return nil, "", false, false, lv.scan.Err()
		}
		lv.col, lv.i = lv.scan.RecordBatch().Column(0), -1
	}
	lv.i++
	if lv.col.IsNull(lv.i) {
		return nil, "", false, true, nil
	}
	switch c := lv.col.(type) {
	case *array.String:
		return nil, c.Value(lv.i), true, true, nil
	case *array.LargeString:
		return nil, c.Value(lv.i), true, true, nil
	}
	return bytes.NewReader(binaryValue(lv.col, lv.i)), "", false, true, nil
}

func (lv *lanceValues) close() {
	if lv.open != nil {
		lv.open.Close()
	}
	if lv.blobs != nil {
		lv.blobs.Close()
	}
	if lv.vals != nil {
		lv.vals.Close()
	}
	if lv.scan != nil {
		lv.scan.Close()
	}
}

func (v *Check) compareLanceColumn(a *Against, srcDS, outDS *lancefmt.Dataset, rel, column string, packs func() (*packcore.Set, error)) error {
	sv, err := openLanceValues(v, srcDS, column, true)
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	defer sv.close()
	ov, err := openLanceValues(v, outDS, column, false)
	if err != nil {
		a.Mismatches++
		v.problem(Problem{Table: rel, Row: -1, Column: column, Reason: err.Error()})
		return nil
	}
	defer ov.close()
	for row := int64(0); ; row++ {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		sr, _, _, sok, err := sv.next()
		if err != nil {
			return fmt.Errorf("--against: source column %q: row %d: %w", column, row, err)
		}
		_, ref, isText, ook, err := ov.next()
		if err != nil {
			a.Mismatches++
			v.problem(Problem{Table: rel, Row: row, Column: column, Reason: err.Error()})
			return nil
		}
		if sok != ook {
			a.Mismatches++
			v.problem(Problem{Table: rel, Row: row, Column: column, Reason: "the table and its source have different row counts"})
			return nil
		}
		if !sok {
			return nil
		}
		p := Problem{Table: rel, Row: row, Column: column}
		switch {
		case sr == nil && !isText:
			continue // null in both
		case sr == nil || !isText:
			v.compared(a, 0, "null in one of the source and the table only", p)
			continue
		case !packcore.IsRef(ref) && sv.kept != "":
			// An external blob's URI, kept as the value.
			a.KeptURIs++
			reason := ""
			if ref != sv.kept {
				reason = fmt.Sprintf("holds %q, not the URI of the source's external blob (%s)", ref, sv.kept)
			}
			v.compared(a, 0, reason, p)
			continue
		case !packcore.IsRef(ref):
			v.compared(a, 0, fmt.Sprintf("holds %q, which is not a pack reference", ref), p)
			continue
		}
		p.Ref = ref
		set, err := packs()
		if err != nil {
			return err
		}
		key, _, _ := packcore.ParseRef(ref)
		n, reason, err := sameBytes(sr, set, key)
		if err != nil {
			return err
		}
		v.compared(a, n, reason, p)
	}
}
