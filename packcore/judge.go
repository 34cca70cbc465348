package packcore

import "fmt"

// The two functions below are the one set of rules a pack member is judged
// by. Every reader applies them (OpenSet and OpenSetIn refuse a shard whose
// directory breaks entryProblem; a member's first read refuses it when its
// local header breaks localProblem), and Verify reports each break as a
// problem with the same reason: verify never passes a member a reader
// refuses, nor fails one it serves.

// entryProblem judges a member by its central directory entry alone. It
// returns why the member cannot be served, or "" when it can.
func entryProblem(e *Entry) string {
	switch {
	case e.Method != methodStored:
		return fmt.Sprintf("not STORED (method %d)", e.Method)
	case e.Flags&(flagEncrypted|flagStrongEnc) != 0:
		return "encrypted"
	case e.CompressedSize != e.Size:
		return fmt.Sprintf("stored size %d differs from size %d", e.CompressedSize, e.Size)
	}
	return ""
}

// localProblem judges a member whose entry passed entryProblem by its local
// header h, parsed whole (fixed part, name and extra field): the header must
// name the member, be neither encrypted nor compressed, record its CRC-32
// and sizes itself (no data descriptor, which streaming readers cannot
// find the end of a STORED member by), and record the same CRC-32 and sizes
// as the central directory. It returns why the member cannot be served, or
// "" when it can.
func localProblem(e *Entry, h *localHeader) string {
	switch {
	case h.Name == nil || (string(h.Name) != e.Name && decodeName(h.Name, h.Flags) != e.Name):
		return "local header name mismatch"
	case h.Flags&(flagEncrypted|flagStrongEnc) != 0:
		return "encrypted (local header)"
	case h.Method != methodStored:
		return fmt.Sprintf("local header disagrees with the central directory on compression method (%d, directory %d)", h.Method, e.Method)
	case (h.Flags|e.Flags)&flagDataDesc != 0:
		return "local header defers CRC and sizes to a data descriptor"
	}
	if h.Extra == nil {
		return "local header extra field unreadable"
	}
	// Sizes escaped as 0xFFFFFFFF are in the local zip64 extra field.
	sz := Entry{Size: h.Size, CompressedSize: h.CompressedSize}
	if err := applyZip64(&sz, h.Extra); err != nil {
		return fmt.Sprintf("local header extra field: %v", err)
	}
	switch {
	case h.CRC32 != e.CRC32:
		return fmt.Sprintf("local header records CRC-32 %08x, the central directory %08x", h.CRC32, e.CRC32)
	case sz.Size != e.Size:
		return fmt.Sprintf("local header records size %d, the central directory %d", sz.Size, e.Size)
	case sz.CompressedSize != e.CompressedSize:
		return fmt.Sprintf("local header records stored size %d, the central directory %d", sz.CompressedSize, e.CompressedSize)
	}
	return ""
}
