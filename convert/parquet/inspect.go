package parquet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/pqread"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/sniff"
	"github.com/bpconvert/bpconvert/srctree"
)

// Defaults for Options.
const (
	DefaultSampleSize = 32
	DefaultBatchBytes = 16 << 20
	DefaultBatchRows  = 4096
)

// Options configures Inspect and Convert. The zero value selects the
// defaults.
type Options struct {
	// Columns and Fields are the selection named by the user: top-level
	// column names and nested field paths (NewJob). Both empty select the
	// Hugging Face media columns, when the source declares any.
	Columns []string
	Fields  [][]string
	// SampleSize is how many values per candidate Inspect reads for its
	// evidence (default 32).
	SampleSize int
	// BatchBytes bounds the payload bytes of one batch read from a row group,
	// estimated from the row group's size (default 16 MiB; a batch also stays
	// within a quarter of its row group, but takes at least 1 MiB). A reader
	// goroutine decodes the next batch while the current one is packed, so
	// about two batches are alive at a time.
	BatchBytes int64
	// BatchRows caps the rows of one batch (default 4096).
	BatchRows int
	// Options are the settings every converter takes; ToolVersion is
	// recorded in the bpconvert metadata of every rewritten table
	// ("devel" when empty). A plan reads the tables' footers and a sample
	// of values only; QuickPlan makes it read only the schema of each
	// Arrow data file of a save_to_disk dataset in a bucket, which it
	// otherwise reads whole (an Arrow stream has no footer that counts its
	// rows), so that the conversion fetches each file once: the plan then
	// counts no rows and samples no values of those files, and says so.
	convert.Options
	// Allocator serves every Arrow buffer (default memory.DefaultAllocator).
	Allocator memory.Allocator
	// Keys, when set, names each payload's member key (without its
	// extension, which is added as usual) and placement group in place of
	// the default <column path>/<table path without .parquet>/<row:012d>
	// (list elements add -<index:04d>) and "<table path>#<row>". It lets a
	// converter built on this package keep its own key scheme (LeRobot's
	// frames/<feature>/<table>/<row:08d>). Keys must be unique per payload.
	Keys func(id PayloadID) (key, group string)
	// Media says what a selected Hugging Face media struct<bytes, path>
	// becomes: MediaKeep ("", the default) keeps the struct, bytes null
	// and path the reference, so that datasets still reads Image(),
	// Audio(), ... features; MediaString makes it the reference string,
	// declared Value("string"). Binary fields always become strings.
	Media MediaMode
	// KeepPath adds beside each selected media struct a string field
	// named with PathSuffix (image_path beside image, a list of strings
	// beside a list of images) holding the source's path, which the
	// reference replaces.
	KeepPath bool
	// StrictRemote refuses a media value whose bytes are null and whose
	// path is a URL (hf://, https://, s3://, ...), as builders of
	// datasets write them; by default such a value is kept as it is, its
	// path unchanged, and counted (Result.Remote).
	StrictRemote bool
	// Fetch, when set, fetches the file of such a value (its path a URL)
	// and packs it like a local file; StrictRemote then has no effect.
	Fetch RemoteFetcher

	// general makes every table take the general path, and poison fills
	// reused page buffers with a pattern (tests compare the direct path
	// of direct.go with the general one).
	general, poison bool
}

// MediaMode is what a selected media struct<bytes, path> becomes.
type MediaMode string

// Media modes.
const (
	MediaKeep   MediaMode = "keep"
	MediaString MediaMode = "string"
)

// PayloadID locates one payload for Options.Keys.
type PayloadID struct {
	// Table is the table's path relative to the source root, slash-separated.
	Table string
	// Path is the field's path (see Candidate.Path).
	Path []string
	// Row is the row number within the table, counted across row groups.
	Row int64
	// Sub holds the element index of each list level, outermost first;
	// empty for a field outside lists.
	Sub []int
}

