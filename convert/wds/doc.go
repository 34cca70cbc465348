// Package wds converts WebDataset tar shards into blob packs, members byte
// for byte under their own names, and writes a samples table that makes the
// dataset random-access:
//
//	DST/media/pack-NNNN.zip        every member, referenced as
//	                               zip://KEY::media/pack-NNNN.zip
//	DST/media/pack.manifest.json   size and SHA-256 of every pack shard
//	DST/samples.parquet            one row per sample (unless NoTable)
//
// Shards are named by a file, a directory (its *.tar, *.tar.gz, *.tgz,
// *.tar.bz2, *.tar.xz, *.tar.zst files in sorted order), brace patterns
// joined with "::" as WebDataset writes them (ExpandShards), or "-" for one
// shard on standard input. Compression is detected from the bytes (gzip,
// multi-member included, bzip2, xz, zstd, or none); archive/tar reads
// ustar, GNU and PAX archives.
//
// # Keys and members
//
// A member's key is its tar name without leading "./" (and, with
// ShardPrefix, after its shard's stem: train-000003/000123.jpg). Members
// stream from the tar reader straight into the pack writer; none is held
// whole. Directory entries are skipped and counted. Absolute names, names
// with a ".." element, names packcore cannot store, duplicate keys (within
// a shard or across shards), devices and FIFOs, and truncated or corrupt
// shards (including a shard that ends without the end-of-archive marker, or
// whose compressed stream fails its checksum) stop the run with an
// *InputError that names the shard, the member and the byte offset of the
// member's first header block in the uncompressed tar stream (or where
// reading stopped). Offsets after a sparse member are unknown (-1).
//
// # Links
//
// A hard link, or a symbolic link whose target (resolved against the
// link's directory) is a member converted earlier in the same shard,
// becomes a member of its own holding the target's bytes: they are read
// back from the pack, not from the source, so standard input works and
// nothing is buffered. A pack shard can be read only once the writer has
// completed it, so a link waits in a queue until the shard holding its
// target is complete, and is then copied from it. Before the links still
// waiting when the input ends, the open shard is completed
// (packcore.Writer.EndShard), so their targets' bytes can be read back.
// The reader checks that the shard is complete and fails otherwise, so a
// change in the writer cannot copy wrong bytes. Links cost at most one
// extra pack shard boundary per run, and memory for the queue only.
// Symbolic links that point elsewhere (absolute, out of the shard, to a
// directory or to a later member) stop the run.
//
// A sample's members (links included) form one placement group, so they
// share a shard unless the sample is too large (see packcore's GroupFill).
//
// # The samples table
//
// Members are grouped into samples exactly as WebDataset groups them:
// adjacent members of one shard whose names match
// ^((?:.*/|)[^.]+)[.]([^/]*)$ with the same first group, the sample key;
// the second group, lower-cased, is the field. Names without a dot in their
// last element and __name__ metadata are packed but belong to no sample.
// __key__ is the sample key of the pack key (without "./", with any shard
// prefix), __shard__ the shard's path relative to the deepest directory
// holding every shard (the file name for a directory source; like
// WebDataset's __url__, but never an absolute path; StdinName for standard
// input), and every field a
// nullable string column (sorted by name) holding the member's reference,
// or its text for Inline fields. Link members take part like the files
// they become (WebDataset's reader would skip them). A sample key that reappears after other members (in the
// same shard or a later one) or a field repeated within a sample is an
// error when the table is written, and a warning otherwise.
//
// The set of fields is known only after the last shard, so each finished
// sample is appended to a spool file in the staging directory (key, shard
// index, and per field an id, a kind and a pack key or inline text). After
// the pack writer closes, the spool is read back once, references are
// looked up by key, and the table is written in row groups of at most 16Ki
// rows or 8 MiB of values, through a temporary file that is synced and
// renamed; a row group's columns are built outside the Go heap (package
// offheap), and keys and references are written without a dictionary
// (they are distinct in every row). Memory stays bounded by one row group
// whatever the dataset's size. The writer's key index and the sets of keys
// and sample keys seen (by the plan's pass over the headers and by the
// conversion) keep their keys in temporary files, with about 9 bytes a key
// in memory (package keyindex).
//
// # Reading the output
//
// References are relative to DST, and fsspec resolves a relative zip path
// against the current directory, so readers work from DST:
//
//	import os, fsspec, datasets
//	os.chdir("DST")
//	ds = datasets.load_dataset("parquet", data_files="samples.parquet", split="train")
//	with fsspec.open(ds[0]["jpg"], "rb") as f:    # zip://KEY::media/pack-0000.zip
//	    jpeg = f.read()
//	ds = ds.cast_column("jpg", datasets.Image())  # decoded lazily through fsspec
//
// (Reading every reference of a converted dataset with fsspec 2022.11 was
// checked by hand; the Image cast follows Hugging Face datasets' handling of
// string paths with "::" and was not run here.)
//
// # What it is not for
//
// wds does not decode payloads, recompress anything, rename members, read
// WebDataset's wids index files, fetch remote URLs or expand environment
// variables in patterns (the shell does that). It never prints; progress
// goes through a progress.Counter, and Inspect computes a plan.Plan that
// the CLI renders.
package wds
