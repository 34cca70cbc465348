// Package wire reads protobuf messages field by field, without generated
// code: the Lance reader decodes its manifests, file metadata and encodings
// with it and names the field numbers it uses. It is not a protobuf
// library: it knows no schemas, and unknown fields are the caller's to skip.
package wire

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ErrCorrupt is wrapped by every decoding error caused by malformed input.
var ErrCorrupt = errors.New("corrupt data")

// Field is one decoded protobuf field.
type Field struct {
	Num  protowire.Number
	Type protowire.Type
	U    uint64 // varint, fixed32 and fixed64 values
	B    []byte // bytes values (aliases the input)
}

// Walk calls fn for every field of the protobuf message b.
func Walk(b []byte, fn func(f Field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: protobuf tag: %v", ErrCorrupt, protowire.ParseError(n))
		}
		b = b[n:]
		f := Field{Num: num, Type: typ}
		switch typ {
		case protowire.VarintType:
			f.U, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.U = uint64(v)
		case protowire.Fixed64Type:
			f.U, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.B, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: protobuf field %d: %v", ErrCorrupt, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// PackedUints decodes a repeated varint field that may be packed or not,
// appending to dst.
func PackedUints(dst []uint64, f Field) ([]uint64, error) {
	if f.Type == protowire.VarintType {
		return append(dst, f.U), nil
	}
	if f.Type != protowire.BytesType {
		return dst, fmt.Errorf("%w: field %d: unexpected wire type %d", ErrCorrupt, f.Num, f.Type)
	}
	b := f.B
	for len(b) > 0 {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return dst, fmt.Errorf("%w: packed field %d: %v", ErrCorrupt, f.Num, protowire.ParseError(n))
		}
		dst = append(dst, v)
		b = b[n:]
	}
	return dst, nil
}

// Int32 converts a varint holding an int32 (sign-extended to 64 bits when
// negative) to int32.
func Int32(v uint64) int32 { return int32(int64(v)) }
