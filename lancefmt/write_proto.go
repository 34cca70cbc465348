package lancefmt

import (
	"sort"

	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
	"google.golang.org/protobuf/encoding/protowire"
)

// pbuf builds a protobuf message field by field.
type pbuf []byte

// varint appends a varint field; zero values are written too (callers skip
// proto3 defaults where Lance does).
func (b pbuf) varint(num protowire.Number, v uint64) pbuf {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// int32v appends an int32 field (negative values as 10-byte varints).
func (b pbuf) int32v(num protowire.Number, v int32) pbuf {
	return b.varint(num, uint64(int64(v)))
}

// bytes appends a length-delimited field.
func (b pbuf) bytes(num protowire.Number, v []byte) pbuf {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// str appends a string field.
func (b pbuf) str(num protowire.Number, s string) pbuf {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// packed appends a packed repeated varint field (nothing when vs is empty).
func (b pbuf) packed(num protowire.Number, vs []uint64) pbuf {
	if len(vs) == 0 {
		return b
	}
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, v)
	}
	return b.bytes(num, p)
}

// raw re-appends a field decoded by walk, unchanged.
func (b pbuf) raw(f wire.Field) pbuf {
	b = protowire.AppendTag(b, f.Num, f.Type)
	switch f.Type {
	case protowire.VarintType:
		return protowire.AppendVarint(b, f.U)
	case protowire.Fixed32Type:
		return protowire.AppendFixed32(b, uint32(f.U))
	case protowire.Fixed64Type:
		return protowire.AppendFixed64(b, f.U)
	default:
		return protowire.AppendBytes(b, f.B)
	}
}

// mapEntries appends a map<string, bytes|string> field with sorted keys.
func (b pbuf) mapEntries(num protowire.Number, m map[string][]byte) pbuf {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = b.bytes(num, pbuf(nil).str(1, k).bytes(2, m[k]))
	}
	return b
}

// anyEncoding builds a lance.file.v2.Encoding holding a direct encoding: a
// google.protobuf.Any of the given type URL and value.
func anyEncoding(typeURL string, value []byte) []byte {
	a := pbuf(nil).str(1, typeURL).bytes(2, value)
	return pbuf(nil).bytes(2, pbuf(nil).bytes(1, a))
}

// Type URLs of the encodings a writer emits.
const (
	typeColumnEncoding = "/lance.encodings.ColumnEncoding"
	typeArrayEncoding  = "/lance.encodings.ArrayEncoding"
	typePageLayout     = "/lance.encodings21.PageLayout"
)

// columnValuesEncoding is ColumnEncoding{values: Empty}, the column-level
// encoding of ordinary columns.
var columnValuesEncoding = anyEncoding(typeColumnEncoding, []byte{0x0a, 0x00})

// pageMessage builds a lance.file.v2.ColumnMetadata.Page.
func pageMessage(offsets, sizes []uint64, length uint64, enc []byte, priority uint64) []byte {
	b := pbuf(nil).packed(1, offsets).packed(2, sizes).varint(3, length).bytes(4, enc)
	if priority != 0 {
		b = b.varint(5, priority)
	}
	return b
}
