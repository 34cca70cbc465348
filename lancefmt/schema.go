package lancefmt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Schema is the schema of a dataset version: the Arrow view and the Lance
// fields it was built from.
type Schema struct {
	// Arrow is the Arrow schema of the top-level fields. Blob columns appear
	// with their stored type (large_binary for blob v1, the struct
	// {data, uri} for blob v2) but are read through Dataset.Blobs.
	Arrow *arrow.Schema
	// Fields are the top-level Lance fields, with their children linked.
	Fields []*Field
	// Metadata is the schema metadata.
	Metadata map[string][]byte
	// Unsupported maps the top-level fields whose type this package cannot
	// read to the reason; they are in Fields but not in Arrow, and scanning
	// them fails.
	Unsupported map[string]error
}

// Field returns the top-level field with the given name, or nil.
func (s *Schema) Field(name string) *Field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// IsBlob reports whether the field is a blob column (v1 or v2).
func (f *Field) IsBlob() bool { return f.BlobVersion() != 0 }

// BlobVersion returns 1 for a blob v1 field (large_binary with
// lance-encoding:blob metadata), 2 for a blob v2 field (extension
// lance.blob.v2), 0 otherwise.
func (f *Field) BlobVersion() int {
	if f.ExtensionName == "lance.blob.v2" || string(f.Metadata["ARROW:extension:name"]) == "lance.blob.v2" {
		return 2
	}
	if v := string(f.Metadata["lance-encoding:blob"]); v == "true" || f.LogicalType == "blob" {
		return 1
	}
	return 0
}

// newSchema builds the schema from the flattened manifest fields.
func newSchema(fields []*Field, md map[string][]byte) (*Schema, error) {
	s := &Schema{Metadata: md, Unsupported: map[string]error{}}
	var afs []arrow.Field
	for _, f := range fields {
		if f.ParentID >= 0 {
			continue
		}
		s.Fields = append(s.Fields, f)
		af, err := arrowField(f, 0)
		if err != nil {
			s.Unsupported[f.Name] = err
			continue
		}
		afs = append(afs, af)
	}
	keys := make([]string, 0, len(md))
	vals := make([]string, 0, len(md))
	for k, v := range md {
		keys = append(keys, k)
		vals = append(vals, string(v))
	}
	meta := arrow.NewMetadata(keys, vals)
	s.Arrow = arrow.NewSchema(afs, &meta)
	return s, nil
}

// ArrowTypeName names the Arrow type the field is read as (for example
// "list<item: int32, nullable>"), or its Lance logical type when this
// package cannot read it.
func (f *Field) ArrowTypeName() string {
	af, err := arrowField(f, 0)
	if err != nil {
		return f.LogicalType
	}
	return af.Type.String()
}

// arrowField converts a Lance field (and its children) to an Arrow field.
func arrowField(f *Field, depth int) (arrow.Field, error) {
	if depth > 64 {
		return arrow.Field{}, fmt.Errorf("%w: schema nested deeper than 64 levels", errCorrupt)
	}
	t, err := arrowType(f, depth)
	if err != nil {
		return arrow.Field{}, fmt.Errorf("field %q: %w", f.Name, err)
	}
	var md arrow.Metadata
	if len(f.Metadata) > 0 {
		keys := make([]string, 0, len(f.Metadata))
		vals := make([]string, 0, len(f.Metadata))
		for k, v := range f.Metadata {
			keys = append(keys, k)
			vals = append(vals, string(v))
		}
		md = arrow.NewMetadata(keys, vals)
	}
	return arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable, Metadata: md}, nil
}

var simpleTypes = map[string]arrow.DataType{
	"null":         arrow.Null,
	"bool":         arrow.FixedWidthTypes.Boolean,
	"int8":         arrow.PrimitiveTypes.Int8,
	"uint8":        arrow.PrimitiveTypes.Uint8,
	"int16":        arrow.PrimitiveTypes.Int16,
	"uint16":       arrow.PrimitiveTypes.Uint16,
	"int32":        arrow.PrimitiveTypes.Int32,
	"uint32":       arrow.PrimitiveTypes.Uint32,
	"int64":        arrow.PrimitiveTypes.Int64,
	"uint64":       arrow.PrimitiveTypes.Uint64,
	"halffloat":    arrow.FixedWidthTypes.Float16,
	"float":        arrow.PrimitiveTypes.Float32,
	"double":       arrow.PrimitiveTypes.Float64,
	"string":       arrow.BinaryTypes.String,
	"binary":       arrow.BinaryTypes.Binary,
	"large_string": arrow.BinaryTypes.LargeString,
	"large_binary": arrow.BinaryTypes.LargeBinary,
	"blob":         arrow.BinaryTypes.LargeBinary,
	"json":         arrow.BinaryTypes.LargeBinary,
	"date32:day":   arrow.FixedWidthTypes.Date32,
	"date64:ms":    arrow.FixedWidthTypes.Date64,
}

