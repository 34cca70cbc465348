package lancefmt

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// fileFooterBytes is the size of the footer of a Lance v2 data file.
const fileFooterBytes = 40

// maxMetadataBytes bounds the metadata region read from a data file.
const maxMetadataBytes = 1 << 30

// encodingAny is a column or page encoding: a protobuf Any.
type encodingAny struct {
	typeURL string
	value   []byte
}

// name returns the message name of the encoding (the part of the type URL
// after the last slash or dot).
func (e encodingAny) name() string {
	if i := strings.LastIndexAny(e.typeURL, "/."); i >= 0 {
		return e.typeURL[i+1:]
	}
	return e.typeURL
}

// pageInfo describes one page of a column.
type pageInfo struct {
	bufOffsets []uint64
	bufSizes   []uint64
	length     uint64 // top-level rows (2.1+) or items (2.0 item columns)
	encoding   encodingAny
	priority   uint64
}

// columnInfo is the decoded metadata of one column.
type columnInfo struct {
	encoding   encodingAny
	pages      []pageInfo
	bufOffsets []uint64
	bufSizes   []uint64
}

// fileMeta is the decoded footer and metadata of one data file.
type fileMeta struct {
	major, minor  uint16
	numRows       uint64
	fields        []*Field // schema stored in the file
	columns       []columnInfo
	globalBuffers [][2]uint64
	size          int64
}

// readFileMeta reads the footer and metadata of a data file of the given size.
func readFileMeta(r io.ReaderAt, size int64) (*fileMeta, error) {
	if size < fileFooterBytes {
		return nil, fmt.Errorf("%w: data file of %d bytes is too short", errCorrupt, size)
	}
	var foot [fileFooterBytes]byte
	if _, err := r.ReadAt(foot[:], size-fileFooterBytes); err != nil {
		return nil, fmt.Errorf("read footer: %w", err)
	}
	if string(foot[36:]) != "LANC" {
		return nil, fmt.Errorf("%w: data file lacks the LANC magic", errCorrupt)
	}
	gboStart := binary.LittleEndian.Uint64(foot[16:])
	colMetaStart := binary.LittleEndian.Uint64(foot[0:])
	start := min(colMetaStart, gboStart, binary.LittleEndian.Uint64(foot[8:]))
	if start > uint64(size-fileFooterBytes) || uint64(size-fileFooterBytes)-start > maxMetadataBytes {
		return nil, fmt.Errorf("%w: metadata start %d outside the file", errCorrupt, start)
	}
	// The global buffer 0 (the schema) precedes the column metadata; read
	// from the smallest metadata offset once the tables are known.
	tail := make([]byte, size-int64(start))
	if _, err := r.ReadAt(tail, int64(start)); err != nil {
		return nil, fmt.Errorf("read metadata: %w", err)
	}
	fm, err := parseFileTail(tail, int64(start), size)
	if err != nil {
		return nil, err
	}
	// The schema buffer usually lies before the column metadata.
	if len(fm.globalBuffers) > 0 {
		gb := fm.globalBuffers[0]
		if gb[0] < start {
			if gb[1] > maxMetadataBytes || gb[0]+gb[1] > uint64(size) {
				return nil, fmt.Errorf("%w: global buffer 0 outside the file", errCorrupt)
			}
			b := make([]byte, gb[1])
			if _, err := r.ReadAt(b, int64(gb[0])); err != nil {
				return nil, fmt.Errorf("read schema: %w", err)
			}
			if err := fm.parseDescriptor(b); err != nil {
				return nil, err
			}
		}
	}
	return fm, nil
}

// parseFileTail decodes the metadata region tail, which holds the bytes
// [start, size) of a data file.
func parseFileTail(tail []byte, start, size int64) (*fileMeta, error) {
	if int64(len(tail)) != size-start || len(tail) < fileFooterBytes {
		return nil, fmt.Errorf("%w: metadata region of %d bytes", errCorrupt, len(tail))
	}
	foot := tail[len(tail)-fileFooterBytes:]
	if string(foot[36:]) != "LANC" {
		return nil, fmt.Errorf("%w: data file lacks the LANC magic", errCorrupt)
	}
	fm := &fileMeta{size: size}
	colMetaStart := binary.LittleEndian.Uint64(foot[0:])
	cmoStart := binary.LittleEndian.Uint64(foot[8:])
	gboStart := binary.LittleEndian.Uint64(foot[16:])
	numGlobal := uint64(binary.LittleEndian.Uint32(foot[24:]))
	numCols := uint64(binary.LittleEndian.Uint32(foot[28:]))
	fm.major = binary.LittleEndian.Uint16(foot[32:])
	fm.minor = binary.LittleEndian.Uint16(foot[34:])
	// slice returns tail bytes for the absolute range [pos, pos+n).
	slice := func(pos, n uint64, what string) ([]byte, error) {
		if pos < uint64(start) || pos > uint64(size) || n > uint64(size)-pos {
			return nil, fmt.Errorf("%w: %s at %d+%d outside the metadata region", errCorrupt, what, pos, n)
		}
		return tail[pos-uint64(start) : pos-uint64(start)+n], nil
	}
	_ = colMetaStart
	cmo, err := slice(cmoStart, numCols*16, "column metadata offsets")
	if numCols > uint64(len(tail))/16 || err != nil {
		return nil, fmt.Errorf("%w: %d columns do not fit the metadata region", errCorrupt, numCols)
	}
	gbo, err := slice(gboStart, numGlobal*16, "global buffer offsets")
	if numGlobal > uint64(len(tail))/16 || err != nil {
		return nil, fmt.Errorf("%w: %d global buffers do not fit the metadata region", errCorrupt, numGlobal)
	}
	for i := uint64(0); i < numGlobal; i++ {
		fm.globalBuffers = append(fm.globalBuffers, [2]uint64{
			binary.LittleEndian.Uint64(gbo[i*16:]), binary.LittleEndian.Uint64(gbo[i*16+8:])})
	}
	fm.columns = make([]columnInfo, numCols)
	for i := uint64(0); i < numCols; i++ {
		pos, n := binary.LittleEndian.Uint64(cmo[i*16:]), binary.LittleEndian.Uint64(cmo[i*16+8:])
		b, err := slice(pos, n, fmt.Sprintf("column %d metadata", i))
		if err != nil {
			return nil, err
		}
		ci, err := parseColumnMetadata(b)
		if err != nil {
			return nil, fmt.Errorf("column %d metadata: %w", i, err)
		}
		fm.columns[i] = ci
	}
	if len(fm.globalBuffers) > 0 {
		gb := fm.globalBuffers[0]
		if gb[0] >= uint64(start) {
			b, err := slice(gb[0], gb[1], "global buffer 0")
			if err != nil {
				return nil, err
			}
			if err := fm.parseDescriptor(b); err != nil {
				return nil, err
			}
		}
	}
	return fm, nil
}

