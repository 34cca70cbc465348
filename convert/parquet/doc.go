// Package parquet moves payload columns out of parquet tables into blob packs
// and rewrites those columns, in place, to reference strings; everything else
// in the tables stays as it was.
//
// It handles one parquet file or a directory of them (every *.parquet below
// it, in sorted order; other files are copied unchanged), and a Hugging Face
// save_to_disk directory (state.json or dataset_dict.json at its root):
// the Arrow IPC data files its state.json files name are read record batch
// by record batch and written again as Arrow IPC streams at the same paths,
// so that the output is a save_to_disk directory too (see hfdisk.go).
// Candidate payload
// columns are found from the schema alone: binary, large_binary and
// fixed_size_binary leaves, Hugging Face media features (Image, Audio, Video,
// Pdf, ... stored as struct<bytes: binary, path: string>, as the "huggingface"
// key-value metadata declares them) and lists of either. Inspect reads footers
// and a few sampled values and writes nothing; Convert writes the new dataset:
//
//	DST/<same relative path>.parquet   every table, selected columns rewritten
//	DST/media/pack-NNNN.zip            the payloads, referenced as
//	                                   zip://KEY::media/pack-NNNN.zip
//
// The source is read through srctree, so it may be a directory on
// this machine or a prefix (or a single table object) in a bucket
// (InspectTree): there every read is ranged, each table's footer and then
// its column chunks, and the package itself speaks to no store.
//
// Tables are converted row group by row group with bounded batches: one output
// row group per input row group, the same codec per column, the same column
// order and nullability. Top-level binary and media columns are read page by
// page, straight to the pack writer, and only the other leaves as Arrow
// batches (see direct.go); other selections decode whole batches. A selected binary leaf becomes a string column in
// place, a Hugging Face media struct keeps its type with bytes null and the
// reference as its path (Options.Media), and nulls stay null.
// Member keys depend only on the row: <column path>/<table path without
// .parquet>/<row:012d><ext> (list elements add -<index:04d>), and every row's
// payloads form one placement group so they share a shard. A converter that
// needs its own key scheme sets Options.Keys, and ConvertTo writes into a
// directory and pack writer the caller owns (convert/lerobot does both).
//
// The package is not a general parquet rewriter: it does not change codecs,
// row groups, encodings of untouched columns' values or anything outside the
// selected columns and the metadata keys described on Convert, and it does not
// read payloads back from packs. It never prints; progress goes through a
// progress.Counter.
package parquet