func (o Options) withDefaults() Options {
	if o.SampleSize <= 0 {
		o.SampleSize = DefaultSampleSize
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.BatchRows <= 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if o.ToolVersion == "" {
		o.ToolVersion = "devel"
	}
	return o
}

// Candidate is a column that can hold payloads, found from the schema.
type Candidate struct {
	// Path names the field from the top-level column down; list levels are
	// not named.
	Path []string `json:"path"`
	// Type is the Arrow type of the field, e.g. "binary" or
	// "list<element: struct<bytes: binary, path: string>>".
	Type string `json:"type"`
	// Media is the Hugging Face feature that declares the field, such as
	// "Image" or "Sequence(Image)"; "" when none does.
	Media string `json:"media,omitempty"`
	// Struct is true for struct<bytes, path> values, which become the
	// reference string as a whole.
	Struct bool `json:"struct"`
	// Tables counts the tables that have the field; Rows sums their rows.
	Tables int   `json:"tables"`
	Rows   int64 `json:"rows"`
	// ChunkBytes sums the uncompressed size of the payload leaf column chunks
	// (from parquet metadata, without reading data).
	ChunkBytes int64 `json:"chunk_bytes"`
	// Evidence is what sampling found.
	Evidence plan.Evidence `json:"evidence"`
	// Remote counts the sampled values whose bytes are null and whose
	// path is a URL, which the conversion keeps as they are.
	Remote int64 `json:"remote,omitempty"`
}

// Name returns the field's name as plans and --field write it (see
// FieldName).
func (c Candidate) Name() string { return FieldName(c.Path) }

// Table is one parquet file of the source, or one Arrow IPC data file of
// a Hugging Face save_to_disk dataset (see Arrow).
type Table struct {
	// Rel is the path relative to the source root, slash-separated.
	Rel string
	// Path is the file to read.
	Path string
	Size int64
	Rows int64
	// RowGroups counts the parquet row groups, or the record batches of
	// an Arrow file.
	RowGroups int
	// Arrow is true for an Arrow IPC data file of a save_to_disk dataset,
	// which is written as the parquet file OutRel.
	Arrow bool
	// OutRel is the output path relative to the destination: Rel, or Rel
	// with .parquet in place of .arrow for an Arrow file.
	OutRel string
	// Uncounted is set for an Arrow file of which Inspect read only the
	// schema (Options.QuickPlan): Rows and RowGroups are zero, and the
	// candidates hold no evidence, until the conversion counts them.
	Uncounted bool
	// Candidates are this table's payload fields.
	Candidates []Candidate
	// HF is the huggingface metadata value, "" when absent.
	HF string

	schema *arrow.Schema
	// src is the input file the table was inspected from.
	src inputFile
	// md is the parquet footer that Inspect read, which the conversion
	// reads the table with rather than fetching it again.
	md *metadata.FileMetaData
	// annotated lists the byte-array leaves that hold text or codes rather
	// than payloads (JSON, BSON, ENUM annotations), which arrow-go reads as
	// binary.
	annotated []annotatedLeaf
}

// annotatedLeaf is a parquet leaf column with a JSON, BSON or ENUM
// annotation.
type annotatedLeaf struct {
	path []string // parquet column path
	what string   // "JSON", "BSON", "ENUM"
}

// annotation returns the annotation of the leaves that spell path, or "".
func (t *Table) annotation(path []string) string {
	for _, a := range t.annotated {
		if matchLeaf(path, a.path) {
			return a.what
		}
	}
	return ""
}

// findAnnotated lists the byte-array leaves annotated JSON, BSON or ENUM.
func findAnnotated(sd *schema.Schema) []annotatedLeaf {
	var out []annotatedLeaf
	for i := 0; i < sd.NumColumns(); i++ {
		var what string
		switch sd.Column(i).LogicalType().(type) {
		case schema.JSONLogicalType:
			what = "JSON"
		case schema.BSONLogicalType:
			what = "BSON"
		case schema.EnumLogicalType:
			what = "ENUM"
		default:
			continue
		}
		out = append(out, annotatedLeaf{path: []string(sd.Column(i).ColumnPath()), what: what})
	}
	return out
}

// Inspection is what Inspect found: tables, other files and candidates.
// It is computed without writing anything.
type Inspection struct {
	// Src is the source as given; Root the dataset root (absolute, or an
	// s3:// location).
	Src, Root string
	// Tables are the parquet files in sorted order.
	Tables []*Table
	// Others are the other files (slash-separated, relative to Root),
	// copied unchanged.
	Others []string
	// Candidates aggregates the tables' candidates by path, in first-seen
	// order.
	Candidates []Candidate
	// Warnings are things the user should know.
	Warnings []string

	in   *inputs
	opts Options
	// source is the source inspected.
	source convert.Source
}

// openTable opens the parquet file rel of the source for reading with
// bounded buffers: column chunks are streamed, and large plain pages are
// decoded incrementally. Pages may be as large as the file (DuckDB writes
// pages of about a thousand values, 100 MB for 100 KiB images), past
// arrow-go's default limit of 64 MiB. With md (a footer read before) the
// footer is not read again. In a bucket every read is ranged: the footer,
// then each column chunk in 1 MiB reads, which srctree rounds out to 16 KiB
// blocks and, with ahead set (a conversion, which reads every chunk),
// coalesces into growing requests fetched ahead while they follow one
// another (those of each column chunk of a row group, and the readers of
// one table open at once share what they fetched); without it (a plan's
// sample) a read fetches what it asks for, which the tree keeps for the
// conversion that follows.
func (in *inputs) openTable(ctx context.Context, rel string, size int64, md *metadata.FileMetaData, ahead bool, mem memory.Allocator) (*file.Reader, error) {
	f, err := in.tree.Open(ctx, rel)
	if err != nil {
		return nil, srcfile.Cause(err)
	}
	if !ahead {
		f = srctree.Exact(f)
	}
	if f.Size() != size {
		f.Close()
		return nil, fmt.Errorf("the file changed size since it was listed (%d bytes, then %d)", size, f.Size())
	}
	rp := pq.NewReaderProperties(mem)
	rp.BufferedStreamEnabled = true
	rp.BufferSize = 1 << 20
	rp.PageStreamingEnabled = true
	rp.MaxCompressedPageSize = max(pq.DefaultMaxCompressedPageSize, size)
	rp.MaxUncompressedPageSize = math.MaxInt32 // the format's own limit
	opts := []file.ReadOption{file.WithReadProps(rp)}
	if md != nil {
		opts = append(opts, file.WithMetadata(md))
	}
	pf, err := file.NewParquetReader(&tableFile{SectionReader: io.NewSectionReader(f, 0, size), f: f}, opts...)
	if err != nil {
		f.Close()
		return nil, err
	}
	return pf, nil
}

// tableFile is an open table as the parquet reader reads it: it closes the
// file with the reader.
type tableFile struct {
	*io.SectionReader
	f srctree.File
}

func (t *tableFile) Close() error { return t.f.Close() }

// checkChunks refuses footers whose row groups or column chunks point
// outside the file or hold negative counts. arrow-go trusts these numbers,
// and some of its readers run in goroutines where a panic on a bad length
// cannot be recovered.
func checkChunks(pf *file.Reader, size int64) error {
	md := pf.MetaData()
	if md.NumRows < 0 {
		return fmt.Errorf("footer: negative row count %d", md.NumRows)
	}
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		r := md.RowGroup(rg)
		if r.NumRows() < 0 {
			return fmt.Errorf("footer: row group %d: negative row count %d", rg, r.NumRows())
		}
		for i := 0; i < r.NumColumns(); i++ {
			cc, err := r.ColumnChunk(i)
			if err != nil {
				return fmt.Errorf("footer: row group %d column %d: %w", rg, i, err)
			}
			start := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && start > cc.DictionaryPageOffset() {
				start = cc.DictionaryPageOffset()
			}
			n := cc.TotalCompressedSize()
			if start < 0 || n < 0 || start > size || n > size-start || cc.TotalUncompressedSize() < 0 || cc.NumValues() < 0 {
				return fmt.Errorf("footer: row group %d column %d: chunk at %d of %d bytes does not fit the %d-byte file", rg, i, start, n, size)
			}
		}
	}
	return nil
}

