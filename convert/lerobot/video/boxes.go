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

// Range is a byte range [Off, Off+Len) of a file.
type Range struct {
	Off, Len int64
}

// maxPayloads bounds the ranges MediaData returns.
const maxPayloads = 1 << 12

// MediaData returns where the sample data of an ISO base media file (MP4,
// MOV) of size bytes lies: the payloads of its top-level mdat boxes, in
// file order. It returns nil for a file that does not start with an ftyp
// box, whose top-level boxes do not tile it (see CheckBoxes) or that has
// no moov box: the caller then reads the file whole. Scanning packet
// timing needs the boxes around these ranges only.
func MediaData(r io.ReaderAt, size int64) []Range {
	var hdr [16]byte
	if size < 8 {
		return nil
	}
	if _, err := r.ReadAt(hdr[:8], 0); err != nil || string(hdr[4:8]) != "ftyp" {
		return nil
	}
	var out []Range
	moov := false
	for off, n := int64(0), 0; off < size; n++ {
		if n == maxTopBoxes || size-off < 8 {
			return nil
		}
		if _, err := r.ReadAt(hdr[:8], off); err != nil {
			return nil
		}
		boxSize, head := int64(binary.BigEndian.Uint32(hdr[:4])), int64(8)
		switch boxSize {
		case 0:
			boxSize = size - off
		case 1:
			if size-off < 16 {
				return nil
			}
			if _, err := r.ReadAt(hdr[8:16], off+8); err != nil {
				return nil
			}
			u := binary.BigEndian.Uint64(hdr[8:16])
			if u > uint64(size) {
				return nil
			}
			boxSize, head = int64(u), 16
		}
		if boxSize < head || boxSize > size-off {
			return nil
		}
		switch string(hdr[4:8]) {
		case "moov":
			moov = true
		case "mdat":
			if boxSize > head {
				if len(out) == maxPayloads {
					return nil
				}
				out = append(out, Range{Off: off + head, Len: boxSize - head})
			}
		}
		off += boxSize
	}
	if !moov {
		return nil
	}
	return out
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
