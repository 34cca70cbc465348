package lancefmt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// JSON rendering of rows, for inspectors: Dataset.Head reads the first rows
// of a dataset as JSON-ready values.
//
// Values are rendered as: integers and floats as numbers (64-bit integers
// exactly; NaN and infinities as the strings "NaN", "+Inf", "-Inf"),
// strings as strings, binary values as {"size": N, "sha256": HEX} (payloads
// are often large and not text: the digest identifies them and can be
// compared with other tools), lists as arrays, structs as objects in field
// order, maps as arrays of {key, value}, dictionaries as their values,
// timestamps as UTC "2006-01-02T15:04:05.999999999" (with a "Z" when the
// type has a time zone), decimals exactly as decimal strings, other types
// (dates, times, durations) in Arrow's text form. A blob column gives a
// handle instead of the payload: {"size", "kind", "ref_id", "location":
// {"file", "offset", "size"}} where location is the physical identity of
// the stored bytes (rows with equal locations share one blob; null for an
// empty blob) and file is relative to the dataset directory when inside it;
// external blobs also carry "uri".

// Head reads the first n rows (deleted rows excluded) of the named
// top-level columns, in order, as JSON objects whose values are rendered as
// described above: blob columns as handles, the others scanned.
func (d *Dataset) Head(ctx context.Context, columns []string, n int) ([]JSONObject, error) {
	sc := d.Schema()
	for _, c := range columns {
		if sc.Field(c) == nil {
			return nil, fmt.Errorf("lance: %s: no column %q", d.dir, c)
		}
	}
	var plain []string
	for _, c := range columns {
		if !sc.Field(c).IsBlob() {
			plain = append(plain, c)
		}
	}
	rows := make([]JSONObject, 0, min(uint64(max(n, 0)), d.NumRows()))
	vals := map[string][]any{}
	if len(plain) > 0 {
		s, err := d.Scan(ctx, ScanOptions{Columns: plain, BatchSize: min(max(n, 64), 8192)})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		got := 0
		for got < n && s.Next() {
			rec := s.RecordBatch()
			k := min(int(rec.NumRows()), n-got)
			for ci, name := range plain {
				col := rec.Column(ci)
				for i := 0; i < k; i++ {
					vals[name] = append(vals[name], JSONValue(col, i))
				}
			}
			got += k
		}
		if err := s.Err(); err != nil {
			return nil, err
		}
	}
	for _, c := range columns {
		if !sc.Field(c).IsBlob() {
			continue
		}
		b, err := d.Blobs(ctx, c)
		if err != nil {
			return nil, err
		}
		for len(vals[c]) < n && b.Next() {
			vals[c] = append(vals[c], BlobJSON(d.dir, b.Blob()))
		}
		err = b.Err()
		b.Close()
		if err != nil {
			return nil, err
		}
	}
	total := n
	for _, c := range columns {
		total = min(total, len(vals[c]))
	}
	for i := 0; i < total; i++ {
		var o JSONObject
		for _, c := range columns {
			o.Keys = append(o.Keys, c)
			o.Values = append(o.Values, vals[c][i])
		}
		rows = append(rows, o)
	}
	return rows, nil
}

// BlobJSON renders a blob handle as described above; dir is the dataset
// directory, which file names are made relative to.
func BlobJSON(dir string, b *Blob) any {
	if b.Null {
		return nil
	}
	var loc any // nil: no bytes stored (an empty blob)
	if file := b.Location.Path; file != "" {
		if rel, ok := relPath(dir, file); ok {
			file = rel
		}
		loc = JSONObject{Keys: []string{"file", "offset", "size"}, Values: []any{file, b.Location.Offset, b.Location.Size}}
	}
	o := JSONObject{
		Keys:   []string{"size", "kind", "ref_id", "location"},
		Values: []any{b.Size, b.Kind.String(), b.RefID, loc},
	}
	if b.URI != "" {
		o.Keys = append(o.Keys, "uri")
		o.Values = append(o.Values, b.URI)
	}
	return o
}

// JSONValue renders value i of an Arrow array as described above.
func JSONValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Binary:
		return binaryValue(a.Value(i))
	case *array.LargeBinary:
		return binaryValue(a.Value(i))
	case *array.BinaryView:
		return binaryValue(a.Value(i))
	case *array.FixedSizeBinary:
		return binaryValue(a.Value(i))
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return a.Value(i)
	case *array.Uint16:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Float16:
		return floatValue(float64(a.Value(i).Float32()))
	case *array.Float32:
		return floatValue(float64(a.Value(i)))
	case *array.Float64:
		return floatValue(a.Value(i))
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		out := make([]any, 0, end-start)
		for k := start; k < end; k++ {
			out = append(out, JSONObject{Keys: []string{"key", "value"}, Values: []any{JSONValue(keys, int(k)), JSONValue(items, int(k))}})
		}
		return out
	case *array.List:
		start, end := a.ValueOffsets(i)
		return listValue(a.ListValues(), start, end)
	case *array.LargeList:
		start, end := a.ValueOffsets(i)
		return listValue(a.ListValues(), start, end)
	case *array.FixedSizeList:
		start, end := a.ValueOffsets(i)
		return listValue(a.ListValues(), start, end)
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		var o JSONObject
		for k := 0; k < a.NumField(); k++ {
			o.Keys = append(o.Keys, st.Field(k).Name)
			o.Values = append(o.Values, JSONValue(a.Field(k), i))
		}
		return o
	case *array.Dictionary:
		return JSONValue(a.Dictionary(), a.GetValueIndex(i))
	case *array.Timestamp:
		ts := a.DataType().(*arrow.TimestampType)
		s := a.Value(i).ToTime(ts.Unit).UTC().Format("2006-01-02T15:04:05.999999999")
		if ts.TimeZone != "" {
			s += "Z"
		}
		return s
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Decimal256:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale)
	}
	return a.GetOneForMarshal(i)
}

func listValue(items arrow.Array, start, end int64) []any {
	out := make([]any, 0, end-start)
	for k := start; k < end; k++ {
		out = append(out, JSONValue(items, int(k)))
	}
	return out
}

func binaryValue(b []byte) any {
	sum := sha256.Sum256(b)
	return JSONObject{Keys: []string{"size", "sha256"}, Values: []any{len(b), hex.EncodeToString(sum[:])}}
}

func floatValue(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

// JSONObject is a JSON object whose keys keep their order.
type JSONObject struct {
	Keys   []string
	Values []any // Values[i] belongs to Keys[i]
}

// MarshalJSON writes the object with its keys in order.
func (o JSONObject) MarshalJSON() ([]byte, error) {
	if len(o.Keys) != len(o.Values) {
		return nil, fmt.Errorf("lance: json object of %d keys and %d values", len(o.Keys), len(o.Values))
	}
	b := []byte{'{'}
	for i, k := range o.Keys {
		if i > 0 {
			b = append(b, ',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(o.Values[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		b = append(append(append(b, kb...), ':'), vb...)
	}
	return append(b, '}'), nil
}
