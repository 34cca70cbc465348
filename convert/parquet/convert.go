package parquet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/fetch"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/pqread"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/sniff"
	"github.com/bpconvert/bpconvert/srctree"
)

// MetaKey is the key-value metadata key under which Convert records what it
// did to a table (JSON, see TableRecord).
const MetaKey = "bpconvert"

// arrowSchemaKey is where Arrow writers keep their serialized schema.
const arrowSchemaKey = "ARROW:schema"

// TableRecord is the JSON value Convert stores under MetaKey.
type TableRecord struct {
	// Tool and Version name the writer.
	Tool    string `json:"tool"`
	Version string `json:"version"`
	// PackBase is the directory, relative to the dataset root, that
	// references name.
	PackBase string `json:"pack_base"`
	// RefBase is what references call the dataset root when it is not
	// the default, relative one (--ref-base: an absolute path or a URL).
	RefBase string `json:"ref_base,omitempty"`
	// Extracted lists the fields that became references.
	Extracted []ExtractedField `json:"extracted"`
	// SourceSchema is the source table's Arrow schema (with its key-value
	// metadata), serialized as Arrow IPC and base64-encoded.
	SourceSchema string `json:"source_schema"`
}

// ExtractedField describes one rewritten field.
type ExtractedField struct {
	Path       []string `json:"path"`
	SourceType string   `json:"source_type"`
	// Media is the Hugging Face feature it was declared as, if any.
	Media string `json:"media,omitempty"`
}

// Result summarises a conversion.
type Result struct {
	// Tables counts every table; Rewritten those with selected fields,
	// Copied those without (copied byte for byte).
	Tables, Rewritten, Copied int
	// Files counts the other files copied (unchanged, but for Metadata).
	Files int
	// Metadata lists the files beside the tables whose feature declarations
	// were rewritten: the dataset card (README.md) and dataset_info.json.
	Metadata []string
	// Rows sums the rows of the rewritten tables.
	Rows int64
	// Remote counts the media values kept as they were because their
	// bytes are null and their path is a URL (see Options.StrictRemote).
	Remote int64
	// Pack is what the pack writer wrote.
	Pack packcore.Stats
	// Summary is the run's outcome in the CLI's summary form (Convert
	// fills it in; ConvertTo leaves it to its caller).
	Summary plan.Summary

	direct int // tables whose payload columns were read value by value
}

// Convert writes the converted dataset to dst, which must not exist (or be
// an empty directory) and must be disjoint from the source. Work happens in
// a staging directory beside dst that is renamed into place only when every
// table, file and shard is complete; on error nothing is left at dst.
//
// Each table with selected fields is rewritten: the same row groups, codecs
// (per top-level column), column order and nullability, selected fields as
// reference strings. Its key-value metadata is kept except that the
// huggingface features of extracted fields become {"dtype": "string",
// "_type": "Value"}, a stale ARROW:schema is replaced by a fresh one (only
// when the source had one), and MetaKey records what was done. Tables
// without selected fields and all other files are copied unchanged.
func Convert(ctx context.Context, ins *Inspection, sel Selection, dst convert.Dest, opts Options, prog progress.Counter) (*Result, error) {
	prog = progress.OrNop(prog)
	opts = opts.withDefaults()
	if len(sel.Paths) == 0 {
		return nil, fmt.Errorf("parquet: %w", ErrNeedSelection)
	}
	out, err := convert.Begin(ctx, dst, convert.OutputOptions{Pack: opts.PackOptions, Sources: []convert.Source{ins.source}, Progress: prog, Base: opts.Base})
	if err != nil {
		return nil, err
	}
	defer out.Abort()
	res, err := convertTo(ctx, ins, sel, out.Dir, out, opts, prog)
	if err != nil {
		return nil, storeFirst(ins.in.tree, err)
	}
	if res.Pack, err = out.Commit(); err != nil {
		return nil, err
	}
	res.Summary = out.Summary(plan.Summary{
		Format: ins.Format(),
		Source: ins.Root,
		Counts: plan.Counts{
			{Name: "rewritten tables", N: int64(res.Rewritten)},
			{Name: "copied tables", N: int64(res.Copied)},
			{Name: "copied files", N: int64(res.Files)},
			{Name: "rows", N: res.Rows},
			{Name: "remote cells", N: res.Remote},
		},
		Warnings: append([]string{}, ins.Warnings...),
	})
	return res, nil
}

// ConvertTo is Convert without its staging directory and pack writer, for a
// converter that writes these tables beside other output into one pack set
// (convert/lerobot): it rewrites the tables with selected fields and copies
// the other tables and files of ins into dir (same relative paths, created
// as needed, existing files refused), packing payloads with w, whose
// references must name MediaDir relative to the dataset root. The caller
// owns dir and w: it closes or aborts w and removes dir on failure.
// Result.Pack is left zero.
func ConvertTo(ctx context.Context, ins *Inspection, sel Selection, dir string, w convert.Packer, opts Options, prog progress.Counter) (*Result, error) {
	opts = opts.withDefaults()
	if len(sel.Paths) == 0 {
		return nil, fmt.Errorf("parquet: %w", ErrNeedSelection)
	}
	return convertTo(ctx, ins, sel, dir, w, opts, prog)
}