// recovered turns a panic while decoding a table into an error.
func recovered(rel string, err *error) {
	if r := recover(); r != nil {
		*err = inputErr(rel, -1, "", "cannot decode: %v", r)
	}
}

// Inspect lists the source src (a local file or directory, or an s3://
// location: see OpenSource and InspectTree), reads every table's footer,
// finds candidate payload fields from the schema and samples a few values
// of each for evidence. It writes nothing.
func Inspect(ctx context.Context, src string, opts Options) (*Inspection, error) {
	s, err := openSource(ctx, src)
	if err != nil {
		return nil, err
	}
	return InspectTree(ctx, s.Tree, s.File, opts)
}

// openSource is OpenSource for a caller that did not open the source: a
// bad local path is an *InputError.
func openSource(ctx context.Context, src string) (convert.Source, error) {
	s, err := OpenSource(ctx, src, objstore.Options{})
	var le *srctree.LocalError
	if errors.As(err, &le) {
		return convert.Source{}, &InputError{Source: "parquet", Row: -1, Offset: -1, Err: err}
	}
	return s, err
}

// OpenSource opens the source src names (see srctree.OpenSource): a table
// file, a directory or a prefix holding tables; o.Stats, when set, counts
// what reading a source in object storage fetches. A local path that
// cannot be opened gives a *srctree.LocalError; a store's failures are its
// own.
func OpenSource(ctx context.Context, src string, o objstore.Options) (convert.Source, error) {
	tree, file, err := srctree.OpenSource(ctx, src, o)
	if err != nil {
		return convert.Source{}, err
	}
	return convert.Source{Tree: tree, File: file}, nil
}

// InspectTree is Inspect of the source tree holds (see srctree.OpenSource):
// the table file when file is not "", else every file under its root, a
// directory on this machine or a prefix in a bucket. In a bucket the
// source is read through ranged requests: each table's footer, and the
// column chunks the sample reads, as locally. An error that a failure of
// the store caused is the store's.
func InspectTree(ctx context.Context, tree *srctree.Tree, file string, opts Options) (*Inspection, error) {
	ins, err := inspectTree(ctx, tree, file, opts)
	return ins, storeFirst(tree, err)
}

