package parquet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bpconvert/bpconvert/convert/parquet/hfdisk"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/capalloc"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/sniff"
	"github.com/bpconvert/bpconvert/srctree"
)

// Hugging Face save_to_disk directories.
//
// Dataset.save_to_disk(dir) writes dir/data-NNNNN-of-NNNNN.arrow (Arrow IPC
// streams whose schema carries the "huggingface" metadata), dir/state.json
// (which lists them under _data_files) and dir/dataset_info.json;
// DatasetDict.save_to_disk(dir) writes dir/dataset_dict.json ({"splits":
// [...]}) and one such directory per split. Such a source is converted like
// a directory of parquet tables, and its output is a save_to_disk
// directory again, which datasets.load_from_disk reads: every data file
// named by a state.json is a table, read record batch by record batch and
// written again as an Arrow IPC stream at the same path (same batches,
// selected fields rewritten, the huggingface metadata as the features now
// are); state.json and dataset_dict.json are copied; and the
// dataset_info.json of every dataset directory declares the features as
// they now are, as the card of a parquet dataset does.

// diskLayout is what a save_to_disk directory holds besides its tables.
type diskLayout struct {
	// dict is true for a DatasetDict; datasets are the dataset
	// directories relative to the root ("" for a Dataset at the root).
	dict     bool
	datasets []string
	// infos are the dataset_info.json files beside the data files.
	infos map[string]bool
}

// detectDisk recognises a save_to_disk directory (hfdisk.Detect) and moves
// the data files its state.json files name from the other files to the
// tables. A save_to_disk directory with parquet files is refused too.
func (in *inputs) detectDisk(ctx context.Context) error {
	if in.single {
		return nil
	}
	byRel := map[string]inputFile{}
	names := make([]string, 0, len(in.others))
	for _, o := range in.others {
		byRel[o.rel] = o
		names = append(names, o.rel)
	}
	l, err := hfdisk.Detect(names, func(rel string) ([]byte, error) { return in.readMeta(ctx, rel) })
	var fe *hfdisk.FileError
	if errors.As(err, &fe) {
		return diskErr(fe.File, srcfile.Cause(fe.Err))
	}
	if err != nil || l == nil {
		return err
	}
	if len(in.tables) > 0 {
		marker := hfdisk.StateName
		if l.Dict {
			marker = hfdisk.DictName
		}
		return diskErr(in.tables[0].rel, fmt.Errorf("a parquet file inside a Hugging Face save_to_disk directory (%s at the root); convert the parquet files and the save_to_disk dataset separately", marker))
	}
	for _, df := range l.DataFiles {
		f := byRel[df.Rel]
		f.arrow, f.dataset = true, df.Dataset
		in.tables = append(in.tables, f)
	}
	others := in.others[:0:0]
	for _, o := range in.others {
		if l.Has(o.rel) {
			continue
		}
		if strings.HasSuffix(o.rel, ".arrow") {
			in.warnings = append(in.warnings, fmt.Sprintf("%s is not named by a state.json (a cache file?); copied unchanged", o.rel))
		}
		others = append(others, o)
	}
	in.others = others
	in.disk = &diskLayout{dict: l.Dict, datasets: l.Datasets, infos: l.Infos}
	return nil
}

func diskErr(file string, err error) error {
	return &InputError{Source: "parquet", File: file, Row: -1, Offset: -1, Err: err}
}

// noTables is the error for a source without tables.
func noTables(src string, in *inputs) error {
	for _, o := range in.others {
		if strings.HasSuffix(o.rel, ".arrow") {
			return &InputError{Source: "parquet", File: src, Row: -1, Offset: -1,
				Err:  errors.New("no *.parquet files, and no state.json or dataset_dict.json at the root to name the *.arrow files"),
				Hint: "convert-parquet reads Arrow files as Hugging Face save_to_disk writes them: point it at the directory holding state.json (a Dataset) or dataset_dict.json (a DatasetDict)"}
		}
	}
	return inputErr(src, -1, "", "no *.parquet files")
}

// metaKind says which feature declarations the other file rel holds:
// cardName for the dataset card at the root, infoName for a
// dataset_info.json at the root or beside a save_to_disk dataset's data
// files, "" for any other file.
func (in *inputs) metaKind(rel string) string {
	switch {
	case rel == cardName:
		return cardName
	case rel == infoName, in.disk != nil && in.disk.infos[rel]:
		return infoName
	}
	return ""
}

