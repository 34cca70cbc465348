package packcore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// ErrFormat is wrapped by every error about malformed zip bytes.
var ErrFormat = errors.New("malformed zip")

// Entry is one member as the central directory records it.
type Entry struct {
	Name string
	// NameLen is the length in bytes of the name as stored (a code page 437
	// name decodes to more bytes of UTF-8 than the header holds).
	NameLen        int
	Flags          uint16
	Method         uint16
	CRC32          uint32
	CompressedSize int64
	Size           int64
	// HeaderOffset is the position of the member's local header in the file,
	// corrected for any bytes prepended to the archive.
	HeaderOffset int64
}

// Directory is a parsed central directory.
type Directory struct {
	Entries []Entry
	// Start is where the central directory begins in the file; no member
	// payload may extend past it.
	Start int64
	// Size is the central directory's length in bytes.
	Size int64
}

// maxTail is how far from the end an end-of-central-directory record can sit:
// the record itself plus the longest archive comment.
const maxTail = endLen + max16

// ReadDirectory parses the central directory of the zip archive r of the
// given size. It reads the last 64 KiB of the file (the longest end record
// and comment a zip archive can have) and, only when they do not hold all
// of it, the rest of the directory: one read for a directory that fits in
// the tail, two for a larger one.
func ReadDirectory(r io.ReaderAt, size int64) (*Directory, error) {
	cd, err := readCentral(r, size, nil)
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, 0, cd.count)
	err = walkCentral(cd.buf, cd.count, cd.base, size, func(e *Entry, _ []byte) error {
		entries = append(entries, *e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Directory{Entries: entries, Start: cd.start, Size: int64(len(cd.buf))}, nil
}

// centralDir is a central directory read but not parsed.
type centralDir struct {
	buf   []byte // the directory's bytes
	count int64  // entries it declares
	start int64  // its position in the file
	base  int64  // bytes prepended to the archive, added to every offset
}

// readCentral finds and reads the central directory of the zip archive r of
// the given size: one read for the tail of the file, which holds the end
// records and the directory's end (all of a small directory), and one for
// whatever of the zip64 end record and the directory lies before the tail,
// into buf when it has the room (nil: a new buffer).
func readCentral(r io.ReaderAt, size int64, buf []byte) (*centralDir, error) {
	if size < endLen {
		return nil, fmt.Errorf("%w: %d bytes is too short for a zip archive", ErrFormat, size)
	}
	tailLen := min(size, maxTail+end64LocLen)
	tail := make([]byte, tailLen)
	if _, err := r.ReadAt(tail, size-tailLen); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading end of central directory: %w", err)
	}
	endPos := int64(-1)
	for i := len(tail) - endLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(tail[i:]) != sigEnd {
			continue
		}
		commentLen := int(binary.LittleEndian.Uint16(tail[i+20:]))
		if i+endLen+commentLen <= len(tail) {
			endPos = int64(i)
			break
		}
	}
	if endPos < 0 {
		return nil, fmt.Errorf("%w: no end of central directory record", ErrFormat)
	}
	rec := tail[endPos:]
	endAbs := size - tailLen + endPos
	count := int64(binary.LittleEndian.Uint16(rec[10:]))
	cdSize := int64(binary.LittleEndian.Uint32(rec[12:]))
	cdOffset := int64(binary.LittleEndian.Uint32(rec[16:]))
	dirEnd := endAbs // where the directory must end (before any zip64 records)

	if endPos >= end64LocLen && binary.LittleEndian.Uint32(tail[endPos-end64LocLen:]) == sigEnd64Loc {
		loc := tail[endPos-end64LocLen:]
		end64Off := int64(binary.LittleEndian.Uint64(loc[8:]))
		locAbs := endAbs - end64LocLen
		// Bytes prepended to the archive shift every recorded offset; the
		// zip64 record sits right before its locator.
		base := locAbs - end64Len - end64Off
		if end64Off < 0 || base < 0 || locAbs-end64Len < 0 {
			return nil, fmt.Errorf("%w: zip64 end record offset %d out of range", ErrFormat, end64Off)
		}
		var e64 [end64Len]byte
		if tailStart := size - tailLen; locAbs-end64Len >= tailStart {
			copy(e64[:], tail[locAbs-end64Len-tailStart:])
		} else if _, err := r.ReadAt(e64[:], locAbs-end64Len); err != nil {
			return nil, fmt.Errorf("reading zip64 end record: %w", err)
		}
		if binary.LittleEndian.Uint32(e64[:]) != sigEnd64 {
			return nil, fmt.Errorf("%w: zip64 locator points at no zip64 end record", ErrFormat)
		}
		c := binary.LittleEndian.Uint64(e64[32:])
		s := binary.LittleEndian.Uint64(e64[40:])
		o := binary.LittleEndian.Uint64(e64[48:])
		if c > uint64(size) || s > uint64(size) || o > uint64(size) {
			return nil, fmt.Errorf("%w: zip64 end record values exceed the file size", ErrFormat)
		}
		count, cdSize, cdOffset = int64(c), int64(s), int64(o)
		dirEnd = locAbs - end64Len
	}
	if cdSize > dirEnd || count*centralLen > cdSize {
		return nil, fmt.Errorf("%w: central directory of %d entries and %d bytes does not fit", ErrFormat, count, cdSize)
	}
	start := dirEnd - cdSize
	base := start - cdOffset
	if base < 0 {
		return nil, fmt.Errorf("%w: central directory offset %d is past its position %d", ErrFormat, cdOffset, start)
	}
	if int64(cap(buf)) >= cdSize {
		buf = buf[:cdSize]
	} else {
		buf = make([]byte, cdSize)
	}
	// The tail read holds the directory's end, or all of it when it is
	// small: only what lies before the tail is read again.
	tailStart := size - tailLen
	inTail := int64(0)
	if start+cdSize > tailStart {
		from := max(start, tailStart)
		inTail = start + cdSize - from
		copy(buf[cdSize-inTail:], tail[from-tailStart:])
	}
	if head := cdSize - inTail; head > 0 {
		if _, err := r.ReadAt(buf[:head], start); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading central directory: %w", err)
		}
	}
	return &centralDir{buf: buf, count: count, start: start, base: base}, nil
}