func inspectTree(ctx context.Context, tree *srctree.Tree, file string, opts Options) (*Inspection, error) {
	opts = opts.withDefaults()
	in, err := listInputs(ctx, tree, file)
	if err != nil {
		return nil, err
	}
	if err := in.newOnly(opts.Base); err != nil {
		return nil, err
	}
	src := tree.Location()
	if file != "" {
		src = tree.Path(file)
	}
	ins := &Inspection{Src: src, Root: in.root, in: in, opts: opts, Warnings: append([]string(nil), in.warnings...), source: convert.Source{Tree: tree, File: file}}
	for _, o := range in.others {
		ins.Others = append(ins.Others, o.rel)
	}
	if len(in.tables) == 0 {
		return nil, noTables(src, in)
	}
	agg := map[string]int{}
	for _, f := range in.tables {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		inspect := inspectTable
		if f.arrow {
			inspect = inspectArrow
		}
		t, err := inspect(ctx, in, f, opts, &ins.Warnings)
		if err != nil {
			return nil, err
		}
		if err := in.checkSchema(t, ins.Tables); err != nil {
			return nil, err
		}
		ins.Tables = append(ins.Tables, t)
		for _, c := range t.Candidates {
			k := FieldName(c.Path) + "\x00" + fmt.Sprint(c.Struct)
			i, ok := agg[k]
			if !ok {
				i = len(ins.Candidates)
				agg[k] = i
				ins.Candidates = append(ins.Candidates, Candidate{Path: c.Path, Type: c.Type, Struct: c.Struct})
			}
			a := &ins.Candidates[i]
			nulls := a.Evidence.Nulls
			if a.Tables == 0 {
				nulls = c.Evidence.Nulls
			} else if nulls != nil && c.Evidence.Nulls != nil {
				nulls = new(*nulls + *c.Evidence.Nulls)
			} else {
				nulls = nil
			}
			a.Tables++
			a.Rows += c.Rows
			a.ChunkBytes += c.ChunkBytes
			if a.Media == "" {
				a.Media = c.Media
			}
			mergeEvidence(&a.Evidence, c.Evidence)
			a.Remote += c.Remote
			a.Evidence.Nulls = nulls
		}
	}
	return ins, nil
}

func mergeEvidence(dst *plan.Evidence, src plan.Evidence) {
	if src.NonNull > 0 {
		if dst.NonNull == 0 || src.MinBytes < dst.MinBytes {
			dst.MinBytes = src.MinBytes
		}
		if src.MaxBytes > dst.MaxBytes {
			dst.MaxBytes = src.MaxBytes
		}
	}
	dst.Values += src.Values
	dst.Sampled += src.Sampled
	dst.NonNull += src.NonNull
	dst.TotalBytes += src.TotalBytes
	if dst.NonNull > 0 {
		dst.MeanBytes = dst.TotalBytes / dst.NonNull
	}
	for _, k := range src.Kinds {
		if !slices.Contains(dst.Kinds, k) {
			dst.Kinds = append(dst.Kinds, k)
		}
	}
	slices.Sort(dst.Kinds)
}

func inspectTable(ctx context.Context, in *inputs, f inputFile, opts Options, warnings *[]string) (t *Table, err error) {
	defer recovered(f.rel, &err)
	pf, err := in.openTable(ctx, f.rel, f.size, nil, false, opts.Allocator)
	if err != nil {
		return nil, inputErr(f.rel, -1, "", "not a readable parquet file: %w", err)
	}
	defer pf.Close()
	if err := checkChunks(pf, f.size); err != nil {
		return nil, inputErr(f.rel, -1, "", "%w", err)
	}
	fr, sc, err := pqread.Open(pf, pqarrow.ArrowReadProperties{}, opts.Allocator)
	if err != nil {
		return nil, inputErr(f.rel, -1, "", "schema: %w", err)
	}
	md := pf.MetaData()
	t = &Table{Rel: f.rel, OutRel: f.rel, Path: in.where(f), Size: f.size, Rows: md.NumRows, RowGroups: pf.NumRowGroups(), schema: sc, md: md, src: f}
	var features json.RawMessage
	if v := md.KeyValueMetadata().FindValue(HFKey); v != nil {
		t.HF = *v
		if features, err = parseHFMeta(f.rel, *v); err != nil {
			return nil, err
		}
	}
	t.annotated = findAnnotated(md.Schema)
	for _, a := range t.annotated {
		if a.what == "JSON" {
			continue // kept: written back as JSON
		}
		*warnings = append(*warnings, fmt.Sprintf("%s: %q is annotated %s in parquet; a rewritten table keeps its values as plain binary, without the annotation", f.rel, strings.Join(a.path, "."), a.what))
	}
	t.findCandidates(features, warnings)
	for i := range t.Candidates {
		t.Candidates[i].Rows = t.Rows
		t.Candidates[i].ChunkBytes = chunkBytes(pf, t.Candidates[i])
		t.Candidates[i].Evidence.Nulls = statNulls(pf, t.Candidates[i], t.Rows)
	}
	if err := sample(ctx, in, pf, fr, t, opts, warnings); err != nil {
		return nil, err
	}
	return t, nil
}

