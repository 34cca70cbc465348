package decode

import (
	"fmt"
	"strings"

	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
	"google.golang.org/protobuf/encoding/protowire"
)

// DescribeLayout names a 2.1+ page layout and the compressions it uses,
// for example "MiniBlockLayout(values=InlineBitpacking(64))". It never
// fails: parts it cannot decode are named as such.
func DescribeLayout(pl PageLayout) string {
	name := LayoutNames[pl.Kind]
	if name == "" {
		name = fmt.Sprintf("PageLayout(%d)", pl.Kind)
	}
	// The CompressiveEncoding fields of each layout message.
	var parts map[protowire.Number]string
	switch pl.Kind {
	case LayoutMiniBlock:
		parts = map[protowire.Number]string{miniRepCompression: "rep", miniDefCompression: "def", miniValueCompression: "values", miniDictionary: "dictionary"}
	case LayoutFullZip:
		parts = map[protowire.Number]string{fullZipValueCompress: "values"}
	default:
		return name
	}
	var items []string
	err := wire.Walk(pl.Raw, func(f wire.Field) error {
		label, ok := parts[f.Num]
		if !ok {
			return nil
		}
		c, err := ParseCompression(f.B, 0)
		if err != nil {
			items = append(items, label+"=invalid")
			return nil
		}
		items = append(items, label+"="+c.String())
		return nil
	})
	if err != nil {
		return name + "(invalid)"
	}
	if len(items) == 0 {
		return name
	}
	return name + "(" + strings.Join(items, ", ") + ")"
}

// Describe20 names a 2.0 ArrayEncoding tree, for example
// "Nullable(some)<Flat(1), Flat(64)>". It never fails: parts it cannot
// decode are named as such.
func Describe20(enc []byte) string { return describe20(enc, 0) }

func describe20(enc []byte, depth int) string {
	if depth > 16 {
		return "..."
	}
	kind, val, err := Oneof(enc)
	if err != nil {
		return "invalid"
	}
	switch kind {
	case Enc20Flat:
		return describeFlat20(val)
	case Enc20Nullable:
		return describeNullable20(val, depth)
	case Enc20FixedSizeList:
		var dim uint64
		wire.Walk(val, func(f wire.Field) error {
			if f.Num == fslDimension {
				dim = f.U
			}
			return nil
		})
		return wrap20(fmt.Sprintf("FixedSizeList(%d)", dim), subEncodings20(val, depth, fslItems))
	case Enc20Binary:
		return wrap20(Enc20Name(kind), subEncodings20(val, depth, binaryIndices, binaryBytes))
	case Enc20Dictionary:
		return wrap20(Enc20Name(kind), subEncodings20(val, depth, dictIndices, dictItems))
	case Enc20List:
		return wrap20(Enc20Name(kind), subEncodings20(val, depth, listOffsets))
	}
	return Enc20Name(kind)
}

// describeFlat20 names a Flat encoding: its bit width and compression.
func describeFlat20(val []byte) string {
	var bits uint64
	scheme := ""
	wire.Walk(val, func(f wire.Field) error {
		switch f.Num {
		case flatBitsPerValue:
			bits = f.U
		case flatCompression:
			b, _ := bytesField(f.B, compressionScheme)
			scheme = string(b)
		}
		return nil
	})
	if scheme != "" && scheme != "none" {
		return fmt.Sprintf("Flat(%d, %s)", bits, scheme)
	}
	return fmt.Sprintf("Flat(%d)", bits)
}

// describeNullable20 names a Nullable encoding and its inner encodings.
func describeNullable20(val []byte, depth int) string {
	nk, nv, err := Oneof(val)
	if err != nil {
		return "Nullable(invalid)"
	}
	switch nk {
	case nullableNoNull:
		return wrap20("Nullable(none)", subEncodings20(nv, depth, noNullValues))
	case nullableSomeNull:
		return wrap20("Nullable(some)", subEncodings20(nv, depth, someNullValues))
	case nullableAllNull:
		return "Nullable(all)"
	}
	return fmt.Sprintf("Nullable(%d)", nk)
}

// subEncodings20 names the nested ArrayEncoding fields nums of message val,
// in message order.
func subEncodings20(val []byte, depth int, nums ...protowire.Number) []string {
	var out []string
	wire.Walk(val, func(f wire.Field) error {
		for _, n := range nums {
			if f.Num == n {
				out = append(out, describe20(f.B, depth+1))
			}
		}
		return nil
	})
	return out
}

// wrap20 appends the inner names to name, in angle brackets.
func wrap20(name string, inner []string) string {
	if len(inner) == 0 {
		return name
	}
	return name + "<" + strings.Join(inner, ", ") + ">"
}
