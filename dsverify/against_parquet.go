package dsverify

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/bpconvert/bpconvert/internal/pqread"
	"github.com/bpconvert/bpconvert/packcore"
)

// keptCount counts the kept columns compared and their values.
type keptCount struct{ columns, values int64 }

// compareKept compares the columns of a rewritten table that hold no
// extracted field (kept as they were) with the source's, value by value:
// a changed type or value is a mismatch, named by column and row.
func (v *Check) compareKept(a *Against, kc *keptCount, srcPath, outPath treeFile, rel string, extracted []string) error {
	names, err := v.columnNames(srcPath)
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	for _, name := range names {
		if slices.Contains(extracted, name) {
			continue
		}
		if err := v.compareKeptColumn(a, kc, srcPath, outPath, rel, name); err != nil {
			return err
		}
	}
	return nil
}

// columnNames lists the top-level columns of a source table.
func (v *Check) columnNames(p treeFile) ([]string, error) {
	if strings.HasSuffix(p.rel, ".arrow") {
		c, err := v.openArrowColumn(p, "")
		if err != nil {
			return nil, err
		}
		defer c.close()
		var names []string
		for _, f := range c.schema.Fields() {
			names = append(names, f.Name)
		}
		return names, nil
	}
	pf, err := v.openParquet(p)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	root := pf.MetaData().Schema.Root()
	names := make([]string, root.NumFields())
	for i := range names {
		names[i] = root.Field(i).Name()
	}
	return names, nil
}

// compareKeptColumn compares one kept column of a table with its source.
func (v *Check) compareKeptColumn(a *Against, kc *keptCount, srcPath, outPath treeFile, rel, name string) error {
	sc, err := v.openColumn(srcPath, name)
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	defer sc.close()
	kc.columns++
	mismatch := func(row int64, reason string) {
		a.Mismatches++
		v.problem(Problem{Table: rel, Row: row, Column: name, Reason: reason})
	}
	oc, err := v.openColumn(outPath, name)
	if err != nil {
		mismatch(-1, "kept column: "+err.Error())
		return nil
	}
	defer oc.close()
	for row := int64(0); ; row++ {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		sok, ook := sc.next(), oc.next()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("--against: %s: row %d: %w", srcPath, row, err)
		}
		if err := oc.Err(); err != nil {
			mismatch(row, err.Error())
			return nil
		}
		if sok != ook {
			mismatch(row, "the table and its source have different row counts")
			return nil
		}
		if !sok {
			return nil
		}
		st, ot := sc.col.DataType(), oc.col.DataType()
		if !arrow.TypeEqual(st, ot) {
			mismatch(-1, fmt.Sprintf("kept column: type %s in the source, %s in the table", st, ot))
			return nil
		}
		kc.values++
		if !array.SliceEqual(sc.col, int64(sc.i), int64(sc.i+1), oc.col, int64(oc.i), int64(oc.i+1)) {
			mismatch(row, "kept column: the value differs from the source's")
		}
	}
}

// columnCursor reads one top-level column of a table row by row: a
// parquet file, or an Arrow IPC file (stream or file format) such as a
// Hugging Face save_to_disk data file.
type columnCursor struct {
	schema *arrow.Schema
	batch  func() (arrow.RecordBatch, bool) // the next record batch
	index  int                              // the column's position in a batch
	done   func()
	err    func() error
	rec    arrow.RecordBatch
	col    arrow.Array
	i      int
}