// checkSchema refuses an Arrow table whose schema differs from that of an
// earlier data file of the same save_to_disk dataset: datasets writes one
// schema for all of them, and the output tables would not form one dataset.
func (in *inputs) checkSchema(t *Table, earlier []*Table) error {
	if !t.Arrow {
		return nil
	}
	dir := path.Dir(t.Rel)
	for _, e := range earlier {
		if !e.Arrow || path.Dir(e.Rel) != dir {
			continue
		}
		if e.schema.Equal(t.schema) {
			return nil
		}
		return inputErr(t.Rel, -1, "", "schema differs from %s's (the data files of one dataset share a schema): %s", e.Rel, schemaDiff(e.schema, t.schema))
	}
	return nil
}

// schemaDiff names the first difference between two schemas.
func schemaDiff(a, b *arrow.Schema) string {
	for i := 0; i < max(a.NumFields(), b.NumFields()); i++ {
		switch {
		case i >= a.NumFields():
			return fmt.Sprintf("extra field %q", b.Field(i).Name)
		case i >= b.NumFields():
			return fmt.Sprintf("field %q missing", a.Field(i).Name)
		}
		fa, fb := a.Field(i), b.Field(i)
		if !fa.Equal(fb) {
			return fmt.Sprintf("field %d is %s, not %s", i, fb, fa)
		}
	}
	return "field metadata differs"
}

// arrowReader reads the record batches of an Arrow IPC file in the stream
// format (what datasets writes) or in the file format, one at a time.
type arrowReader struct {
	rel    string
	f      srctree.File
	seq    io.ReadCloser // the stream format's reader of f
	stream *ipc.Reader
	count  *countingReader
	file   *ipc.FileReader
	batch  int   // batches returned so far
	row    int64 // rows returned so far
}

// arrowMagic starts an Arrow IPC file in the file format.
var arrowMagic = []byte("ARROW1")

// openArrow opens the Arrow IPC file rel of a tree; errors are
// *InputError values naming rel. With schemaOnly the reader is for the
// schema alone: a file in a bucket is read in small exact reads rather
// than streamed ahead.
func (in *inputs) openArrow(ctx context.Context, rel string, schemaOnly bool, mem memory.Allocator) (*arrowReader, error) {
	f, err := in.tree.Open(ctx, rel)
	if err != nil {
		return nil, inputErr(rel, -1, "", "%w", srcfile.Cause(err))
	}
	if schemaOnly {
		f = srctree.Exact(f)
	}
	return readArrow(ctx, rel, f, schemaOnly, mem)
}

// openArrow opens the Arrow IPC file name of the given size on this
// machine (a part's output, which finalize joins); errors are *InputError
// values naming rel.
func openArrow(rel, name string, size int64, mem memory.Allocator) (*arrowReader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, inputErr(rel, -1, "", "%w", err)
	}
	return readArrow(context.Background(), rel, osFile{File: f, size: size}, false, mem)
}

// readArrow reads the Arrow IPC file f, closing it when the reader is
// closed or on error: a file in the file format through ranged reads of
// its footer and batches, a stream front to back (read ahead when f is in
// a bucket; with schemaOnly, through block-sized reads). Errors are
// *InputError values naming rel. Buffers come from mem, through a cap that
// turns a length no file of this size can hold into an error instead of an
// allocation that would end the process.
func readArrow(ctx context.Context, rel string, f srctree.File, schemaOnly bool, mem memory.Allocator) (r *arrowReader, err error) {
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	size := f.Size()
	mem = capalloc.New(mem, capalloc.Limits{Buffer: max(8*size, 256<<20)})
	head := make([]byte, len(arrowMagic))
	n, _ := f.ReadAt(head, 0)
	isFile := n == len(head) && bytes.Equal(head, arrowMagic)
	if err := hfdisk.CheckSchema(f, size, isFile); err != nil {
		return nil, inputErr(rel, -1, "", "schema: %w", err)
	}
	if isFile {
		fr, err := ipc.NewFileReader(io.NewSectionReader(f, 0, size), ipc.WithAllocator(mem))
		if err != nil {
			return nil, inputErr(rel, -1, "", "not a readable Arrow IPC file: %w", err)
		}
		return &arrowReader{rel: rel, f: f, file: fr}, nil
	}
	seq, bufSize := srctree.Stream(ctx, f), 1<<20
	if schemaOnly {
		// the schema message, which the block hfdisk.CheckSchema read holds
		// but for a schema larger than it
		seq, bufSize = io.NopCloser(io.NewSectionReader(f, 0, size)), srctree.BlockSize
	}
	c := &countingReader{r: bufio.NewReaderSize(seq, bufSize)}
	sr, err := ipc.NewReader(c, ipc.WithAllocator(mem))
	if err != nil {
		seq.Close()
		return nil, inputErr(rel, -1, "", "not a readable Arrow IPC stream: %w", err)
	}
	return &arrowReader{rel: rel, f: f, seq: seq, stream: sr, count: c}, nil
}

