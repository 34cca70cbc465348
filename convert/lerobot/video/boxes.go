package video

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrTruncated is matched (errors.Is) by CheckBoxes errors for a file whose
// boxes run past its end: a copy or download that stopped early.
var ErrTruncated = errors.New("truncated")

// maxTopBoxes bounds the boxes CheckBoxes walks (a file of tiny boxes
// cannot make it loop for long).
const maxTopBoxes = 1 << 16

// CheckBoxes walks the top-level boxes of an ISO base media file (MP4,
// MOV) of size bytes and checks that they tile the file exactly: every
// box's declared size fits what is left of the file, the last one ends at
// the file's end, and a moov box is present. libav plays a file that lost
// its last bytes as if it were shorter; this catches the loss. Files that
// do not start with an ftyp box are not ISO media and are not checked (nil).
// Errors match ErrTruncated when a box runs past the end.
func CheckBoxes(r io.ReaderAt, size int64) error {
	var hdr [16]byte
	if size < 8 {
		return nil
	}
	if _, err := r.ReadAt(hdr[:8], 0); err != nil {
		return fmt.Errorf("reading the first box: %w", err)
	}
	if string(hdr[4:8]) != "ftyp" {
		return nil
	}
	var off int64
	moov := false
	for n := 0; off < size; n++ {
		if n == maxTopBoxes {
			return fmt.Errorf("more than %d top-level boxes", maxTopBoxes)
		}
		if size-off < 8 {
			return fmt.Errorf("%d stray bytes after the last box at offset %d: %w", size-off, off, ErrTruncated)
		}
		if _, err := r.ReadAt(hdr[:8], off); err != nil {
			return fmt.Errorf("box at offset %d: %w", off, err)
		}
		boxSize := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := hdr[4:8]
		head := int64(8)
		switch boxSize {
		case 0: // extends to the end of the file
			boxSize = size - off
		case 1: // 64-bit size follows the type
			if size-off < 16 {
				return fmt.Errorf("box %q at offset %d: 64-bit size cut off: %w", printable(typ), off, ErrTruncated)
			}
			if _, err := r.ReadAt(hdr[8:16], off+8); err != nil {
				return fmt.Errorf("box at offset %d: %w", off, err)
			}
			u := binary.BigEndian.Uint64(hdr[8:16])
			if u > uint64(size) {
				return fmt.Errorf("box %q at offset %d declares %d bytes, but the file ends %d bytes after its start: %w", printable(typ), off, u, size-off, ErrTruncated)
			}
			boxSize, head = int64(u), 16
		}
		if boxSize < head {
			return fmt.Errorf("box %q at offset %d declares an impossible size %d", printable(typ), off, boxSize)
		}
		if boxSize > size-off {
			return fmt.Errorf("box %q at offset %d declares %d bytes, but the file ends %d bytes after its start: %w", printable(typ), off, boxSize, size-off, ErrTruncated)
		}
		if string(typ) == "moov" {
			moov = true
		}
		off += boxSize
	}
	if !moov {
		return fmt.Errorf("no moov box (the index of the samples): %w", ErrTruncated)
	}
	return nil
}

// printable returns a box type for messages, with bytes outside printable
// ASCII escaped.
func printable(typ []byte) string {
	out := make([]byte, 0, len(typ))
	for _, c := range typ {
		if c < 0x20 || c > 0x7e {
			out = append(out, '?')
			continue
		}
		out = append(out, c)
	}
	return string(out)
}
