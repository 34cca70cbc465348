// Package lance converts Lance datasets: the chosen payload columns (binary
// and large_binary columns, blob v1 and blob v2 columns) move into blob
// packs under DST/media, and the table stays Lance at DST/table.lance, its
// kept columns' pages copied byte for byte and each extracted column
// replaced by a nullable utf8 column of zip:// references (see
// lance.Dataset.Rewrite).
//
// Members are keyed <column>/<row:012d><ext>, row being the 0-based
// position in the scan of the chosen version (deleted rows not counted) and
// the extension sniffed from the bytes. Rows of a blob v2 column that share
// a blob (the same positive ref_id, or descriptors pointing at the same
// stored bytes) get one member, keyed by the first such row, which every
// sharing row references. Nulls stay null; empty values become zero-length
// members; external blobs are copied into the packs or, with
// ExternalKeep, left as their URI.
//
// An append (convert.Options.Base) converts the fragments of a newer
// version that the committed output's table does not hold: their members
// are keyed after the rows the output numbered (Record.NextRow), and the
// table gets a new version that carries the converted fragments unread
// (with the source's new deletion files where rows were deleted since) and
// adds the new ones (see lancefmt.Dataset.PlanExtend).
//
// It is a converter on the convert contract (Job). It reads a source in a
// local directory or in object storage (s3://BUCKET/PREFIX, through
// lancefmt/lancestore: ranged reads of the manifest, file metadata, pages
// and blobs), and it reads and writes Lance through package lancefmt only.
package lance