// convertTo rewrites and copies the tables and files of ins into dir.
func convertTo(ctx context.Context, ins *Inspection, sel Selection, dir string, w convert.Packer, opts Options, prog progress.Counter) (*Result, error) {
	prog = progress.OrNop(prog)
	tables, others := partOf(ins, opts.Part)
	var items, total int64
	for _, t := range tables {
		for _, c := range t.Candidates {
			if selected(sel.Paths, c.Path) {
				items += t.Rows
				total += c.ChunkBytes
			}
		}
	}
	prog.SetTotal(items, total)

	res := &Result{Tables: len(tables), Files: len(others)}
	for _, t := range tables {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var paths [][]string
		for _, p := range sel.Paths {
			ok, err := resolve(t, p)
			if err != nil {
				return nil, err
			}
			if ok {
				paths = append(paths, p)
			}
		}
		out := filepath.Join(dir, filepath.FromSlash(t.OutRel))
		if len(paths) == 0 {
			if err := ins.in.copyFile(ctx, t.src, out); err != nil {
				return nil, fmt.Errorf("parquet: %s: %w", t.Rel, err)
			}
			res.Copied++
			continue
		}
		tc := &tableConv{ctx: ctx, ins: ins, t: t, paths: paths, w: w, opts: opts, prog: prog}
		run := tc.run
		if t.Arrow {
			run = tc.runArrow
		}
		if err := run(ctx, out); err != nil {
			return nil, err
		}
		res.Rewritten++
		res.Rows += t.Rows
		res.Remote += tc.remote
		if tc.direct {
			res.direct++
		}
		prog.Milestone(fmt.Sprintf("rewrote %s", t.Rel))
	}
	ce := ins.cardEdit(sel)
	for _, o := range others {
		dst := filepath.Join(dir, filepath.FromSlash(o.rel))
		if done, err := ins.in.rewriteMetadataFile(ctx, o, ins.in.metaKind(o.rel), dst, ce); err != nil {
			return nil, fmt.Errorf("parquet: %s: %w", o.rel, err)
		} else if done {
			res.Metadata = append(res.Metadata, o.rel)
			continue
		}
		if err := ins.in.copyFile(ctx, o, dst); err != nil {
			return nil, fmt.Errorf("parquet: %s: %w", o.rel, err)
		}
	}
	if ins.writesCard(sel) && (opts.Part.Whole() || opts.Part.I == 1) {
		card, _, err := rewriteCard(nil, ce)
		if err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, cardName), card, 0o644); err != nil {
			return nil, fmt.Errorf("parquet: %s: %w", cardName, err)
		}
		res.Metadata = append(res.Metadata, cardName)
	}
	return res, nil
}

// edit is how the conversion of paths changes the features that a table
// with candidates cands declares (see featureEdit).
func (o Options) edit(cands []Candidate, paths [][]string) featureEdit {
	var e featureEdit
	for _, p := range paths {
		isStruct := false
		for _, c := range cands {
			if slices.Equal(c.Path, p) && c.Struct {
				isStruct = true
			}
		}
		if !isStruct || o.Media == MediaString {
			e.strings = append(e.strings, p)
		}
		if isStruct && o.KeepPath {
			e.siblings = append(e.siblings, p)
		}
	}
	return e
}

// cardEdit is what the conversion of sel changes in the dataset card and
// the dataset_info.json files.
func (ins *Inspection) cardEdit(sel Selection) cardEdit {
	e := cardEdit{features: ins.opts.edit(ins.Candidates, sel.Paths),
		packFiles: []string{MediaDir + "/pack-0000.zip", MediaDir + "/" + packcore.ManifestName}}
	named := false
	for _, t := range ins.Tables {
		e.tables = append(e.tables, t.OutRel)
		named = named || namesSplit(t.OutRel)
	}
	// Without data files named by the card or by split names, datasets
	// takes every file under the root for data, the shards too.
	e.addConfigs = ins.in.disk == nil && !named && len(sel.Paths) > 0
	return e
}

// writesCard reports whether the conversion of sel writes a dataset card
// the source does not have: one that names the tables in configs.
func (ins *Inspection) writesCard(sel Selection) bool {
	if !ins.cardEdit(sel).addConfigs {
		return false
	}
	return !slices.ContainsFunc(ins.in.others, func(f inputFile) bool { return f.rel == cardName })
}