// Schema returns the file's schema.
func (r *arrowReader) Schema() *arrow.Schema {
	if r.file != nil {
		return r.file.Schema()
	}
	return r.stream.Schema()
}

// Next returns the next record batch, which the caller releases, or nil at
// the end. A stream that ends without its end-of-stream marker (a file cut
// at a message boundary) is an error, as is any undecodable message.
func (r *arrowReader) Next() (rec arrow.RecordBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			rec, err = nil, r.batchErr(fmt.Errorf("cannot decode: %v", p))
		}
	}()
	if r.file != nil {
		if r.batch >= r.file.NumRecords() {
			return nil, nil
		}
		rec, err := r.file.RecordBatchAt(r.batch)
		if err != nil {
			return nil, r.batchErr(err)
		}
		r.batch++
		r.row += rec.NumRows()
		return rec, nil
	}
	before := r.count.n
	if !r.stream.Next() {
		if err := r.stream.Err(); err != nil {
			return nil, r.batchErr(err)
		}
		if r.count.n == before {
			// The reader took a bare EOF for the end: the end-of-stream
			// marker every writer puts there is missing.
			return nil, r.batchErr(errors.New("the stream ends without its end-of-stream marker (the file is truncated)"))
		}
		return nil, nil
	}
	rec = r.stream.RecordBatch()
	rec.Retain()
	r.batch++
	r.row += rec.NumRows()
	return rec, nil
}

// batchErr locates an error at the batch about to be read: its index and
// its first row.
func (r *arrowReader) batchErr(err error) error {
	return &InputError{Source: "parquet", File: r.rel, Row: r.row, Offset: -1,
		Err: fmt.Errorf("record batch %d: %w", r.batch, err)}
}

// Close releases the reader and closes the file.
func (r *arrowReader) Close() {
	if r.stream != nil {
		r.stream.Release()
		r.seq.Close()
	}
	if r.file != nil {
		r.file.Close()
	}
	r.f.Close()
}

// osFile is a file on this machine read as a srctree.File.
type osFile struct {
	*os.File
	size int64
}

func (f osFile) Size() int64 { return f.size }

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// inspectArrow reads an Arrow data file of a save_to_disk dataset: its
// schema and features, and every record batch, counting rows and payload
// bytes and sampling the first values of each candidate. It is a full read
// of the file (an Arrow stream has no footer that counts its rows), one
// batch at a time.
//
// With Options.QuickPlan a file in a bucket is read only as far as its
// schema: the table's rows, payload bytes and sample are left for the
// conversion (Table.Uncounted), which reads the file once.
func inspectArrow(ctx context.Context, in *inputs, f inputFile, opts Options, warnings *[]string) (t *Table, err error) {
	defer recovered(f.rel, &err)
	quick := opts.QuickPlan && in.tree.Remote()
	r, err := in.openArrow(ctx, f.rel, quick, opts.Allocator)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	sc := r.Schema()
	t = &Table{Rel: f.rel, OutRel: f.rel, Path: in.where(f), Size: f.size, Arrow: true, schema: sc, src: f, Uncounted: quick}
	var features json.RawMessage
	if v, ok := sc.Metadata().GetValue(HFKey); ok {
		t.HF = v
		if features, err = parseHFMeta(f.rel, v); err != nil {
			return nil, err
		}
	}
	t.findCandidates(features, warnings)
	if quick {
		return t, nil
	}
	nulls := make([]int64, len(t.Candidates)) // every value read: the whole count
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, err := r.Next()
		if err != nil {
			return nil, err
		}
		if rec == nil {
			break
		}
		for i := range t.Candidates {
			c := &t.Candidates[i]
			col := rec.Column(rec.Schema().FieldIndices(c.Path[0])[0])
			visitPayloads(col, c.Path[1:], c.Struct, allLive(col.Len()), func(val []byte, valid bool, name string) {
				if valid {
					c.ChunkBytes += int64(len(val))
				} else if name == "" {
					nulls[i]++
				}
				if c.Evidence.Sampled >= int64(opts.SampleSize) {
					return
				}
				if !valid && name != "" {
					in.sampleFile(ctx, t.Rel, c, name, opts.StrictRemote, warnings)
					return
				}
				if !valid {
					c.Evidence.AddNull()
					return
				}
				c.Evidence.Add(int64(len(val)), sniff.Detect(val[:min(len(val), sniff.PrefixLen)]).Label)
			})
		}
		t.Rows += rec.NumRows()
		t.RowGroups++
		rec.Release()
	}
	for i := range t.Candidates {
		c := &t.Candidates[i]
		c.Rows = t.Rows
		c.Evidence.Values = t.Rows
		if f, _ := sc.FieldsByName(c.Path[0]); len(f) == 1 && !strings.Contains(f[0].Type.String(), "list<") {
			c.Evidence.Nulls = &nulls[i] // one slot per row: nulls of the rows
		}
	}
	return t, nil
}

