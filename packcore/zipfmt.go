package packcore

import (
	"encoding/binary"
)

// Zip record signatures and sizes (APPNOTE 6.3.x).
const (
	sigLocal      = 0x04034b50
	sigCentral    = 0x02014b50
	sigEnd        = 0x06054b50
	sigEnd64      = 0x06064b50
	sigEnd64Loc   = 0x07064b50
	localLen      = 30
	centralLen    = 46
	endLen        = 22
	end64Len      = 56
	end64LocLen   = 20
	zip64ExtraID  = 0x0001
	flagUTF8      = 0x0800
	flagDataDesc  = 0x0008
	flagEncrypted = 0x0001
	flagStrongEnc = 0x0040
	methodStored  = 0
	dosDate1980   = 0x0021 // 1980-01-01
	extAttrs0600  = 0o600 << 16
	madeByUnix    = 3 << 8
	max16         = 0xFFFF
	max32         = 0xFFFFFFFF
)

// needsUTF8Flag reports whether name has a byte outside ASCII.
func needsUTF8Flag(name string) bool {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return true
		}
	}
	return false
}

// localExtraLen is the size of the zip64 extra field in a local header: the
// writer records both sizes there exactly when the member size does not fit
// in 32 bits.
func localExtraLen(size int64) int64 {
	if size >= max32 {
		return 4 + 16
	}
	return 0
}

// centralExtraLen is the size of the zip64 extra field in a central header.
func centralExtraLen(size, offset int64) int64 {
	n := int64(0)
	if size >= max32 {
		n += 16 // uncompressed and compressed size
	}
	if offset >= max32 {
		n += 8
	}
	if n == 0 {
		return 0
	}
	return 4 + n
}

// needsZip64End reports whether the end of central directory needs zip64
// records for this count, directory size and directory offset.
func needsZip64End(count, cdSize, cdOffset int64) bool {
	return count >= max16 || cdSize >= max32 || cdOffset >= max32
}

// endRecordsLen is the size of the end records for a directory.
func endRecordsLen(count, cdSize, cdOffset int64) int64 {
	if needsZip64End(count, cdSize, cdOffset) {
		return end64Len + end64LocLen + endLen
	}
	return endLen
}

// appendLocalHeader appends the local file header of a STORED member.
func appendLocalHeader(b []byte, name string, size int64, crc uint32) []byte {
	zip64 := size >= max32
	flags := uint16(0)
	if needsUTF8Flag(name) {
		flags |= flagUTF8
	}
	version := uint16(20)
	size32 := uint32(size)
	extra := uint16(0)
	if zip64 {
		version = 45
		size32 = max32
		extra = 20
	}
	b = binary.LittleEndian.AppendUint32(b, sigLocal)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint16(b, methodStored)
	b = binary.LittleEndian.AppendUint16(b, 0) // time 00:00:00
	b = binary.LittleEndian.AppendUint16(b, dosDate1980)
	b = binary.LittleEndian.AppendUint32(b, crc)
	b = binary.LittleEndian.AppendUint32(b, size32) // compressed
	b = binary.LittleEndian.AppendUint32(b, size32) // uncompressed
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	b = binary.LittleEndian.AppendUint16(b, extra)
	b = append(b, name...)
	if zip64 {
		b = binary.LittleEndian.AppendUint16(b, zip64ExtraID)
		b = binary.LittleEndian.AppendUint16(b, 16)
		b = binary.LittleEndian.AppendUint64(b, uint64(size))
		b = binary.LittleEndian.AppendUint64(b, uint64(size))
	}
	return b
}

// localCRCOffset is where the CRC-32 sits inside a local header.
const localCRCOffset = 14

// appendCentralHeader appends the central directory entry of a STORED member.
func appendCentralHeader(b []byte, name string, size int64, crc uint32, offset int64) []byte {
	extra := centralExtraLen(size, offset)
	flags := uint16(0)
	if needsUTF8Flag(name) {
		flags |= flagUTF8
	}
	version := uint16(20)
	if extra > 0 {
		version = 45
	}
	size32, off32 := uint32(size), uint32(offset)
	if size >= max32 {
		size32 = max32
	}
	if offset >= max32 {
		off32 = max32
	}
	b = binary.LittleEndian.AppendUint32(b, sigCentral)
	b = binary.LittleEndian.AppendUint16(b, madeByUnix|version)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = binary.LittleEndian.AppendUint16(b, methodStored)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint16(b, dosDate1980)
	b = binary.LittleEndian.AppendUint32(b, crc)
	b = binary.LittleEndian.AppendUint32(b, size32)
	b = binary.LittleEndian.AppendUint32(b, size32)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(name)))
	b = binary.LittleEndian.AppendUint16(b, uint16(extra))
	b = binary.LittleEndian.AppendUint16(b, 0) // comment
	b = binary.LittleEndian.AppendUint16(b, 0) // disk
	b = binary.LittleEndian.AppendUint16(b, 0) // internal attributes
	b = binary.LittleEndian.AppendUint32(b, extAttrs0600)
	b = binary.LittleEndian.AppendUint32(b, off32)
	b = append(b, name...)
	if extra > 0 {
		b = binary.LittleEndian.AppendUint16(b, zip64ExtraID)
		b = binary.LittleEndian.AppendUint16(b, uint16(extra-4))
		if size >= max32 {
			b = binary.LittleEndian.AppendUint64(b, uint64(size))
			b = binary.LittleEndian.AppendUint64(b, uint64(size))
		}
		if offset >= max32 {
			b = binary.LittleEndian.AppendUint64(b, uint64(offset))
		}
	}
	return b
}

// appendEndRecords appends the end of central directory records, with the
// zip64 record and locator in front when the directory needs them.
func appendEndRecords(b []byte, count, cdSize, cdOffset int64) []byte {
	if needsZip64End(count, cdSize, cdOffset) {
		end64Offset := cdOffset + cdSize
		b = binary.LittleEndian.AppendUint32(b, sigEnd64)
		b = binary.LittleEndian.AppendUint64(b, end64Len-12)
		b = binary.LittleEndian.AppendUint16(b, madeByUnix|45)
		b = binary.LittleEndian.AppendUint16(b, 45)
		b = binary.LittleEndian.AppendUint32(b, 0) // this disk
		b = binary.LittleEndian.AppendUint32(b, 0) // disk with directory
		b = binary.LittleEndian.AppendUint64(b, uint64(count))
		b = binary.LittleEndian.AppendUint64(b, uint64(count))
		b = binary.LittleEndian.AppendUint64(b, uint64(cdSize))
		b = binary.LittleEndian.AppendUint64(b, uint64(cdOffset))
		b = binary.LittleEndian.AppendUint32(b, sigEnd64Loc)
		b = binary.LittleEndian.AppendUint32(b, 0)
		b = binary.LittleEndian.AppendUint64(b, uint64(end64Offset))
		b = binary.LittleEndian.AppendUint32(b, 1)
	}
	clamp16 := func(v int64) uint16 {
		if v >= max16 {
			return max16
		}
		return uint16(v)
	}
	clamp32 := func(v int64) uint32 {
		if v >= max32 {
			return max32
		}
		return uint32(v)
	}
	b = binary.LittleEndian.AppendUint32(b, sigEnd)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint16(b, clamp16(count))
	b = binary.LittleEndian.AppendUint16(b, clamp16(count))
	b = binary.LittleEndian.AppendUint32(b, clamp32(cdSize))
	b = binary.LittleEndian.AppendUint32(b, clamp32(cdOffset))
	b = binary.LittleEndian.AppendUint16(b, 0)
	return b
}