// Field numbers of the file format's metadata messages (lance.file.v2 and
// protobuf's Any).
const (
	descriptorSchema = 1 // FileDescriptor
	descriptorLength = 2
	schemaFields     = 1 // FileDescriptor.Schema

	encodingDeferred = 1 // Encoding
	encodingDirect   = 2
	directEncoding   = 1 // DirectEncoding
	anyTypeURL       = 1 // google.protobuf.Any
	anyValue         = 2

	columnEncoding      = 1 // ColumnMetadata
	columnPages         = 2
	columnBufferOffsets = 3
	columnBufferSizes   = 4

	pageBufferOffsets = 1 // ColumnMetadata.Page
	pageBufferSizes   = 2
	pageLength        = 3
	pageEncoding      = 4
	pagePriority      = 5
)

// parseDescriptor decodes the FileDescriptor held in global buffer 0.
func (fm *fileMeta) parseDescriptor(b []byte) error {
	err := wire.Walk(b, func(f wire.Field) error {
		switch f.Num {
		case descriptorSchema:
			return wire.Walk(f.B, func(g wire.Field) error {
				if g.Num == schemaFields {
					fl, err := parseField(g.B)
					if err != nil {
						return err
					}
					fm.fields = append(fm.fields, fl)
				}
				return nil
			})
		case descriptorLength:
			fm.numRows = f.U
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("file descriptor: %w", err)
	}
	return nil
}

// parseEncoding decodes a lance.file.v2.Encoding message holding a direct
// encoding (a serialized Any).
func parseEncoding(b []byte) (encodingAny, error) {
	var e encodingAny
	err := wire.Walk(b, func(f wire.Field) error {
		switch f.Num {
		case encodingDeferred:
			return fmt.Errorf("deferred encodings are not supported")
		case encodingDirect:
			return wire.Walk(f.B, func(g wire.Field) error {
				if g.Num != directEncoding {
					return nil
				}
				return wire.Walk(g.B, func(h wire.Field) error {
					switch h.Num {
					case anyTypeURL:
						e.typeURL = string(h.B)
					case anyValue:
						e.value = h.B
					}
					return nil
				})
			})
		}
		return nil
	})
	return e, err
}

// parseColumnMetadata decodes a lance.file.v2.ColumnMetadata message.
func parseColumnMetadata(b []byte) (columnInfo, error) {
	var ci columnInfo
	err := wire.Walk(b, func(f wire.Field) error {
		var err error
		switch f.Num {
		case columnEncoding:
			ci.encoding, err = parseEncoding(f.B)
		case columnPages:
			var p pageInfo
			err = wire.Walk(f.B, func(g wire.Field) error {
				var err error
				switch g.Num {
				case pageBufferOffsets:
					p.bufOffsets, err = wire.PackedUints(p.bufOffsets, g)
				case pageBufferSizes:
					p.bufSizes, err = wire.PackedUints(p.bufSizes, g)
				case pageLength:
					p.length = g.U
				case pageEncoding:
					p.encoding, err = parseEncoding(g.B)
				case pagePriority:
					p.priority = g.U
				}
				return err
			})
			if err == nil && len(p.bufOffsets) != len(p.bufSizes) {
				err = fmt.Errorf("%w: page has %d buffer offsets and %d sizes", errCorrupt, len(p.bufOffsets), len(p.bufSizes))
			}
			ci.pages = append(ci.pages, p)
		case columnBufferOffsets:
			ci.bufOffsets, err = wire.PackedUints(ci.bufOffsets, f)
		case columnBufferSizes:
			ci.bufSizes, err = wire.PackedUints(ci.bufSizes, f)
		}
		return err
	})
	return ci, err
}