// runArrow writes an Arrow data file of a save_to_disk dataset again, as
// the Arrow IPC stream save_to_disk writes, at the same path: the same
// record batches and columns, selected fields rewritten, the huggingface
// metadata rewritten as the features change and MetaKey recording what was
// done. Batches are read one at a time, the next decoded while the current
// one is packed.
func (tc *tableConv) runArrow(ctx context.Context, out string) (err error) {
	t := tc.t
	defer recovered(t.Rel, &err)
	r, err := tc.ins.in.openArrow(ctx, t.Rel, false, tc.opts.Allocator)
	if err != nil {
		return err
	}
	defer r.Close()
	if !r.Schema().Equal(t.schema) {
		return inputErr(t.Rel, -1, "", "the schema changed since the file was inspected")
	}
	tree := buildTree(tc.paths)
	tc.exact = t.schema.Fields() // an Arrow file's types are exact as read
	fields := outFields(t.schema.Fields(), tree, tc.outOpts())
	md := t.schema.Metadata()
	meta, _, err := tc.metadata(md.Keys(), md.Values(), t.schema)
	if err != nil {
		return err
	}
	outSchema := arrow.NewSchema(fields, &meta)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("parquet: %s: %w", out, os.ErrExist)
	}
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := ipc.NewWriter(noCloser{f}, ipc.WithSchema(outSchema), ipc.WithAllocator(tc.opts.Allocator))
	writerOpen := true
	defer func() {
		if writerOpen {
			w.Close()
		}
	}()

	rctx, cancel := context.WithCancel(ctx)
	batches := make(chan batchItem)
	go readArrowBatches(rctx, r, batches)
	defer func() {
		cancel()
		for it := range batches {
			if it.rec != nil {
				it.rec.Release()
			}
		}
	}()
	var row int64
	for it := range batches {
		if it.err != nil {
			return it.err
		}
		outRec, err := tc.rewriteBatch(it.rec, outSchema, tree, row)
		row += it.rec.NumRows()
		it.rec.Release()
		if err != nil {
			return err
		}
		err = w.Write(outRec)
		outRec.Release()
		if err != nil {
			return fmt.Errorf("parquet: %s: %w", t.OutRel, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.Uncounted {
		t.Rows, t.RowGroups = row, r.batch
	} else if row != t.Rows {
		return inputErr(t.Rel, -1, "", "read %d rows, %d when the file was inspected (it changed)", row, t.Rows)
	}
	writerOpen = false
	if err := w.Close(); err != nil { // the end-of-stream marker
		return fmt.Errorf("parquet: %s: %w", t.OutRel, err)
	}
	return f.Commit()
}

// readArrowBatches sends every record batch of r to out (retained for the
// receiver), then closes out; an error ends the stream with an item that
// carries it.
func readArrowBatches(ctx context.Context, r *arrowReader, out chan<- batchItem) {
	defer close(out)
	for {
		rec, err := r.Next()
		if err != nil {
			select {
			case out <- batchItem{err: err}:
			case <-ctx.Done():
			}
			return
		}
		if rec == nil {
			return
		}
		select {
		case out <- batchItem{rec: rec}:
		case <-ctx.Done():
			rec.Release()
			return
		}
	}
}