func (v *Check) openColumn(p treeFile, root string) (*columnCursor, error) {
	if strings.HasSuffix(p.rel, ".arrow") {
		return v.openArrowColumn(p, root)
	}
	pf, err := v.openParquet(p)
	if err != nil {
		return nil, err
	}
	sd := pf.MetaData().Schema
	var cols []int
	for i := 0; i < sd.NumColumns(); i++ {
		if sd.ColumnRoot(i).Name() == root {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		pf.Close()
		return nil, fmt.Errorf("%s: no column %q", p, root)
	}
	fr, _, err := pqread.Open(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return nil, err
	}
	rr, err := fr.GetRecordReader(v.ctx, cols, nil)
	if err != nil {
		pf.Close()
		return nil, err
	}
	return &columnCursor{
		batch: func() (arrow.RecordBatch, bool) {
			if !rr.Next() {
				return nil, false
			}
			return rr.RecordBatch(), true
		},
		done: func() { rr.Release(); pf.Close() },
		err:  rr.Err,
	}, nil
}

// openArrowColumn reads column root of an Arrow IPC file: the file format
// (ARROW1 magic) or a stream, as Hugging Face save_to_disk writes.
func (v *Check) openArrowColumn(p treeFile, root string) (*columnCursor, error) {
	f, err := p.open(v.ctx)
	if err != nil {
		return nil, err
	}
	magic := make([]byte, 6)
	_, rerr := f.ReadAt(magic, 0)
	c := &columnCursor{}
	var schema *arrow.Schema
	if rerr == nil && string(magic) == "ARROW1" {
		fr, err := ipc.NewFileReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		schema = fr.Schema()
		next := 0
		var last arrow.RecordBatch
		var ferr error
		c.batch = func() (arrow.RecordBatch, bool) {
			if last != nil {
				last.Release()
				last = nil
			}
			if next >= fr.NumRecords() {
				return nil, false
			}
			last, ferr = fr.RecordBatch(next)
			next++
			return last, ferr == nil
		}
		c.done = func() {
			if last != nil {
				last.Release()
			}
			fr.Close()
			f.Close()
		}
		c.err = func() error { return ferr }
	} else {
		seq := f.stream(v.ctx)
		sr, err := ipc.NewReader(seq)
		if err != nil {
			seq.Close()
			f.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		schema = sr.Schema()
		c.batch = func() (arrow.RecordBatch, bool) {
			if !sr.Next() {
				return nil, false
			}
			return sr.RecordBatch(), true
		}
		c.done = func() { sr.Release(); seq.Close(); f.Close() }
		c.err = sr.Err
	}
	c.schema = schema
	if root == "" { // every column (arrowTable)
		return c, nil
	}
	idx := schema.FieldIndices(root)
	if len(idx) == 0 {
		c.done()
		return nil, fmt.Errorf("%s: no column %q", p, root)
	}
	c.index = idx[0]
	return c, nil
}

// next moves to the next row; false at the end (or at a read error, which
// Err then returns).
func (c *columnCursor) next() bool {
	for c.col == nil || c.i+1 >= c.col.Len() {
		rec, ok := c.batch()
		if !ok {
			return false
		}
		c.rec = rec
		c.col, c.i = c.rec.Column(c.index), -1
	}
	c.i++
	return true
}

// Err returns the error that ended the rows early, if any.
func (c *columnCursor) Err() error {
	if err := c.err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func (c *columnCursor) close() { c.done() }

// compareColumn compares one extracted field of one table, srcPath in the
// source sp (whose media files are named relative to its directory base),
// with outPath of the dataset.
func (v *Check) compareColumn(a *Against, sp place, base string, srcPath, outPath treeFile, rel string, fpath []string, set *packcore.Set) error {
	sc, err := v.openColumn(srcPath, fpath[0])
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	defer sc.close()
	oc, err := v.openColumn(outPath, fpath[0])
	if err != nil {
		v.problem(Problem{Table: rel, Row: -1, Column: strings.Join(fpath, "."), Reason: err.Error()})
		a.Mismatches++
		return nil
	}
	defer oc.close()
	column := strings.Join(fpath, ".")
	var row int64
	for ; ; row++ {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		sok, ook := sc.next(), oc.next()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("--against: %s: row %d: %w", srcPath, row, err)
		}
		if err := oc.Err(); err != nil {
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
			break
		}
		var srcLeaves, outLeaves []leaf
		walkLeaves(sc.col, sc.i, fpath[1:], &srcLeaves)
		walkLeaves(oc.col, oc.i, fpath[1:], &outLeaves)
		p := Problem{Table: rel, Row: row, Column: column}
		if len(srcLeaves) != len(outLeaves) {
			v.compared(a, 0, fmt.Sprintf("%d values in the source, %d in the table", len(srcLeaves), len(outLeaves)), p)
			continue
		}
		for k, s := range srcLeaves {
			o := outLeaves[k]
			switch {
			case s.null && o.null:
				continue
			case s.null != o.null:
				v.compared(a, 0, "null in one of the source and the table only", p)
				continue
			case s.str:
				continue // not a payload
			case s.bytes == nil && remoteCell(s.path) && packcore.IsRef(o.text):
				// a remote value fetched and packed (convert-parquet
				// --fetch-remote): verify does not fetch it again; the
				// member must be there and read back whole
				a.FetchedURIs++
				key, _, _ := packcore.ParseRef(o.text)
				p.Ref = o.text
				v.compared(a, 0, readableMember(set, key), p)
				continue
			case s.bytes == nil && remoteCell(s.path):
				// a remote value, kept as it is (convert-parquet without
				// --strict-remote)
				a.KeptURIs++
				got, reason := o.text, ""
				if got == "" {
					got = o.path
				}
				if got != s.path {
					reason = fmt.Sprintf("holds %q, not the source's remote path %q", got, s.path)
				}
				v.compared(a, 0, reason, p)
				continue
			}
			if !packcore.IsRef(o.text) {
				v.compared(a, 0, fmt.Sprintf("value %q is not a reference", o.text), p)
				continue
			}
			p.Ref = o.text
			key, _, _ := packcore.ParseRef(o.text)
			if s.bytes == nil && s.path != "" {
				// a struct<bytes, path> whose bytes are the file at path,
				// relative to the dataset root
				seq, err := mediaFile(sp, base, s.path).stream(v.ctx)
				if err != nil {
					v.compared(a, 0, fmt.Sprintf("source file %s: %v", s.path, err), p)
					continue
				}
				n, reason, err := sameBytes(seq, set, key)
				seq.Close()
				if err != nil {
					return err
				}
				v.compared(a, n, reason, p)
				continue
			}
			n, reason, err := sameBytes(bytes.NewReader(s.bytes), set, key)
			if err != nil {
				return err
			}
			v.compared(a, n, reason, p)
		}
	}
	return nil
}

// mediaFile is the file a media value's path names in the source sp:
// relative to its directory base, or on this machine an absolute path
// (inside the source's root, where a conversion reads it).
func mediaFile(sp place, base, name string) treeFile {
	if p := filepath.FromSlash(name); filepath.IsAbs(p) && !sp.t.Remote() {
		rel, err := filepath.Rel(sp.t.Location(), p)
		if err != nil {
			rel = p
		}
		return treeFile{t: sp.t, rel: filepath.ToSlash(rel), name: p}
	}
	rel := path.Join(base, strings.TrimPrefix(path.Clean(name), "/"))
	return treeFile{t: sp.t, rel: rel, name: sp.join(rel)}
}

// remoteCell reports whether the path of a media value whose bytes are
// null names a file elsewhere (a URL such as hf://, https://, s3://, or an
// fsspec chain), which convert-parquet keeps as it is.
func remoteCell(p string) bool {
	return strings.Contains(p, "://") || strings.Contains(p, "::")
}

// leaf is one value at the end of a field path: a payload (bytes, or a
// struct<bytes, path>) in a source, a string in a rewritten table.
type leaf struct {
	null  bool
	bytes []byte
	path  string
	text  string
	str   bool
}

// walkLeaves collects the values a field path reaches from row i: struct
// fields by name, every element of lists (list levels are not named in the
// path, as convert-parquet records them).
func walkLeaves(a arrow.Array, i int, fpath []string, out *[]leaf) {
	if a.IsNull(i) {
		if len(fpath) == 0 {
			*out = append(*out, leaf{null: true})
		}
		return
	}
	switch arr := a.(type) {
	case array.ListLike:
		start, end := arr.ValueOffsets(i)
		for k := start; k < end; k++ {
			walkLeaves(arr.ListValues(), int(k), fpath, out)
		}
		return
	case *array.Struct:
		st := arr.DataType().(*arrow.StructType)
		if len(fpath) > 0 {
			if k, ok := st.FieldIdx(fpath[0]); ok {
				walkLeaves(arr.Field(k), i, fpath[1:], out)
			}
			return
		}
		l := leaf{}
		if k, ok := st.FieldIdx("bytes"); ok && !arr.Field(k).IsNull(i) {
			l.bytes = binaryValue(arr.Field(k), i)
			if l.bytes == nil {
				l.bytes = []byte{}
			}
		}
		if k, ok := st.FieldIdx("path"); ok && !arr.Field(k).IsNull(i) {
			if s, ok := arr.Field(k).(*array.String); ok {
				l.path = s.Value(i)
			}
		}
		l.null = l.bytes == nil && l.path == ""
		if l.bytes == nil && packcore.IsRef(l.path) {
			l.text = l.path // a media struct kept by convert-parquet: its path is the reference
		}
		*out = append(*out, l)
		return
	case *array.String:
		*out = append(*out, leaf{text: arr.Value(i), str: true})
		return
	case *array.LargeString:
		*out = append(*out, leaf{text: arr.Value(i), str: true})
		return
	}
	b := binaryValue(a, i)
	if b == nil {
		b = []byte{}
	}
	*out = append(*out, leaf{bytes: b})
}

func binaryValue(a arrow.Array, i int) []byte {
	switch arr := a.(type) {
	case *array.Binary:
		return arr.Value(i)
	case *array.LargeBinary:
		return arr.Value(i)
	case *array.FixedSizeBinary:
		return arr.Value(i)
	case *array.BinaryView:
		return arr.Value(i)
	}
	return nil
}