// parseHFMeta returns the features of a huggingface metadata value v of
// the table rel (nil when it declares none), or an *InputError when v is
// not usable.
func parseHFMeta(rel, v string) (json.RawMessage, error) {
	var syntax any
	if jerr := json.Unmarshal([]byte(v), &syntax); jerr != nil {
		return nil, inputErr(rel, -1, "", "the %q metadata (Hugging Face features) is broken JSON: %v", HFKey, jerr)
	}
	features, err := hfFeatures(v)
	if err != nil {
		return nil, inputErr(rel, -1, "", "the %q metadata (Hugging Face features) is unusable: %v", HFKey, err)
	}
	return features, nil
}

// findCandidates finds the table's payload fields from its schema, names
// the Hugging Face feature that declares each (features may be nil), and
// warns about media features whose column cannot carry payloads. Rows,
// ChunkBytes and Evidence are left to the caller, which knows the format.
func (t *Table) findCandidates(features json.RawMessage, warnings *[]string) {
	var found []Candidate
	for _, fld := range t.schema.Fields() {
		findCandidates(fld, []string{fld.Name}, &found)
	}
	for _, c := range found {
		if c.Struct || t.annotation(c.Path) == "" {
			t.Candidates = append(t.Candidates, c)
		}
	}
	if features == nil {
		return
	}
	for i := range t.Candidates {
		c := &t.Candidates[i]
		if feat, ok := featureAt(features, c.Path); ok {
			c.Media = describeMedia(feat)
		}
	}
	// Media features whose column cannot carry payloads: say so.
	if ms, ok := parseObject(features); ok {
		for _, m := range ms {
			media := describeMedia(m.Value)
			if media == "" {
				continue
			}
			if !slices.ContainsFunc(t.Candidates, func(c Candidate) bool { return len(c.Path) == 1 && c.Path[0] == m.Key }) {
				*warnings = append(*warnings, fmt.Sprintf("%s: %q is declared %s but its column holds no struct<bytes, path> or binary values; left as is", t.Rel, m.Key, media))
			}
		}
	}
}

// isBinary reports whether t is a binary, large_binary or fixed_size_binary type.
func isBinary(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return true
	}
	return false
}

func isString(t arrow.DataType) bool {
	return t.ID() == arrow.STRING || t.ID() == arrow.LARGE_STRING
}

// hfStruct returns the positions of "bytes" and "path" in a Hugging Face
// media struct, or ok false when st is not struct<bytes: binary, path: string>.
func hfStruct(t arrow.DataType) (bi, pi int, ok bool) {
	st, isStruct := t.(*arrow.StructType)
	if !isStruct || st.NumFields() != 2 {
		return 0, 0, false
	}
	bi, okb := st.FieldIdx("bytes")
	pi, okp := st.FieldIdx("path")
	if !okb || !okp || !isBinary(st.Field(bi).Type) || st.Field(bi).Type.ID() == arrow.FIXED_SIZE_BINARY || !isString(st.Field(pi).Type) {
		return 0, 0, false
	}
	return bi, pi, true
}

// listElemField returns the element field of a list or large list type.
func listElemField(t arrow.DataType) (arrow.Field, bool) {
	switch lt := t.(type) {
	case *arrow.ListType:
		return lt.ElemField(), true
	case *arrow.LargeListType:
		return lt.ElemField(), true
	}
	return arrow.Field{}, false
}

// findCandidates walks a field for payload fields.
func findCandidates(f arrow.Field, path []string, out *[]Candidate) {
	add := func(isStruct bool) {
		*out = append(*out, Candidate{Path: slices.Clone(path), Type: f.Type.String(), Struct: isStruct})
	}
	t := f.Type
	for {
		ef, ok := listElemField(t)
		if !ok {
			break
		}
		t = ef.Type
	}
	switch {
	case isBinary(t):
		add(false)
	case func() bool { _, _, ok := hfStruct(t); return ok }():
		add(true)
	case t.ID() == arrow.STRUCT:
		for _, c := range t.(*arrow.StructType).Fields() {
			findCandidates(c, append(slices.Clone(path), c.Name), out)
		}
	}
}