// walkCentral decodes count central directory entries from buf, calling fn
// with each entry (offsets corrected by base) and its name as stored; fn
// must not keep e. Every member's header and stored bytes must lie inside a
// file of fileSize bytes: bounding offsets and stored sizes by the file size
// (and sizes by 2^62, in applyZip64) keeps offset + size sums from
// overflowing int64.
func walkCentral(buf []byte, count, base, fileSize int64, fn func(e *Entry, name []byte) error) error {
	p := 0
	var e Entry
	for i := int64(0); i < count; i++ {
		if len(buf)-p < centralLen {
			return fmt.Errorf("%w: central directory entry %d is truncated", ErrFormat, i)
		}
		h := buf[p:]
		if binary.LittleEndian.Uint32(h) != sigCentral {
			return fmt.Errorf("%w: central directory entry %d has a bad signature", ErrFormat, i)
		}
		nameLen := int(binary.LittleEndian.Uint16(h[28:]))
		extraLen := int(binary.LittleEndian.Uint16(h[30:]))
		commentLen := int(binary.LittleEndian.Uint16(h[32:]))
		total := centralLen + nameLen + extraLen + commentLen
		if len(buf)-p < total {
			return fmt.Errorf("%w: central directory entry %d is truncated", ErrFormat, i)
		}
		e = Entry{
			Flags:          binary.LittleEndian.Uint16(h[8:]),
			Method:         binary.LittleEndian.Uint16(h[10:]),
			CRC32:          binary.LittleEndian.Uint32(h[16:]),
			CompressedSize: int64(binary.LittleEndian.Uint32(h[20:])),
			Size:           int64(binary.LittleEndian.Uint32(h[24:])),
			HeaderOffset:   int64(binary.LittleEndian.Uint32(h[42:])),
		}
		nameBytes := h[centralLen : centralLen+nameLen]
		e.Name = decodeName(nameBytes, e.Flags)
		e.NameLen = nameLen
		extra := h[centralLen+nameLen : centralLen+nameLen+extraLen]
		if err := applyZip64(&e, extra); err != nil {
			return fmt.Errorf("%w: member %q: %v", ErrFormat, e.Name, err)
		}
		e.HeaderOffset += base
		if e.CompressedSize < 0 || e.CompressedSize > fileSize || e.HeaderOffset < 0 || e.HeaderOffset > fileSize {
			return fmt.Errorf("%w: member %q: size %d at offset %d does not fit in a file of %d bytes", ErrFormat, e.Name, e.Size, e.HeaderOffset, fileSize)
		}
		if err := fn(&e, nameBytes); err != nil {
			return err
		}
		p += total
	}
	return nil
}