// partOf returns the tables and other files that part p converts: a
// contiguous run of tables balanced by bytes (see convert.Part.Range), and
// the other files in part 1 only. The whole conversion has them all.
func partOf(ins *Inspection, p convert.Part) ([]*Table, []inputFile) {
	if p.Whole() {
		return ins.Tables, ins.in.others
	}
	sizes := make([]int64, len(ins.Tables))
	for i, t := range ins.Tables {
		sizes[i] = t.Size
	}
	lo, hi := p.Range(sizes)
	var others []inputFile
	if p.I == 1 {
		others = ins.in.others
	}
	return ins.Tables[lo:hi:hi], others
}

// selected reports whether path is one of paths.
func selected(paths [][]string, path []string) bool {
	for _, p := range paths {
		if slices.Equal(p, path) {
			return true
		}
	}
	return false
}

// tableConv rewrites one table.
type tableConv struct {
	ctx   context.Context // the run's, for the files payloads are read from
	ins   *Inspection
	t     *Table
	paths [][]string
	w     convert.Packer
	opts  Options
	prog  progress.Counter // payloads packed and their bytes
	// exact are the table's fields with their exact types (see
	// exact.go), to which the columns read are relabelled.
	exact []arrow.Field
	// pageIndex is set when the source table has a page index (column and
	// offset indexes), which the output then has too.
	pageIndex bool
	// direct is set when the payload columns were read value by value.
	direct bool
	// remote counts the media values kept as they were (see
	// Options.StrictRemote).
	remote int64
}

// hasPageIndex reports whether a table's first row group has an offset
// index for any column chunk (writers write it for every chunk or none).
func hasPageIndex(md *metadata.FileMetaData) bool {
	if md.NumRowGroups() == 0 {
		return false
	}
	rg := md.RowGroup(0)
	for i := 0; i < rg.NumColumns(); i++ {
		if cc, err := rg.ColumnChunk(i); err == nil && cc.GetOffsetIndexLocation() != nil {
			return true
		}
	}
	return false
}

// tableKey is a table's path without its .parquet or .arrow extension, as
// member keys name it.
func tableKey(rel string) string {
	if k, ok := strings.CutSuffix(rel, ".parquet"); ok {
		return k
	}
	return strings.TrimSuffix(rel, ".arrow")
}

// noCloser hides Close from the parquet writer, which would otherwise close
// the file before it can be synced.
type noCloser struct{ io.Writer }