// chunkBytes sums the uncompressed sizes of the column chunks that hold a
// candidate's payloads: the leaves whose parquet path is the candidate's path
// with list wrapper levels in between or after (and "bytes" last for a media
// struct).
func chunkBytes(pf *file.Reader, c Candidate) int64 {
	md := pf.MetaData()
	sd := md.Schema
	var leaves []int
	for i := 0; i < sd.NumColumns(); i++ {
		p := []string(sd.Column(i).ColumnPath())
		if c.Struct {
			if len(p) == 0 || p[len(p)-1] != "bytes" {
				continue
			}
			p = p[:len(p)-1]
		}
		if matchLeaf(c.Path, p) {
			leaves = append(leaves, i)
		}
	}
	var n int64
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		r := md.RowGroup(rg)
		for _, i := range leaves {
			if cc, err := r.ColumnChunk(i); err == nil {
				n += cc.TotalUncompressedSize()
			}
		}
	}
	return n
}

// statNulls counts the rows whose payload slot is null, from the column
// chunks' statistics, for a field outside lists: the nulls of its leaf (a
// null struct above it counts), or for a media struct the rows with
// neither bytes nor a path, when the counts of the two leaves settle it.
// It returns nil when the statistics cannot say (a field in a list, a
// chunk without a null count, two leaves that leave it open).
func statNulls(pf *file.Reader, c Candidate, rows int64) *int64 {
	md := pf.MetaData()
	sd := md.Schema
	leafNulls := func(last string) (int64, bool) {
		idx := -1
		for i := 0; i < sd.NumColumns(); i++ {
			p := []string(sd.Column(i).ColumnPath())
			if last != "" {
				if len(p) == 0 || p[len(p)-1] != last {
					continue
				}
				p = p[:len(p)-1]
			}
			if slices.Equal(p, c.Path) {
				if idx >= 0 || sd.Column(i).MaxRepetitionLevel() > 0 {
					return 0, false
				}
				idx = i
			}
		}
		if idx < 0 {
			return 0, false
		}
		var n int64
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			cc, err := md.RowGroup(rg).ColumnChunk(idx)
			if err != nil {
				return 0, false
			}
			if set, err := cc.StatsSet(); err != nil || !set {
				return 0, false
			}
			st, err := cc.Statistics()
			if err != nil || st == nil || !st.HasNullCount() {
				return 0, false
			}
			n += st.NullCount()
		}
		return n, true
	}
	if !c.Struct {
		if n, ok := leafNulls(""); ok {
			return &n
		}
		return nil
	}
	b, okb := leafNulls("bytes")
	p, okp := leafNulls("path")
	if !okb || !okp {
		return nil
	}
	// Rows with neither: at least b+p-rows, at most the fewer of the two.
	lo, hi := max(b+p-rows, 0), min(b, p)
	if lo != hi {
		return nil
	}
	return &lo
}

// matchLeaf reports whether the parquet path p spells the field path want,
// allowing list wrapper levels (list, element, item, array, bag) after any
// component.
func matchLeaf(want, p []string) bool {
	j := 0
	for _, x := range p {
		switch {
		case j < len(want) && x == want[j]:
			j++
		case j == 0:
			return false
		case x == "list" || x == "element" || x == "item" || x == "array" || x == "bag":
		default:
			return false
		}
	}
	return j == len(want)
}

