package lancefmt

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestLineageColumns: the hidden row lineage columns of a fragment are
// found beside data or alone in a data file (as pylance 14 writes them
// after compact_files and after an update), and layouts Lance does not
// write are refused.
func TestLineageColumns(t *testing.T) {
	t.Parallel()
	file := func(fields []int32, cols []int32) DataFile {
		return DataFile{Path: "f.lance", Fields: fields, ColumnIndices: cols}
	}
	for _, tc := range []struct {
		name      string
		files     []DataFile
		transcode bool
		want      []lineageColumn
		err       string
	}{
		{name: "none", files: []DataFile{file([]int32{0, 1}, []int32{0, 1})}},
		{name: "beside data", files: []DataFile{file([]int32{0, 1, -3, -4, -5}, []int32{0, 1, 2, 3, 4})},
			want: []lineageColumn{{-3, 0, 2}, {-4, 0, 3}, {-5, 0, 4}}},
		{name: "alone", files: []DataFile{file([]int32{0, 1}, []int32{0, 1}), file([]int32{-3, -4}, []int32{0, 1})},
			want: []lineageColumn{{-3, 1, 0}, {-4, 1, 1}}},
		{name: "no column", files: []DataFile{file([]int32{0, -3}, []int32{0, -1})}},
		{name: "dropped field", files: []DataFile{file([]int32{-2, -3}, []int32{0, 1})}, want: []lineageColumn{{-3, 0, 1}}},
		{name: "spread", files: []DataFile{file([]int32{0, -3}, []int32{0, 1}), file([]int32{-4}, []int32{0})},
			err: "spread over several data files"},
		{name: "twice", files: []DataFile{file([]int32{-3, -3}, []int32{0, 1})}, err: "stored twice"},
		{name: "legacy", files: []DataFile{file([]int32{0, -3}, []int32{0, 1})}, transcode: true, err: "legacy"},
	} {
		got, err := lineageColumns(&Fragment{Files: tc.files}, tc.transcode)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestLineageFieldsSpilledWithoutColumns: a fragment whose manifest entry
// says its lineage is spilled, with no data file holding the columns, is
// corrupt.
func TestLineageFieldsSpilledWithoutColumns(t *testing.T) {
	t.Parallel()
	rw := &rewriter{rm: &rawManifest{frags: map[uint64][]byte{7: pbuf(nil).varint(1, 7).bytes(fragmentSpilledRowIDs, nil)}}}
	_, err := rw.lineageFields(&Fragment{ID: 7}, nil, nil)
	if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), "no data file holds them") {
		t.Fatalf("error %v, want a corrupt-data error", err)
	}
	msg, err := rw.lineageFields(&Fragment{ID: 7}, nil, []lineageColumn{{-3, 0, 2}})
	if err != nil || !rw.spilled || len(msg) == 0 {
		t.Fatalf("with the columns: %v, %v (spilled %v)", msg, err, rw.spilled)
	}
}