func (tc *tableConv) run(ctx context.Context, out string) (err error) {
	t := tc.t
	mem := tc.opts.Allocator
	defer recovered(t.Rel, &err)

	pf, err := tc.ins.in.openTable(ctx, t.Rel, t.Size, t.md, true, mem)
	if err != nil {
		return inputErr(t.Rel, -1, "", "not a readable parquet file: %w", err)
	}
	defer pf.Close()
	if err := checkChunks(pf, t.Size); err != nil {
		return inputErr(t.Rel, -1, "", "%w", err)
	}
	fr, _, err := pqread.Open(pf, pqarrow.ArrowReadProperties{PreAllocBinaryData: true}, mem)
	if err != nil {
		return inputErr(t.Rel, -1, "", "schema: %w", err)
	}
	inSchema := t.schema
	tree := buildTree(tc.paths)
	md := pf.MetaData()

	// Output schema: the same fields with their exact types (see
	// exact.go), selected parts as strings.
	tc.exact = withoutUnsetIDs(exactFields(inSchema.Fields(), originSchema(md.KeyValueMetadata(), mem), md.Schema.Root()))
	fields := withoutUnsetIDs(outFields(tc.exact, tree, tc.outOpts()))
	kv := md.KeyValueMetadata()
	meta, storeSchema, err := tc.metadata(kv.Keys(), kv.Values(), arrow.NewSchema(tc.exact, nil))
	if err != nil {
		return err
	}
	if storeSchema {
		// The Arrow schema is stored as Arrow writers store it, list
		// element names included (arrow-go's own option would rename
		// them to the parquet group's "element").
		plain := arrow.NewSchema(fields, &meta)
		enc := base64.StdEncoding.EncodeToString(flight.SerializeSchema(plain, mem))
		meta = arrow.NewMetadata(append(meta.Keys(), arrowSchemaKey), append(meta.Values(), enc))
	}
	outSchema := arrow.NewSchema(fields, &meta)

	// Codecs per top-level column, from the first row group.
	codecs := map[string]compress.Compression{}
	if md.NumRowGroups() > 0 {
		rg := md.RowGroup(0)
		for i := 0; i < md.Schema.NumColumns(); i++ {
			root := md.Schema.ColumnRoot(i).Name()
			if _, ok := codecs[root]; ok {
				continue
			}
			if cc, err := rg.ColumnChunk(i); err == nil {
				codecs[root] = cc.Compression()
			}
		}
	}
	tc.pageIndex = hasPageIndex(md)

	// Payload columns that can be read value by value (see direct.go);
	// the Arrow reader then reads only the other leaves.
	var ds *directSource
	var recIdx []int
	dcols, kept, direct := directColumns(md.Schema, inSchema.Fields(), tree)
	direct = direct && !tc.opts.general
	tc.direct = direct
	if direct {
		// The payload leaves are read through a reader of their own, whose
		// page buffers are reused from row group to row group.
		pages := &pageBuffers{mem: mem, poison: tc.opts.poison}
		defer pages.release()
		ppf, err := tc.ins.in.openTable(ctx, t.Rel, t.Size, t.md, true, pages)
		if err != nil {
			return inputErr(t.Rel, -1, "", "not a readable parquet file: %w", err)
		}
		defer ppf.Close()
		ds = newDirectSource(ppf, dcols)
		recIdx = tc.directLayout(inSchema, dcols)
	} else {
		kept = nil
	}
	tw, err := tc.createWriter(out, outSchema, pf, codecs, func(name string) bool { return tree[name] == nil })
	if err != nil {
		return err
	}
	defer tw.abort()
	fw := tw.fw

	// A reader goroutine decodes the next batch while this one packs the
	// current one; at most two batches are alive at a time (and, on the
	// direct path, the payload chunks of directChunks).
	rctx, cancel := context.WithCancel(ctx)
	batches := make(chan batchItem)
	go tc.readBatches(rctx, fr, kept, ds, batches)
	var slots *slotReader
	if ds != nil {
		slots = ds.reader(batches)
	}
	defer func() {
		cancel()
		for it := range batches {
			if it.rec != nil {
				it.rec.Release()
			}
		}
	}()
	var row, start int64
	rg := -1
	check := func() error { // the finished row group's row count
		if rg >= 0 && row-start != md.RowGroup(rg).NumRows() {
			return inputErr(t.Rel, -1, "", "row group %d: read %d rows, metadata says %d", rg, row-start, md.RowGroup(rg).NumRows())
		}
		return nil
	}
	for it := range batches {
		if it.err != nil {
			return it.err
		}
		if it.chunk != nil {
			return fmt.Errorf("parquet: %s: row %d: payloads without their rows", t.Rel, row)
		}
		if it.rec == nil && it.rows == 0 { // a new row group starts
			if err := check(); err != nil {
				return err
			}
			rg, start = it.rg, row
			if err := fw.NewBufferedRowGroupChecked(); err != nil {
				return fmt.Errorf("parquet: %s: %w", t.Rel, err)
			}
			continue
		}
		var outRec arrow.RecordBatch
		if direct {
			n := it.rows
			if it.rec != nil {
				n = it.rec.NumRows()
			}
			outRec, err = tc.directBatch(it.rec, int(n), outSchema, slots, recIdx, row)
			row += n
		} else {
			outRec, err = tc.rewriteBatch(it.rec, outSchema, tree, row)
			row += it.rec.NumRows()
		}
		if it.rec != nil {
			it.rec.Release()
		}
		if err != nil {
			return err
		}
		wrec := forWriter(outRec, tw.schema, tc.opts.Allocator)
		outRec.Release()
		err = fw.WriteBuffered(wrec)
		wrec.Release()
		if err != nil {
			return fmt.Errorf("parquet: %s: row group %d: %w", t.Rel, rg, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	if rg != md.NumRowGroups()-1 {
		return fmt.Errorf("parquet: %s: read %d of %d row groups", t.Rel, rg+1, md.NumRowGroups())
	}
	return tw.commit(t.Rel)
}

// tableWriter is an output table being written: a parquet writer on a
// temporary file that commit renames into place.
type tableWriter struct {
	f          *atomicfile.File
	fw         *pqarrow.FileWriter
	schema     *arrow.Schema // the writer's: outSchema with pinned leaves
	writerOpen bool
	// mem, when not nil, reads the file back after it is written to
	// build the column indexes of its repeated leaves again (colindex.go).
	mem memory.Allocator
}

// nullBytes reports whether the output leaf c of top-level column root is
// the bytes of a selected media struct kept in place (then null).
func (tc *tableConv) nullBytes(root string, c *schema.Column) bool {
	if tc.opts.Media == MediaString {
		return false
	}
	p := c.ColumnPath()
	if len(p) == 0 || p[len(p)-1] != "bytes" {
		return false
	}
	for _, sp := range tc.paths {
		if sp[0] == root {
			return true
		}
	}
	return false
}

// createWriter creates the output table out (which must not exist) for
// outSchema, in the likeness of the source pf: the same parquet
// root name, the codec of each top-level column from codecs (snappy for
// columns it does not name), the same parquet annotations for the columns
// kept whole (see writerFields), a page index for the columns whose
// chunks had one, the key-value metadata outSchema's (the Arrow schema
// among them, when stored).
func (tc *tableConv) createWriter(out string, outSchema *arrow.Schema, pf *file.Reader, codecs map[string]compress.Compression, kept func(string) bool) (*tableWriter, error) {
	mem := tc.opts.Allocator
	md := pf.MetaData()
	props := []pq.WriterProperty{
		pq.WithAllocator(mem),
		// decimals of precision <= 18 as INT32/INT64 or as fixed-length
		// byte arrays, as the source has them
		pq.WithStoreDecimalAsInteger(decimalsAsIntegers(md.Schema)),
		pq.WithMaxRowGroupLength(math.MaxInt32),
		pq.WithRootName(md.Schema.Root().Name()),
		pq.WithCompression(compress.Codecs.Snappy),
		pq.WithPageIndexEnabled(tc.pageIndex),
	}
	meta := outSchema.Metadata()
	ws := arrow.NewSchema(writerFields(outSchema.Fields(), md.Schema, kept, pq.NewWriterProperties(props...)), &meta)
	aprops := []pqarrow.WriterOption{pqarrow.WithAllocator(mem)}
	outPQ, err := pqarrow.ToParquet(ws, pq.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		return nil, fmt.Errorf("parquet: %s: output schema: %w", tc.t.Rel, err)
	}
	indexed, allNull := sourceLeafProps(pf)
	for i := 0; i < outPQ.NumColumns(); i++ {
		c := outPQ.Column(i)
		p := c.ColumnPath().String()
		if codec, ok := codecs[outPQ.ColumnRoot(i).Name()]; ok {
			props = append(props, pq.WithCompressionFor(p, codec))
		}
		if md.Schema.ColumnIndexByName(p) >= 0 { // else as the table's other columns
			props = append(props, pq.WithPageIndexEnabledFor(p, indexed[p]))
		}
		// arrow-go drops the column index of a repeated, dictionary
		// encoded leaf with a page of nulls only (it counts its values
		// wrong); such leaves are written without a dictionary: a kept
		// media struct's bytes (all null) and leaves the source has a
		// page of nulls only in.
		if c.MaxRepetitionLevel() > 0 && (allNull[p] || tc.nullBytes(outPQ.ColumnRoot(i).Name(), c)) {
			props = append(props, pq.WithDictionaryFor(p, false))
		}
	}

	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(out); err == nil {
		return nil, fmt.Errorf("parquet: %s: %w", out, os.ErrExist)
	}
	f, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return nil, err
	}
	fw, err := pqarrow.NewFileWriter(ws, noCloser{f}, pq.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		f.Abort()
		return nil, fmt.Errorf("parquet: %s: %w", tc.t.Rel, err)
	}
	tw := &tableWriter{f: f, fw: fw, schema: ws, writerOpen: true}
	if tc.pageIndex {
		tw.mem = mem
	}
	return tw, nil
}

// commit closes the writer and renames the file into place; name is the
// table's name for messages.
func (tw *tableWriter) commit(name string) error {
	tw.writerOpen = false
	if err := tw.fw.Close(); err != nil {
		return fmt.Errorf("parquet: %s: %w", name, err)
	}
	if tw.mem != nil {
		if err := fixColumnIndexes(tw.f.File, tw.mem); err != nil {
			tw.f.Abort()
			return fmt.Errorf("parquet: %s: column indexes: %w", name, err)
		}
	}
	return tw.f.Commit()
}

// abort closes the writer, if still open, and removes the temporary file;
// after commit it does nothing.
func (tw *tableWriter) abort() {
	if tw.writerOpen {
		tw.writerOpen = false
		tw.fw.Close()
	}
	tw.f.Abort()
}

// batchItem is what readBatches hands over: a row group's start (rec nil,
// rows 0), one batch (retained for the receiver, which releases it; or,
// when no leaf is read, rec nil and its number of rows), on the direct
// path a chunk of the batch's payloads after it, or an error.
type batchItem struct {
	rg    int
	rec   arrow.RecordBatch
	rows  int64
	chunk *slotChunk
	err   error
}

// readBatches reads every row group of the table in bounded batches and
// sends them to out, which it closes when done or when ctx is cancelled.
// Only the leaves cols are read (all when cols is nil; none when it is
// empty: then only the batches' row counts are sent). With ds, each batch
// is followed by the chunks that hold its payloads.
func (tc *tableConv) readBatches(ctx context.Context, fr *pqarrow.FileReader, cols []int, ds *directSource, out chan<- batchItem) {
	defer close(out)
	t := tc.t
	send := func(it batchItem) bool {
		select {
		case out <- it:
			return true
		case <-ctx.Done():
			if it.rec != nil {
				it.rec.Release()
			}
			return false
		}
	}
	defer func() {
		if r := recover(); r != nil {
			send(batchItem{err: inputErr(t.Rel, -1, "", "cannot decode: %v", r)})
		}
	}()
	if ds != nil {
		defer ds.close()
	}
	// payloads sends the payloads of the n rows from row on, after their
	// batch.
	var row int64
	payloads := func(rg int, n int64) bool {
		if ds == nil {
			return true
		}
		err := ds.send(ctx, t.Rel, row, int(n), send)
		row += n
		if err != nil {
			send(batchItem{err: err})
			return false
		}
		return ctx.Err() == nil
	}
	md := fr.ParquetReader().MetaData()
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		if ds != nil {
			if err := ds.open(rg); err != nil {
				send(batchItem{err: inputErr(t.Rel, -1, "", "row group %d: %w", rg, err)})
				return
			}
		}
		if !send(batchItem{rg: rg}) {
			return
		}
		rgm := md.RowGroup(rg)
		if rgm.NumRows() == 0 {
			continue
		}
		fr.Props.BatchSize = tc.batchRows(rgm.NumRows(), rgm.TotalByteSize())
		if cols != nil && len(cols) == 0 {
			for n := int64(0); n < rgm.NumRows(); n += fr.Props.BatchSize {
				rows := min(fr.Props.BatchSize, rgm.NumRows()-n)
				if !send(batchItem{rg: rg, rows: rows}) || !payloads(rg, rows) {
					return
				}
			}
			continue
		}
		rr, err := fr.GetRecordReader(ctx, cols, []int{rg})
		if err != nil {
			send(batchItem{err: inputErr(t.Rel, -1, "", "row group %d: %w", rg, err)})
			return
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			rec.Retain()
			n := rec.NumRows()
			if !send(batchItem{rg: rg, rec: rec}) || !payloads(rg, n) {
				rr.Release()
				return
			}
		}
		err = rr.Err()
		rr.Release()
		if err != nil {
			if ctx.Err() == nil {
				send(batchItem{err: inputErr(t.Rel, -1, "", "row group %d: %w", rg, err)})
			}
			return
		}
	}
	if ds != nil {
		if err := ds.open(-1); err != nil {
			send(batchItem{err: inputErr(t.Rel, -1, "", "row group %d: %w", md.NumRowGroups()-1, err)})
		}
	}
}

// batchRows picks a batch size whose payload stays near BatchBytes (or a
// quarter of a smaller row group), from the row group's uncompressed size.
func (tc *tableConv) batchRows(rows, bytes int64) int64 {
	n := int64(tc.opts.BatchRows)
	if rows > 0 && bytes > 0 {
		per := max(bytes/rows, 1)
		// A quarter of the row group, at least 1 MiB, keeps the memory of
		// small row groups proportional to them.
		budget := min(tc.opts.BatchBytes, max(bytes/4, 1<<20))
		n = min(n, max(budget/per, 1))
	}
	return n
}

// rewriteBatch returns rec with its selected columns rewritten; the caller
// releases it.
func (tc *tableConv) rewriteBatch(rec arrow.RecordBatch, outSchema *arrow.Schema, tree map[string]*selNode, first int64) (arrow.RecordBatch, error) {
	// The rewrite walks the batch column by column, but a row is one
	// placement group: its payloads should be packed one after the other.
	// So the batch is walked twice: the first walk only lists the payloads,
	// which are then packed in row order, and the second builds the columns
	// with their references, taken in the order the first walk met them
	// (both walks meet the payloads in the same order).
	var reqs []packRequest
	collect := func(path []string, id elemID, data []byte, srcName string, fromPath bool) (string, error) {
		id.sub = slices.Clone(id.sub) // the walk may reuse these
		reqs = append(reqs, packRequest{path: slices.Clone(path), id: id, data: data, srcName: srcName, fromPath: fromPath})
		return "", nil
	}
	_, made, err := tc.rewriteColumns(rec, outSchema, tree, first, collect, true)
	releaseAll(made)
	if err != nil {
		return nil, err
	}
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(reqs[a].id.row, reqs[b].id.row) })
	refs := make([]string, len(reqs))
	for _, i := range order {
		q := reqs[i]
		if refs[i], err = tc.pack(q.path, q.id, q.data, q.srcName, q.fromPath); err != nil {
			return nil, err
		}
	}
	next := 0
	replay := func([]string, elemID, []byte, string, bool) (string, error) {
		if next >= len(refs) {
			return "", fmt.Errorf("parquet: %s: the second walk of rows %d.. met more payloads than the first", tc.t.Rel, first)
		}
		next++
		return refs[next-1], nil
	}
	cols, made, err := tc.rewriteColumns(rec, outSchema, tree, first, replay, false)
	defer releaseAll(made)
	if err != nil {
		return nil, err
	}
	if next != len(refs) {
		return nil, fmt.Errorf("parquet: %s: the second walk of rows %d.. met %d payloads, the first %d", tc.t.Rel, first, next, len(refs))
	}
	return arrowRecord(outSchema, cols, rec.NumRows()), nil
}