// sample reads the first rows of a few evenly spaced row groups, projecting
// only the candidates' columns, and records evidence for each candidate.
func sample(ctx context.Context, in *inputs, pf *file.Reader, fr *pqarrow.FileReader, t *Table, opts Options, warnings *[]string) error {
	if len(t.Candidates) == 0 || t.Rows == 0 {
		for i := range t.Candidates {
			t.Candidates[i].Evidence.Values = t.Rows
		}
		return nil
	}
	sd := pf.MetaData().Schema
	var cols []int
	for i := 0; i < sd.NumColumns(); i++ {
		root := sd.ColumnRoot(i).Name()
		if slices.ContainsFunc(t.Candidates, func(c Candidate) bool { return c.Path[0] == root }) {
			cols = append(cols, i)
		}
	}
	rgs := plan.SampleIndices(4, int64(t.RowGroups))
	per := (opts.SampleSize + len(rgs) - 1) / len(rgs)
	fr.Props.BatchSize = int64(per)
	for _, rg := range rgs {
		if pf.MetaData().RowGroup(int(rg)).NumRows() == 0 {
			continue
		}
		rr, err := fr.GetRecordReader(ctx, cols, []int{int(rg)})
		if err != nil {
			return inputErr(t.Rel, -1, "", "row group %d: %w", rg, err)
		}
		ok := rr.Next()
		if !ok {
			err := rr.Err()
			rr.Release()
			if err != nil {
				return inputErr(t.Rel, -1, "", "row group %d: %w", rg, err)
			}
			continue
		}
		rec := rr.RecordBatch()
		for i := range t.Candidates {
			c := &t.Candidates[i]
			idx := rec.Schema().FieldIndices(c.Path[0])
			if len(idx) != 1 {
				continue
			}
			col := rec.Column(idx[0])
			live := allLive(col.Len())
			visitPayloads(col, c.Path[1:], c.Struct, live, func(val []byte, valid bool, name string) {
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
		rr.Release()
		// The few values came with their pages and dictionary, as large
		// as the row group in tables written by pyarrow: collected
		// here, they do not double the peak beside the next row group's.
		if pf.MetaData().RowGroup(int(rg)).TotalByteSize() >= collectAfter {
			runtime.GC()
		}
	}
	for i := range t.Candidates {
		t.Candidates[i].Evidence.Values = t.Rows
	}
	return nil
}

// sampleFile records the sampled value of a media struct whose bytes are
// null and whose path names a file: the file is the payload (the
// conversion packs it), so it counts as a value of its size and kind; a
// path that names no file under the root is a warning, since the
// conversion stops there.
// RemoteFetcher fetches the whole file a URL names (fetch.Fetcher).
type RemoteFetcher interface {
	Fetch(ctx context.Context, url string) ([]byte, error)
}

func (in *inputs) sampleFile(ctx context.Context, rel string, c *Candidate, name string, strictRemote bool, warnings *[]string) {
	if isRemoteCell(name) && !strictRemote {
		c.Remote++
		c.Evidence.Add(0, "remote file")
		return
	}
	e, err := in.resolvePath(name)
	if err != nil {
		if !slices.Contains(c.Evidence.Kinds, "missing file") { // one warning a field
			*warnings = append(*warnings, fmt.Sprintf("%s: %s: %v; converting it stops there", rel, FieldName(c.Path), err))
		}
		c.Evidence.Add(0, "missing file")
		return
	}
	prefix := make([]byte, min(int64(sniff.PrefixLen), e.Size))
	if f, err := in.tree.OpenEntry(ctx, e); err == nil {
		n, _ := f.ReadAt(prefix, 0)
		prefix = prefix[:n]
		f.Close()
	}
	c.Evidence.Add(e.Size, sniff.Detect(prefix).Label)
}

func allLive(n int) []bool {
	l := make([]bool, n)
	for i := range l {
		l[i] = true
	}
	return l
}

// visitPayloads calls fn for every payload slot reachable from arr along
// path (struct fields by name; lists looked through). For struct<bytes,
// path> targets a value with null bytes and a path is reported with valid
// false and the path as name.
func visitPayloads(arr arrow.Array, path []string, isStruct bool, live []bool, fn func(val []byte, valid bool, name string)) {
	switch a := arr.(type) {
	case array.ListLike:
		child := a.ListValues()
		cl := make([]bool, child.Len())
		for i := 0; i < a.Len(); i++ {
			if !live[i] || a.IsNull(i) {
				continue
			}
			s, e := a.ValueOffsets(i)
			for k := s; k < e; k++ {
				cl[k] = true
			}
		}
		visitPayloads(child, path, isStruct, cl, fn)
		return
	case *array.Struct:
		if len(path) > 0 {
			j, ok := a.DataType().(*arrow.StructType).FieldIdx(path[0])
			if !ok {
				return
			}
			cl := make([]bool, a.Len())
			for i := range cl {
				cl[i] = live[i] && a.IsValid(i)
			}
			visitPayloads(a.Field(j), path[1:], isStruct, cl, fn)
			return
		}
		bi, pi, ok := hfStruct(a.DataType())
		if !ok {
			return
		}
		b, p := a.Field(bi), a.Field(pi)
		for i := 0; i < a.Len(); i++ {
			if !live[i] {
				continue
			}
			if a.IsNull(i) || b.IsNull(i) {
				name := ""
				if a.IsValid(i) && p.IsValid(i) {
					name = stringAt(p, i)
				}
				fn(nil, false, name)
				continue
			}
			fn(binaryAt(b, i), true, stringAt(p, i))
		}
		return
	}
	if len(path) > 0 || !isBinary(arr.DataType()) {
		return
	}
	for i := 0; i < arr.Len(); i++ {
		if !live[i] {
			continue
		}
		if arr.IsNull(i) {
			fn(nil, false, "")
			continue
		}
		fn(binaryAt(arr, i), true, "")
	}
}

// binaryAt returns the bytes of a binary-like array's value i (aliasing
// Arrow memory).
func binaryAt(arr arrow.Array, i int) []byte {
	switch a := arr.(type) {
	case *array.Binary:
		return a.Value(i)
	case *array.LargeBinary:
		return a.Value(i)
	case *array.FixedSizeBinary:
		return a.Value(i)
	}
	return nil
}

// stringAt returns a string-like array's value i, "" when null.
func stringAt(arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return ""
	}
	switch a := arr.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	}
	return ""
}

// Selection is the set of fields to extract, validated against the tables.
type Selection struct {
	// Paths are the selected fields, top-level columns first.
	Paths [][]string
	// Default is true when the paths were chosen from Hugging Face metadata
	// rather than named by the caller.
	Default bool
}

// ErrBadSelection is wrapped when a selection names no field, repeats or
// nests paths, or names a field that no table has.
var ErrBadSelection = errors.New("bad selection")

// Select validates a selection: columns name top-level fields, fields name
// nested paths. With neither, it selects exactly the fields that Hugging Face
// metadata declares as media; when there are none it returns an error
// wrapping ErrNeedSelection. A selected field that exists but holds no
// payloads (not binary, not a media struct) is an *InputError.
func (ins *Inspection) Select(columns []string, fields [][]string) (Selection, error) {
	var paths [][]string
	for _, c := range columns {
		paths = append(paths, []string{c})
	}
	for _, f := range fields {
		paths = append(paths, slices.Clone(f))
	}
	if len(paths) == 0 {
		var sel Selection
		sel.Default = true
		for _, c := range ins.Candidates {
			if c.Media != "" {
				sel.Paths = append(sel.Paths, c.Path)
			}
		}
		if len(sel.Paths) == 0 {
			return Selection{}, fmt.Errorf("parquet: %w: no Hugging Face media features declared; candidates: %s", ErrNeedSelection, ins.candidateList())
		}
		return sel, nil
	}
	for i, p := range paths {
		if len(p) == 0 || slices.Contains(p, "") {
			return Selection{}, fmt.Errorf("parquet: %w: empty column name in %q", ErrBadSelection, FieldName(p))
		}
		for _, q := range paths[:i] {
			n := min(len(p), len(q))
			if slices.Equal(p[:n], q[:n]) {
				if len(p) == len(q) {
					return Selection{}, fmt.Errorf("parquet: %w: %s selected twice", ErrBadSelection, quotePath(p))
				}
				return Selection{}, fmt.Errorf("parquet: %w: %s and %s overlap", ErrBadSelection, quotePath(q), quotePath(p))
			}
		}
		found := false
		for _, t := range ins.Tables {
			ok, err := resolve(t, p)
			if err != nil {
				return Selection{}, err
			}
			found = found || ok
		}
		if !found {
			return Selection{}, fmt.Errorf("parquet: %w: no table has a field %s; candidates: %s", ErrBadSelection, quotePath(p), ins.candidateList())
		}
	}
	return Selection{Paths: paths}, nil
}

func (ins *Inspection) candidateList() string {
	if len(ins.Candidates) == 0 {
		return "none (no binary or struct<bytes, path> fields)"
	}
	var parts []string
	for _, c := range ins.Candidates {
		parts = append(parts, fmt.Sprintf("%s (%s)", FieldName(c.Path), c.label()))
	}
	return strings.Join(parts, ", ")
}

// label says what a candidate is, for plans and messages.
func (c Candidate) label() string {
	if c.Media != "" {
		return c.Media
	}
	if c.Struct {
		return "struct<bytes, path>"
	}
	return c.Type
}

// resolve reports whether table t has the field at path, and returns an
// *InputError when it has it but the field holds no payloads.
func resolve(t *Table, path []string) (bool, error) {
	idx := t.schema.FieldIndices(path[0])
	if len(idx) == 0 {
		return false, nil
	}
	if len(idx) > 1 {
		return false, inputErr(t.Rel, -1, FieldName(path), "column name is not unique")
	}
	typ := t.schema.Field(idx[0]).Type
	for i := 1; ; i++ {
		for {
			ef, ok := listElemField(typ)
			if !ok {
				break
			}
			typ = ef.Type
		}
		if i == len(path) {
			break
		}
		st, ok := typ.(*arrow.StructType)
		if !ok {
			return false, inputErr(t.Rel, -1, FieldName(path), "%q is %s, not a struct", path[i-1], typ)
		}
		fi := st.FieldIndices(path[i])
		if len(fi) == 0 {
			return false, nil
		}
		if len(fi) > 1 {
			return false, inputErr(t.Rel, -1, FieldName(path), "field name %q is not unique", path[i])
		}
		typ = st.Field(fi[0]).Type
	}
	if isBinary(typ) {
		if a := t.annotation(path); a != "" {
			return false, inputErr(t.Rel, -1, FieldName(path), "the column holds %s, not payloads", a)
		}
		return true, nil
	}
	if _, _, ok := hfStruct(typ); ok {
		return true, nil
	}
	return false, inputErr(t.Rel, -1, FieldName(path), "expected a binary field or a struct<bytes: binary, path: string>, got %s", typ)
}
