package lerobot

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestListFromFixed converts fixed-size list arrays, sliced and with null
// entries, to list arrays: the same values per entry, nulls holding none,
// and no buffer leaked (arrow's checked allocator).
func TestListFromFixed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		rows       [][]float32 // nil: a null entry
		off, n     int
		wantValues int
	}{
		{"no nulls", [][]float32{{1, 2}, {3, 4}, {5, 6}}, 0, 3, 6},
		{"sliced", [][]float32{{1, 2}, {3, 4}, {5, 6}, {7, 8}}, 1, 2, 4},
		{"nulls", [][]float32{nil, {3, 4}, nil, nil, {9, 10}, {11, 12}}, 0, 6, 6},
		{"nulls sliced", [][]float32{{1, 2}, nil, {5, 6}, nil}, 1, 3, 2},
		{"all null", [][]float32{nil, nil}, 0, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			b := array.NewFixedSizeListBuilder(mem, 2, arrow.PrimitiveTypes.Float32)
			vb := b.ValueBuilder().(*array.Float32Builder)
			for _, r := range tc.rows {
				if r == nil {
					b.AppendNull()
					continue
				}
				b.Append(true)
				vb.AppendValues(r, nil)
			}
			full := b.NewArray()
			b.Release()
			defer full.Release()
			sl := array.NewSlice(full, int64(tc.off), int64(tc.off+tc.n)).(*array.FixedSizeList)
			defer sl.Release()
			lt := arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Float32, Nullable: true})
			got, err := listFromFixed(sl, lt, mem)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			l := got.(*array.List)
			if l.Len() != tc.n || l.ListValues().Len() != tc.wantValues {
				t.Fatalf("%d entries, %d values; want %d, %d", l.Len(), l.ListValues().Len(), tc.n, tc.wantValues)
			}
			for i := 0; i < tc.n; i++ {
				want := tc.rows[tc.off+i]
				if want == nil {
					if !l.IsNull(i) {
						t.Errorf("entry %d: not null", i)
					}
					continue
				}
				s, e := l.ValueOffsets(i)
				vals := l.ListValues().(*array.Float32).Float32Values()[s:e]
				if l.IsNull(i) || fmt.Sprint(vals) != fmt.Sprint(want) {
					t.Errorf("entry %d: %v (null %v), want %v", i, vals, l.IsNull(i), want)
				}
			}
			if err := got.(interface{ ValidateFull() error }).ValidateFull(); err != nil {
				t.Errorf("invalid list array: %v", err)
			}
		})
	}
}
