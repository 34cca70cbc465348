// Package lancefmt reads Lance datasets (the columnar table format of the Lance
// project and LanceDB) in pure Go and yields their rows as arrow-go record
// batches.
//
// It is for converting Lance tables without Python, Rust or cgo: Open finds
// the versions under _versions (both manifest naming schemes), decodes the
// chosen manifest and refuses reader feature flags it does not know;
// Dataset.Scan reads the requested columns fragment by fragment, one page
// per column at a time, and drops the rows named by deletion files (Arrow
// IPC and roaring bitmaps); Dataset.Blobs yields, per row of a blob column
// (blob v1 and v2: inline, packed, dedicated, external and managed), a
// handle that reads the payload on demand and tells where it is stored, so
// shared blobs can be recognised;
// for inspectors, Describe gathers what lance-inspect shows (versions,
// fragments, schema, how every stored column is encoded, the first rows),
// built on Dataset.ColumnEncodings (how each column of a fragment is stored:
// file version, pages and their encodings) and Dataset.Head (the first rows
// as JSON-ready values).
//
// Data files of the legacy format (0.x, storage version "legacy"), 2.0, 2.1
// and 2.2 are decoded: the 2.0 array encodings, and the 2.1/2.2 structural
// layouts (mini-block, full-zip, constant/all-null, blob) with repetition
// and definition levels and their compressions (flat, variable, bit-packing,
// FSST, RLE, dictionaries, zstd, LZ4, byte-stream split, fixed-size lists,
// packed structs). Dictionary-typed columns are materialised: the reader
// yields their values, not indices.
//
// It also writes, narrowly: Dataset.Rewrite (planned without touching disk
// by Dataset.PlanRewrite) writes a new one-version dataset from an opened
// one, keeping its fragments, physical rows, deletion files, schema, table
// configuration, the indices whose columns are kept and the tags that
// name the opened version (naming version 1; RewritePlan.Tags lists the
// others, which are dropped). Kept columns of 2.0,
// 2.1 and 2.2 data files are page-copied, not re-encoded, each at its own
// file version (Lance 14 mixes versions in one dataset, even in one
// fragment: a fragment gets one new data file per version); fragments of
// legacy (0.1) files are decoded and transcoded into file version 2.0
// (primitive, boolean, binary and string types, fixed-size lists of
// fixed-width items, lists and structs, one page per column); chosen top-level
// columns are replaced by nullable utf8 columns of strings the caller gives
// (encoded as 2.0 or 2.1/2.2 pages, like the rest of the file). It refuses:
// blob columns that are not replaced (their payloads live at absolute file
// offsets or in sidecar files that page copies do not carry), legacy
// columns of other types (dictionaries, packed structs), fragments mixing
// legacy and 2.x files, file version 2.3, data files
// with global buffers, external row id or version sequences and overlays.
// Indices on replaced columns are dropped, with a hint how to rebuild them.
// WriteSharedBlobDataset, for tests only, writes blob v2 descriptors with
// the ref_id field that released Lance cannot write yet.
//
// The decoding below the dataset API lives in internal packages, one job
// each: internal/wire walks protobuf messages, internal/decode turns page
// buffers into leaves (2.0 array encodings, 2.1+ layouts and compressions),
// internal/fsst and internal/bitpack hold the FSST and FastLanes codecs, and
// internal/assemble builds Arrow arrays from leaves and repetition and
// definition levels. This package reads the files, walks the schema and
// holds the cursors, the blob handles and the rewriter.
//
// Every read goes through a Storage (OpenOptions.Storage): files on this
// machine by default, or objects in a bucket through lancefmt/lancestore,
// which keeps the S3 client out of this package. Reads are ranged: the
// manifest, each data file's footer and metadata, then the pages and blobs
// a scan or a page copy needs, a page's buffers at a time (a full-zip page
// of values through a window of positioned reads, never held whole).
//
// It is not a general Lance writer (it does not append, update or compact,
// nor encode arbitrary Arrow data), a query engine or an index reader: it
// does not evaluate filters, read secondary indices, stable row ids,
// overlays, or the unstable file version 2.3. Rewrite writes to a local
// directory only. An
// encoding it does not know is reported as an error naming the dataset,
// fragment, column, page and encoding; it never guesses values.
package lancefmt
