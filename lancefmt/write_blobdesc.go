package lancefmt

import (
	"encoding/binary"
	"fmt"

	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
)

// blobDescriptor is one row of a blob v2 descriptor column written through
// RewriteOptions.blobDescriptors (see WriteSharedBlobDataset). Released
// Lance cannot write descriptors with the sixth ref_id field
// (lance-format/lance#6587); this makes such files from real blob v2
// datasets for tests.
type blobDescriptor struct {
	Null bool
	Kind uint8 // BlobKind
	// Payload holds the bytes of an inline blob, stored in the new data
	// file unless SameAs is set.
	Payload  []byte
	Position uint64 // packed/dedicated: offset in the sidecar file
	Size     uint64 // packed/dedicated: size
	BlobID   uint32
	URI      string
	RefID    uint32
	// SameAs, when positive, makes an inline row point at the stored
	// payload of row SameAs-1 (same position and size) instead of storing
	// its own.
	SameAs int
}

// blobDescriptorHook supplies the descriptors of one fragment and the
// directory whose *.blob sidecar files are copied next to the new data file.
type blobDescriptorHook func(frag uint64) (rows []blobDescriptor, sidecarDir string, err error)

// writeBlobDescriptors writes the inline payloads and one full-zip page of
// 6-field descriptors (kind u8, position u64, size u64, blob_id u32,
// blob_uri utf8, ref_id u32) as a new column of w.
func (w *fileWriter) writeBlobDescriptors(rows []blobDescriptor) error {
	le := binary.LittleEndian
	// Inline payloads first, so that a row may point at a later row's.
	stored := make([][2]uint64, len(rows))
	for i := range rows {
		r := &rows[i]
		if r.Null || r.Kind != uint8(BlobInline) || r.SameAs > 0 {
			continue
		}
		at, err := w.writeBuffer(r.Payload)
		if err != nil {
			return fmt.Errorf("blob payload of row %d: %w", i, err)
		}
		stored[i] = [2]uint64{at, uint64(len(r.Payload))}
	}
	var data []byte
	starts := make([]uint64, 0, len(rows)+1)
	for i := range rows {
		r := &rows[i]
		starts = append(starts, uint64(len(data)))
		if r.Null {
			data = append(data, 1) // control word: def 1 (null blob)
			continue
		}
		pos, size := r.Position, r.Size
		if r.Kind == uint8(BlobInline) {
			src := i
			if r.SameAs > 0 {
				src = r.SameAs - 1
				if src >= len(rows) || rows[src].Null || rows[src].Kind != uint8(BlobInline) || rows[src].SameAs > 0 {
					return fmt.Errorf("row %d: SameAs names row %d, which stores no inline payload", i, src)
				}
			}
			pos, size = stored[src][0], stored[src][1]
		}
		row := []byte{r.Kind}
		row = le.AppendUint64(row, pos)
		row = le.AppendUint64(row, size)
		row = le.AppendUint32(row, r.BlobID)
		row = le.AppendUint32(row, uint32(len(r.URI)))
		row = append(row, r.URI...)
		row = le.AppendUint32(row, r.RefID)
		data = append(data, 0)
		data = le.AppendUint32(data, uint32(len(row)))
		data = append(data, row...)
	}
	starts = append(starts, uint64(len(data)))
	width := 1
	for uint64(len(data)) >= 1<<(8*width) && width < 8 {
		width *= 2
	}
	var repIndex []byte
	for _, s := range starts {
		for k := 0; k < width; k++ {
			repIndex = append(repIndex, byte(s>>(8*k)))
		}
	}
	// VariablePackedStruct children: fixed ones with bits_per_value, the
	// uri with bits_per_length.
	flat := func(bits uint64) []byte { return pbuf(nil).bytes(1, pbuf(nil).varint(1, bits)) }
	fixed := func(bits uint64) []byte { return pbuf(nil).bytes(1, flat(bits)).varint(2, bits) }
	variable := pbuf(nil).bytes(2, pbuf(nil).bytes(1, flat(32)))
	vps := pbuf(nil).bytes(1, fixed(8)).bytes(1, fixed(64)).bytes(1, fixed(64)).bytes(1, fixed(32)).
		bytes(1, pbuf(nil).bytes(1, variable).varint(3, 32)).bytes(1, fixed(32))
	fz := pbuf(nil).varint(2, 1).varint(4, 32).varint(5, uint64(len(rows))).varint(6, uint64(len(rows))).
		bytes(7, pbuf(nil).bytes(13, vps)).packed(8, []uint64{decode.LayerAllValidItem, decode.LayerNullableItem})
	enc := anyEncoding(typePageLayout, pbuf(nil).bytes(3, fz))
	emit, done := w.pageWriter()
	if err := emit(outPage{buffers: [][]byte{data, repIndex}, length: uint64(len(rows)), encoding: enc}); err != nil {
		return fmt.Errorf("blob descriptors: %w", err)
	}
	done()
	return nil
}
