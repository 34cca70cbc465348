// Package decode decodes the page buffers of Lance data files of format 2.0,
// 2.1 and 2.2 into leaves: fixed- or variable-width values with their
// validity and, for the structural layouts of 2.1+, repetition and
// definition levels. enc20.go decodes the 2.0 array encodings (flat,
// nullable, fixed-size list, list, binary, dictionary, packed struct);
// layout.go the 2.1+ page layouts (mini-block, full-zip, constant/all-null)
// and dictionaries; compress.go their compressive encodings (flat, variable,
// bit-packing, FSST, RLE, byte-stream split, fixed-size lists, packed
// structs) and the zstd and LZ4 buffer compressions.
//
// It does not read files or build Arrow arrays: the lance package reads the
// buffers of a page and assembles the leaves into arrays. Malformed input
// gives errors wrapping wire.ErrCorrupt; an encoding it does not know is
// an error naming it, never a guess.
package decode
