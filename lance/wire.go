package lance

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// errCorrupt is wrapped by every decoding error caused by malformed input.
var errCorrupt = errors.New("corrupt data")

// pbField is one decoded protobuf field.
type pbField struct {
	num protowire.Number
	typ protowire.Type
	u   uint64 // varint, fixed32 and fixed64 values
	b   []byte // bytes values (aliases the input)
}

// walk calls fn for every field of the protobuf message b.
func walk(b []byte, fn func(f pbField) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: protobuf tag: %v", errCorrupt, protowire.ParseError(n))
		}
		b = b[n:]
		f := pbField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.u, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.u = uint64(v)
		case protowire.Fixed64Type:
			f.u, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: protobuf field %d: %v", errCorrupt, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// packedUints decodes a repeated varint field that may be packed or not,
// appending to dst.
func packedUints(dst []uint64, f pbField) ([]uint64, error) {
	if f.typ == protowire.VarintType {
		return append(dst, f.u), nil
	}
	if f.typ != protowire.BytesType {
		return dst, fmt.Errorf("%w: field %d: unexpected wire type %d", errCorrupt, f.num, f.typ)
	}
	b := f.b
	for len(b) > 0 {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return dst, fmt.Errorf("%w: packed field %d: %v", errCorrupt, f.num, protowire.ParseError(n))
		}
		dst = append(dst, v)
		b = b[n:]
	}
	return dst, nil
}

// int32Of converts a varint holding an int32 (sign-extended to 64 bits when
// negative) to int32.
func int32Of(v uint64) int32 { return int32(int64(v)) }