// decodeName returns a member name as text: UTF-8 when flagged or valid,
// else decoded from code page 437.
func decodeName(b []byte, flags uint16) string {
	if flags&flagUTF8 != 0 || utf8.Valid(b) {
		return string(b)
	}
	return decodeCP437(b)
}

// applyZip64 replaces escaped sizes and offsets with the values from a zip64
// extra field.
func applyZip64(e *Entry, extra []byte) error {
	for len(extra) >= 4 {
		id := binary.LittleEndian.Uint16(extra)
		n := int(binary.LittleEndian.Uint16(extra[2:]))
		if len(extra)-4 < n {
			return errors.New("extra field is truncated")
		}
		body := extra[4 : 4+n]
		extra = extra[4+n:]
		if id != zip64ExtraID {
			continue
		}
		take := func(v *int64) error {
			if len(body) < 8 {
				return errors.New("zip64 extra field is too short")
			}
			u := binary.LittleEndian.Uint64(body)
			if u > 1<<62 {
				return errors.New("zip64 value out of range")
			}
			*v = int64(u)
			body = body[8:]
			return nil
		}
		if e.Size == max32 {
			if err := take(&e.Size); err != nil {
				return err
			}
		}
		if e.CompressedSize == max32 {
			if err := take(&e.CompressedSize); err != nil {
				return err
			}
		}
		if e.HeaderOffset == max32 {
			if err := take(&e.HeaderOffset); err != nil {
				return err
			}
		}
		return nil
	}
	if e.Size == max32 || e.CompressedSize == max32 || e.HeaderOffset == max32 {
		// A value of exactly 0xFFFFFFFF without a zip64 field is legal only
		// for sizes and offsets that really are 0xFFFFFFFF; keep it.
		return nil
	}
	return nil
}

// cp437 maps the upper half of code page 437 to Unicode.
var cp437 = []rune("ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0")

func decodeCP437(b []byte) string {
	var sb bytes.Buffer
	for _, c := range b {
		if c < 0x80 {
			sb.WriteByte(c)
		} else {
			sb.WriteRune(cp437[c-0x80])
		}
	}
	return sb.String()
}

// localHeader is the part of a local file header a reader checks. Name and
// Extra are nil when the bytes parsed do not hold them.
type localHeader struct {
	Flags          uint16
	Method         uint16
	CRC32          uint32
	CompressedSize int64 // as recorded: 0xFFFFFFFF when in the zip64 extra field
	Size           int64
	NameLen        int
	ExtraLen       int
	Name           []byte
	Extra          []byte
}

// headerLen is the local header's length: fixed part, name and extra field.
func (h *localHeader) headerLen() int64 { return localLen + int64(h.NameLen) + int64(h.ExtraLen) }

// parseLocalHeader decodes the fixed part, name and extra field of a local
// header from b, which must hold at least localLen bytes.
func parseLocalHeader(b []byte) (localHeader, error) {
	if len(b) < localLen || binary.LittleEndian.Uint32(b) != sigLocal {
		return localHeader{}, fmt.Errorf("%w: no local file header", ErrFormat)
	}
	h := localHeader{
		Flags:          binary.LittleEndian.Uint16(b[6:]),
		Method:         binary.LittleEndian.Uint16(b[8:]),
		CRC32:          binary.LittleEndian.Uint32(b[14:]),
		CompressedSize: int64(binary.LittleEndian.Uint32(b[18:])),
		Size:           int64(binary.LittleEndian.Uint32(b[22:])),
		NameLen:        int(binary.LittleEndian.Uint16(b[26:])),
		ExtraLen:       int(binary.LittleEndian.Uint16(b[28:])),
	}
	if len(b) >= localLen+h.NameLen {
		h.Name = b[localLen : localLen+h.NameLen]
	}
	if end := localLen + h.NameLen + h.ExtraLen; len(b) >= end {
		h.Extra = b[localLen+h.NameLen : end]
	}
	return h, nil
}
