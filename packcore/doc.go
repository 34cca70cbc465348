// Package packcore writes, reads and verifies blob packs: directories of plain,
// uncompressed (STORED) zip shards named pack-0000.zip, pack-0001.zip, … that
// hold media payloads byte for byte, addressed by references of the form
// zip://KEY::REFBASE/SHARD.
//
// The writer streams every member (it never holds a large payload whole),
// writes each shard under a temporary name and renames it when complete,
// writes CRC-32 and sizes into every local header (no data descriptors), uses
// zip64 records exactly where a size, offset or count needs them, and records
// per-shard sizes and SHA-256 digests in pack.manifest.json.
//
// The reader parses each shard's central directory once and serves a member
// with one positioned read. Verify checks packs at rest and reports every
// problem it finds.
//
// packcore knows nothing about source formats, tables or terminals: converters
// feed it keys and byte streams, and the CLI renders what it returns.
package packcore
