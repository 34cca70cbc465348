package dsverify

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
)

// This file is what a converter's comparison (a Comparer, in the
// converter's directory) sees of a run: the dataset and the source, each
// opened once; the bpconvert records and strings of the dataset's tables;
// its pack sets; the report; and the readers that compare a source's
// payloads with the members that hold them, which the comparisons of
// datasets no converter of this module wrote (packs alone, blobpack 0.2.0)
// share with the converters'.

// Context returns the run's context: a comparison stops when it is done.
func (v *Check) Context() context.Context { return v.ctx }

// Dataset returns the dataset verified.
func (v *Check) Dataset() Place { return Place{v.out} }

// Source returns the source compared with (Options.Against), opened once:
// a directory or prefix (file ""), or a single file or object (file its
// name in the place). A location in a bucket that names nothing is an
// empty place; a shard list (braces, "::") is no location: opening it
// gives an error matching fs.ErrNotExist, or an empty place.
func (v *Check) Source() (p Place, file string, err error) {
	sp, file, err := v.source()
	return Place{sp}, file, err
}

// Records returns the bpconvert record (the JSON a converter stores under
// the key "bpconvert" in a table's metadata) of every table of the dataset
// in format (parquet, arrow or lance) that holds one, by the table's path
// relative to the dataset root. A Lance table's record is there only if it
// names the columns extracted; a Lance table without one is left to the
// comparison of blobpack 0.2.0's outputs.
func (v *Check) Records(format string) map[string]string {
	out := map[string]string{}
	for rel, r := range v.records {
		if r.format == format {
			out[rel] = r.text
		}
	}
	return out
}

// ReadStrings calls fn for every non-null string of the dataset's table
// rel (a parquet, Arrow, Lance, JSON or JSON lines table, by its name), in
// row order, as the reference check reads it: struct fields under dotted
// column names, list elements under the list's name.
func (v *Check) ReadStrings(rel string, fn func(row int64, column, value string)) error {
	var err error
	p := v.out.file(rel)
	switch tableFormatOf(rel) {
	case "parquet":
		_, err = v.parquetTable(p, rel, nil, fn)
	case "arrow":
		_, err = v.arrowTable(p, nil, fn)
	case "lance":
		_, err = v.lanceTable(p, nil, fn)
	case "json":
		_, err = v.jsonTable(p, fn)
	case "jsonl":
		_, err = v.jsonlTable(p, fn)
	default:
		err = fmt.Errorf("%s: not a table", rel)
	}
	return err
}

// Report returns the run's report: a comparison sets its Against.
func (v *Check) Report() *Report { return v.rep }

// Problem records a problem (up to Options.MaxProblems; the counts keep
// counting).
func (v *Check) Problem(p Problem) { v.problem(p) }

// Compared records one payload of n bytes compared: a mismatch, and the
// problem p with reason, when reason is not "".
func (v *Check) Compared(a *Against, n int64, reason string, p Problem) {
	v.compared(a, n, reason, p)
}

// PackSet returns the pack set of the dataset's pack directory dir
// (relative to the root), opened once.
func (v *Check) PackSet(dir string) (*packcore.Set, error) {
	e := v.set(dir)
	return e.set, e.err
}

// RefSet returns the pack set that holds the member a reference names, and
// the member's key; ok is false for a reference that does not parse, or
// whose pack directory cannot be read (the reference check reports both).
// An absolute or URL reference is resolved as the reference check resolves
// it.
func (v *Check) RefSet(ref string) (set *packcore.Set, key string, ok bool) {
	key, shardPath, err := packcore.ParseRef(ref)
	if err != nil {
		return nil, "", false
	}
	shardPath, _ = v.shardRel(shardPath)
	e := v.set(packcore.CleanRefBase(filepath.ToSlash(filepath.Dir(shardPath))))
	if e.err != nil {
		return nil, "", false
	}
	return e.set, key, true
}

// LanceSource reports whether the dataset has a Lance table with a
// bpconvert record naming the columns extracted (convert-lance wrote it)
// and the source is a Lance dataset (a directory holding _versions, or
// any location in object storage): such a dataset is Lance's to compare,
// and the other comparisons leave it.
func (v *Check) LanceSource() bool { return v.lanceSource() }

// LeRobotSource reports whether the source is a LeRobot dataset (a
// directory or prefix holding meta/info.json), asking once: such a source
// is LeRobot's to compare, unless LanceSource.
func (v *Check) LeRobotSource() bool { return v.leRobotSource() }

// Shards says where CompareShards finds the pack member of each member of
// a WebDataset source's tar shards.
type Shards struct {
	// PackBase is the dataset's pack directory that holds the members (""
	// for media).
	PackBase string
	// Prefixed says each member's key begins with its shard's stem and a
	// slash (convert-wds --shard-prefix).
	Prefixed bool
	// Inline, when set, is asked first for each regular file member, with
	// the key prefix ("" or the stem and a slash) and the member's path in
	// the shard: a non-nil answer compares the member's bytes (read whole)
	// instead of a pack member, returning why they differ ("" when they
	// do not), and counts the payload in Against.Inline.
	Inline func(prefix, name string) func(b []byte) string
}

