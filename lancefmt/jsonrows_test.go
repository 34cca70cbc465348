package lancefmt

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestJSONValue checks the JSON form of values the fixtures do not
// hold (NaN and infinities, maps, time zones, dictionaries) on arrays built
// in memory.
func TestJSONValue(t *testing.T) {
	t.Parallel()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	build := func(dt arrow.DataType, fill func(b array.Builder)) arrow.Array {
		b := array.NewBuilder(mem, dt)
		defer b.Release()
		fill(b)
		return b.NewArray()
	}
	tests := []struct {
		name string
		arr  arrow.Array
		want []string // per value
	}{
		{"float64", build(arrow.PrimitiveTypes.Float64, func(b array.Builder) {
			b.(*array.Float64Builder).AppendValues([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 1.5}, nil)
			b.AppendNull()
		}), []string{`"NaN"`, `"+Inf"`, `"-Inf"`, `1.5`, `null`}},
		{"uint64", build(arrow.PrimitiveTypes.Uint64, func(b array.Builder) {
			b.(*array.Uint64Builder).Append(math.MaxUint64)
		}), []string{`18446744073709551615`}},
		{"binary", build(arrow.BinaryTypes.Binary, func(b array.Builder) {
			b.(*array.BinaryBuilder).Append([]byte("abc"))
		}), []string{`{"size":3,"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}`}},
		{"timestamp with zone", build(&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(1700000000000001)
		}), []string{`"2023-11-14T22:13:20.000001Z"`}},
		{"timestamp without zone", build(&arrow.TimestampType{Unit: arrow.Second}, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(0)
		}), []string{`"1970-01-01T00:00:00"`}},
		{"map", build(arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), func(b array.Builder) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.StringBuilder).Append("k")
			mb.ItemBuilder().(*array.Int32Builder).AppendNull()
		}), []string{`[{"key":"k","value":null}]`}},
		{"struct keeps field order", build(arrow.StructOf(arrow.Field{Name: "z", Type: arrow.PrimitiveTypes.Int8}, arrow.Field{Name: "a", Type: arrow.BinaryTypes.String}), func(b array.Builder) {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int8Builder).Append(-1)
			sb.FieldBuilder(1).(*array.StringBuilder).Append("x")
		}), []string{`{"z":-1,"a":"x"}`}},
		{"dictionary", build(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, func(b array.Builder) {
			db := b.(*array.BinaryDictionaryBuilder)
			db.AppendString("red")
			db.AppendString("blue")
			db.AppendString("red")
		}), []string{`"red"`, `"blue"`, `"red"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.arr.Release()
			if tc.arr.Len() != len(tc.want) {
				t.Fatalf("array of %d values, want %d", tc.arr.Len(), len(tc.want))
			}
			for i, w := range tc.want {
				b, err := json.Marshal(JSONValue(tc.arr, i))
				if err != nil {
					t.Fatal(err)
				}
				if string(b) != w {
					t.Errorf("value %d: got %s, want %s", i, b, w)
				}
			}
		})
	}
}

// TestHead checks Head against Lance's scan: every row of the latest
// version (deleted rows left out), in Lance's order, and an error naming
// the dataset for an unknown column.
func TestHead(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	tests := []struct {
		dataset string
		n       int
	}{
		{"types_2_1", 1 << 20}, // more than the dataset holds
		{"types_legacy", 100},
		{"blob2_2_2", 5},
	}
	for _, tc := range tests {
		t.Run(tc.dataset, func(t *testing.T) {
			exp := loadExpected(t, dir, tc.dataset)
			last := exp.Scans[len(exp.Scans)-1]
			ds, err := Open(context.Background(), filepath.Join(dir, tc.dataset+".lance"), OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ds.Version() != last.Version {
				t.Fatalf("latest version %d, the generator's last scan is of version %d", ds.Version(), last.Version)
			}
			rows, err := ds.Head(context.Background(), []string{"id"}, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if want := min(tc.n, len(last.Values["id"])); len(rows) != want {
				t.Fatalf("%d rows, want %d", len(rows), want)
			}
			for i, r := range rows {
				b, err := json.Marshal(r)
				if err != nil {
					t.Fatal(err)
				}
				var id string
				if err := json.Unmarshal(last.Values["id"][i], &id); err != nil {
					t.Fatal(err)
				}
				if want := `{"id":` + id + `}`; string(b) != want {
					t.Fatalf("row %d: got %s, want %s", i, b, want)
				}
			}
			_, err = ds.Head(context.Background(), []string{"id", "nope"}, 1)
			if err == nil || !strings.Contains(err.Error(), tc.dataset) || !strings.Contains(err.Error(), `"nope"`) {
				t.Errorf("unknown column: got error %v", err)
			}
		})
	}
}