// packRequest is one payload the first walk of a batch met.
type packRequest struct {
	path     []string
	id       elemID
	data     []byte
	srcName  string
	fromPath bool
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		a.Release()
	}
}

// rewriteColumns builds the batch's output columns, each payload stored by
// pack; made are the arrays it built, for the caller to release once the
// batch is written. With payloadsOnly set only the columns holding selected
// payloads are walked (the first walk needs no others).
func (tc *tableConv) rewriteColumns(rec arrow.RecordBatch, outSchema *arrow.Schema, tree map[string]*selNode, first int64, pack packFunc, payloadsOnly bool) ([]arrow.Array, []arrow.Array, error) {
	cols := make([]arrow.Array, outSchema.NumFields())
	var made []arrow.Array
	n := int(rec.NumRows())
	var ids []elemID
	var live []bool
	k := 0 // the output column of input column j
	for j := 0; j < int(rec.NumCols()); j, k = j+1, k+1 {
		f := outSchema.Field(k)
		node := tree[f.Name]
		sibling := node != nil && hasSibling(rec.Column(j).DataType(), node, tc.outOpts())
		if payloadsOnly && node == nil {
			continue
		}
		col := rec.Column(j)
		if !arrow.TypeEqual(col.DataType(), tc.exact[j].Type, arrow.CheckMetadata()) {
			col = relabel(col, tc.exact[j].Type)
			made = append(made, col)
		}
		if node == nil {
			cols[k] = col
			continue
		}
		if ids == nil {
			ids = make([]elemID, n)
			for i := range ids {
				ids[i] = elemID{row: first + int64(i)}
			}
			live = allLive(n)
		}
		r := &rewriter{mem: tc.opts.Allocator, pack: pack, o: tc.outOpts()}
		nc, err := r.rewrite(col, f.Type, node, []string{f.Name}, ids, live, f.Nullable)
		if err != nil {
			var ie *InputError
			if errors.As(err, &ie) || errors.Is(err, context.Canceled) {
				return nil, made, err
			}
			return nil, made, fmt.Errorf("parquet: %s: column %q: %w", tc.t.Rel, f.Name, err)
		}
		made = append(made, nc)
		cols[k] = nc
		if sibling {
			k++
			if !payloadsOnly {
				pa := r.pathArray(col)
				made = append(made, pa)
				cols[k] = pa
			}
		}
	}
	return cols, made, nil
}