// CompareShards compares every member of the tar shards src names (a
// directory's or prefix's shards, one file, or a shard list: braces, names
// joined by "::"), read front to back and decompressed as their first
// bytes say, with the pack member of its key, and sets the report's
// Against (format webdataset). It returns the key of every member read
// (file or link).
func (v *Check) CompareShards(src string, s Shards) (map[string]struct{}, error) {
	files, err := v.sourceShards(src)
	if err != nil {
		return nil, fmt.Errorf("--against %s: %w", src, err)
	}
	keys := map[string]struct{}{}
	return keys, v.againstShards(src, files, s, keys)
}

// CompareColumn compares, row by row, the values the field path field
// reaches in the source table srcTable (a parquet or Arrow IPC file of the
// source src) with the references its rewrite table (of the dataset)
// holds at the same place: each payload with the member of set its
// reference names, a media value's file (named relative to the source's
// directory base) with its member, a remote one with the URI kept or the
// member fetched. Mismatches are problems of table, at the row and column.
func (v *Check) CompareColumn(a *Against, src Place, base string, srcTable, table File, field []string, set *packcore.Set) error {
	return v.compareColumn(a, src.p, base, srcTable.f, table.f, table.f.rel, field, set)
}

// CompareKept compares the columns of the source table srcTable that are
// not in extracted (top-level names) with the same columns of table, value
// by value and type by type, and returns the columns and values compared.
func (v *Check) CompareKept(a *Against, srcTable, table File, extracted []string) (columns, values int64, err error) {
	var kc keptCount
	err = v.compareKept(a, &kc, srcTable.f, table.f, table.f.rel, extracted)
	return kc.columns, kc.values, err
}

// OpenLance opens the Lance dataset at rel ("" for the root) of p: a local
// one at its path, one in object storage with ranged reads. A prefix that
// holds nothing gives an error matching lancestore.ErrEmpty and
// fs.ErrNotExist.
func (v *Check) OpenLance(p Place, rel string, o lancefmt.OpenOptions) (*lancefmt.Dataset, error) {
	return openLance(v.ctx, p.p, rel, o)
}

// CompareLanceColumn compares, row by row in scan order, the values of
// column of the source Lance dataset src (blobs or binary values) with the
// references of the same column of the dataset's Lance table out (at table,
// relative to the root), each with the member of the pack directory
// packDir (opened at the first reference) it names; an external blob's URI
// kept as the value is compared with the source's.
func (v *Check) CompareLanceColumn(a *Against, src, out *lancefmt.Dataset, table, column, packDir string) error {
	return v.compareLanceColumn(a, src, out, table, column, v.packsOf(packDir))
}

// SameBytes compares src, read to its end, with the member key of set,
// streaming both. It returns the bytes compared and why they differ ("" when
// they do not: the member is missing, unreadable, or holds other bytes);
// the error is for a source that could not be read.
func SameBytes(src io.Reader, set *packcore.Set, key string) (int64, string, error) {
	return sameBytes(src, set, key)
}

// Place is a location a run reads, opened once: the dataset verified or
// the source compared with, local or in object storage.
type Place struct{ p place }

// File returns the file rel (slash-separated, relative to the place).
func (p Place) File(rel string) File { return File{p.p.file(rel)} }

// Empty reports whether the place is a location in object storage that
// holds nothing.
func (p Place) Empty() bool { return p.p.t.Empty() }

// RelOf returns the path relative to the place of a location that a reader
// of the place handed back (lancefmt's blob locations), false for one
// outside it.
func (p Place) RelOf(loc string) (string, bool) { return p.p.relOf(loc) }

// File is a file of a place. Its String is its name in messages.
type File struct{ f treeFile }

// String is the file's name in messages: the place's name joined with its
// path.
func (f File) String() string { return f.f.String() }

// Exists reports whether the file is there (a regular file, or another
// kind but a directory, which opening it then refuses or reads).
func (f File) Exists() bool { return f.f.exists() }

// ReadAll reads the whole file, of at most max bytes (one request in
// object storage).
func (f File) ReadAll(ctx context.Context, max int64) ([]byte, error) { return f.f.readAll(ctx, max) }

// Stream opens the file for reading front to back (reads fetched ahead in
// object storage). The error names the file. Close it.
func (f File) Stream(ctx context.Context) (io.ReadCloser, error) { return f.f.stream(ctx) }

// Section opens the n bytes of the file from off for reading front to
// back. Close it.
func (f File) Section(ctx context.Context, off, n int64) (io.ReadCloser, error) {
	return f.f.section(ctx, off, n)
}