var timeUnits = map[string]arrow.TimeUnit{"s": arrow.Second, "ms": arrow.Millisecond, "us": arrow.Microsecond, "ns": arrow.Nanosecond}

// scalarType converts a logical type without children.
func scalarType(lt string) (arrow.DataType, error) {
	if t, ok := simpleTypes[lt]; ok {
		return t, nil
	}
	parts := strings.Split(lt, ":")
	switch parts[0] {
	case "timestamp":
		if len(parts) == 3 {
			u, ok := timeUnits[parts[1]]
			if ok {
				tz := parts[2]
				if tz == "-" {
					tz = ""
				}
				return &arrow.TimestampType{Unit: u, TimeZone: tz}, nil
			}
		}
	case "time32":
		if len(parts) == 2 {
			switch parts[1] {
			case "s":
				return arrow.FixedWidthTypes.Time32s, nil
			case "ms":
				return arrow.FixedWidthTypes.Time32ms, nil
			}
		}
	case "time64":
		if len(parts) == 2 {
			switch parts[1] {
			case "us":
				return arrow.FixedWidthTypes.Time64us, nil
			case "ns":
				return arrow.FixedWidthTypes.Time64ns, nil
			}
		}
	case "duration":
		if len(parts) == 2 {
			if u, ok := timeUnits[parts[1]]; ok {
				return &arrow.DurationType{Unit: u}, nil
			}
		}
	case "decimal":
		if len(parts) == 4 {
			p, err1 := strconv.Atoi(parts[2])
			s, err2 := strconv.Atoi(parts[3])
			if err1 == nil && err2 == nil {
				switch parts[1] {
				case "128":
					return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}, nil
				case "256":
					return &arrow.Decimal256Type{Precision: int32(p), Scale: int32(s)}, nil
				}
			}
		}
	case "fixed_size_binary":
		if len(parts) == 2 {
			n, err := strconv.Atoi(parts[1])
			if err == nil && n > 0 {
				return &arrow.FixedSizeBinaryType{ByteWidth: n}, nil
			}
		}
	case "fixed_size_list":
		// fixed_size_list:<inner>:<n>; the inner type may itself contain colons.
		if len(parts) >= 3 {
			n, err := strconv.Atoi(parts[len(parts)-1])
			if err == nil && n > 0 {
				inner := strings.Join(parts[1:len(parts)-1], ":")
				it, err := scalarType(inner)
				if err != nil {
					return nil, err
				}
				return arrow.FixedSizeListOfField(int32(n), arrow.Field{Name: "item", Type: it, Nullable: true}), nil
			}
		}
	case "dict":
		// dict:<value>:<key>:<ordered>
		if len(parts) >= 4 {
			vt, err := scalarType(strings.Join(parts[1:len(parts)-2], ":"))
			if err != nil {
				return nil, err
			}
			// Dictionaries are materialised: the reader yields the values.
			return vt, nil
		}
	}
	return nil, fmt.Errorf("unsupported logical type %q", lt)
}

// arrowType converts a Lance field's logical type to an Arrow type.
func arrowType(f *Field, depth int) (arrow.DataType, error) {
	switch f.LogicalType {
	case "struct":
		var cs []arrow.Field
		for _, c := range f.Children {
			af, err := arrowField(c, depth+1)
			if err != nil {
				return nil, err
			}
			cs = append(cs, af)
		}
		return arrow.StructOf(cs...), nil
	case "list", "large_list", "list.struct", "large_list.struct":
		if len(f.Children) != 1 {
			return nil, fmt.Errorf("%w: list with %d children", errCorrupt, len(f.Children))
		}
		item, err := arrowField(f.Children[0], depth+1)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(f.LogicalType, "large_") {
			return arrow.LargeListOfField(item), nil
		}
		return arrow.ListOfField(item), nil
	}
	if len(f.Children) > 0 && strings.HasPrefix(f.LogicalType, "fixed_size_list:") {
		return nil, fmt.Errorf("fixed_size_list of %s is not supported yet", f.Children[0].LogicalType)
	}
	return scalarType(f.LogicalType)
}

// isPacked reports whether a struct field is stored packed (one column of
// row-major fixed-width children).
func isPacked(f *Field) bool {
	return f.LogicalType == "struct" && (string(f.Metadata["lance-encoding:packed"]) == "true" || string(f.Metadata["packed"]) == "true")
}