// outOpts are the options that shape the output type of selected fields.
func (tc *tableConv) outOpts() outOpts {
	return outOpts{keepMedia: tc.opts.Media != MediaString, keepPath: tc.opts.KeepPath}
}

// pack stores one payload of the field at path and returns its reference;
// a media value whose path is a URL it keeps as it is (its path is
// returned) unless Options.StrictRemote.
func (tc *tableConv) pack(path []string, id elemID, data []byte, srcName string, fromPath bool) (string, error) {
	col := dotted(path)
	var b strings.Builder
	var group string
	if tc.opts.Keys != nil {
		pid := PayloadID{Table: tc.t.Rel, Path: slices.Clone(path), Row: id.row}
		for _, s := range id.sub {
			pid.Sub = append(pid.Sub, int(s))
		}
		var key string
		key, group = tc.opts.Keys(pid)
		b.WriteString(key)
	} else {
		fmt.Fprintf(&b, "%s/%s/%012d", col, tableKey(tc.t.Rel), id.row)
		for _, s := range id.sub {
			fmt.Fprintf(&b, "-%04d", s)
		}
		group = fmt.Sprintf("%s#%d", tc.t.Rel, id.row)
	}
	if fromPath && isRemoteCell(srcName) && tc.opts.Fetch != nil {
		return tc.packFetched(b.String(), srcName, group, id.row, col)
	}
	if fromPath && isRemoteCell(srcName) && !tc.opts.StrictRemote {
		// a file elsewhere (hf://, https://, s3://): kept as it is
		tc.remote++
		return srcName, nil
	}
	if fromPath {
		e, err := tc.resolvePath(srcName)
		if err != nil {
			return "", inputErr(tc.t.Rel, id.row, col, "%w", err)
		}
		size := e.Size
		src, err := tc.ins.in.tree.OpenEntry(tc.ctx, e)
		if err != nil {
			return "", inputErr(tc.t.Rel, id.row, col, "path %q: %w", srcName, srcfile.Cause(err))
		}
		defer src.Close()
		f := srctree.Stream(tc.ctx, src)
		defer f.Close()
		prefix := make([]byte, sniff.PrefixLen)
		np, err := io.ReadFull(f, prefix)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return "", inputErr(tc.t.Rel, id.row, col, "path %q: %w", srcName, err)
		}
		b.WriteString(sniff.Ext(srcName, prefix[:np]))
		ref, err := tc.w.Add(b.String(), io.MultiReader(bytes.NewReader(prefix[:np]), f), size, group)
		if err != nil {
			return "", tc.packErr(id.row, col, err)
		}
		tc.prog.Add(1, size)
		return ref, nil
	}
	b.WriteString(sniff.Ext(srcName, data[:min(len(data), sniff.PrefixLen)]))
	ref, err := tc.w.AddBytes(b.String(), data, group)
	if err != nil {
		return "", tc.packErr(id.row, col, err)
	}
	tc.prog.Add(1, int64(len(data)))
	return ref, nil
}

// packFetched fetches the file the URL srcName names and packs it under
// key (its extension added). A URL that names nothing, or too large a
// file, is invalid input; a server that cannot be reached is a failure.
func (tc *tableConv) packFetched(key, srcName, group string, row int64, col string) (string, error) {
	data, err := tc.opts.Fetch.Fetch(tc.ctx, srcName)
	if errors.Is(err, fetch.ErrNotFound) || errors.Is(err, fetch.ErrTooLarge) || errors.Is(err, fetch.ErrUnsupported) {
		return "", inputErr(tc.t.Rel, row, col, "%w", err)
	}
	if err != nil {
		return "", fmt.Errorf("parquet: %s: row %d: column %q: %w", tc.t.Rel, row, col, err)
	}
	name := srcName
	if u, err := url.Parse(srcName); err == nil {
		name = u.Path
	}
	key += sniff.Ext(name, data[:min(len(data), sniff.PrefixLen)])
	ref, err := tc.w.AddBytes(key, data, group)
	if err != nil {
		return "", tc.packErr(row, col, err)
	}
	tc.prog.Add(1, int64(len(data)))
	return ref, nil
}

func (tc *tableConv) packErr(row int64, col string, err error) error {
	if errors.Is(err, packcore.ErrInvalidKey) || errors.Is(err, packcore.ErrDuplicateKey) {
		return inputErr(tc.t.Rel, row, col, "%w", err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("parquet: %s: row %d: column %q: %w", tc.t.Rel, row, col, err)
}

// resolvePath finds the file a Hugging Face path names: relative to the
// dataset root, inside it once symlinks are resolved, a regular file.
func (tc *tableConv) resolvePath(name string) (srctree.Entry, error) {
	return tc.ins.in.resolvePath(name)
}

// metadata builds the output key-value metadata and reports whether the
// source carried an ARROW:schema (then the output gets a fresh one).
func (tc *tableConv) metadata(keys, vals []string, inSchema *arrow.Schema) (arrow.Metadata, bool, error) {
	var ok, ov, sk, sv []string
	store := false
	for i, k := range keys {
		switch k {
		case arrowSchemaKey:
			store = true
			continue
		case MetaKey:
			// Replaced below.
		case HFKey:
			v, err := rewriteHF(vals[i], tc.opts.edit(tc.t.Candidates, tc.paths))
			if err != nil {
				v = vals[i] // not JSON: kept as the source wrote it
			}
			ok, ov = append(ok, k), append(ov, v)
		default:
			ok, ov = append(ok, k), append(ov, vals[i])
		}
		sk, sv = append(sk, k), append(sv, vals[i])
	}
	if len(tc.paths) == 0 {
		// An Arrow table written as parquet without selected fields:
		// nothing was extracted, so there is nothing to record.
		return arrow.NewMetadata(ok, ov), store, nil
	}
	srcMeta := arrow.NewMetadata(sk, sv)
	src := arrow.NewSchema(inSchema.Fields(), &srcMeta)
	rec := TableRecord{
		Tool:         "bpconvert",
		Version:      tc.opts.ToolVersion,
		PackBase:     MediaDir,
		RefBase:      tc.opts.RefBase,
		SourceSchema: base64.StdEncoding.EncodeToString(flight.SerializeSchema(src, tc.opts.Allocator)),
	}
	for _, p := range tc.paths {
		ef := ExtractedField{Path: p, SourceType: typeAt(inSchema, p).String()}
		for _, c := range tc.t.Candidates {
			if slices.Equal(c.Path, p) {
				ef.Media = c.Media
			}
		}
		rec.Extracted = append(rec.Extracted, ef)
	}
	js, err := json.Marshal(rec)
	if err != nil {
		return arrow.Metadata{}, false, err
	}
	ok, ov = append(ok, MetaKey), append(ov, string(js))
	return arrow.NewMetadata(ok, ov), store, nil
}

// typeAt returns the type of the field at path (lists looked through);
// the path was resolved before.
func typeAt(sc *arrow.Schema, path []string) arrow.DataType {
	idx := sc.FieldIndices(path[0])
	typ := sc.Field(idx[0]).Type
	for _, name := range path[1:] {
		for {
			ef, ok := listElemField(typ)
			if !ok {
				break
			}
			typ = ef.Type
		}
		st := typ.(*arrow.StructType)
		typ = st.Field(st.FieldIndices(name)[0]).Type
	}
	return typ
}

// arrowRecord assembles a record batch; the caller releases it.
func arrowRecord(sc *arrow.Schema, cols []arrow.Array, rows int64) arrow.RecordBatch {
	return array.NewRecordBatch(sc, cols, rows)
}
