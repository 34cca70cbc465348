package lance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestRefs: values come back per fragment as set, rows without a value
// and fragments never touched are null, a shared cell gives every row the
// same text, and rows past a fragment's end or a count that differs from
// the table's are errors.
func TestRefs(t *testing.T) {
	t.Parallel()
	rows := map[uint64]uint64{3: 5, 7: 2, 9: 100_000}
	r := newRefs(func(frag uint64) uint64 { return rows[frag] })
	first, err := r.set(3, 1, "zip://a.jpg::media/pack-0000.zip")
	if err != nil {
		t.Fatal(err)
	}
	steps := []error{
		r.setCell(7, 0, first), // a blob shared across fragments
		r.setCell(3, 4, first),
	}
	_, err = r.set(3, 2, "") // an empty external URI is a value
	steps = append(steps, err)
	long := strings.Repeat("k", 70_000)
	_, err = r.set(7, 1, long)
	steps = append(steps, err)
	for i := range 100_000 {
		_, err = r.set(9, uint64(i), fmt.Sprintf("zip://%08d.jpg::media/pack-%04d.zip", i, i/65535))
		steps = append(steps, err)
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	tests := []struct {
		frag  uint64
		vals  []string
		valid []bool
	}{
		{3, []string{"", "zip://a.jpg::media/pack-0000.zip", "", "", "zip://a.jpg::media/pack-0000.zip"}, []bool{false, true, true, false, true}},
		{7, []string{"zip://a.jpg::media/pack-0000.zip", long}, []bool{true, true}},
		{8, []string{"", "", ""}, []bool{false, false, false}}, // never touched
	}
	for _, tc := range tests {
		vals, valid, err := r.values(tc.frag, uint64(len(tc.vals)))
		if err != nil || !slices.Equal(vals, tc.vals) || !slices.Equal(valid, tc.valid) {
			t.Errorf("fragment %d: %q %v %v, want %q %v", tc.frag, vals, valid, err, tc.vals, tc.valid)
		}
	}
	vals, valid, err := r.values(9, 100_000)
	if err != nil || vals[65535] != "zip://00065535.jpg::media/pack-0001.zip" || !valid[99_999] || vals[99_999] != "zip://00099999.jpg::media/pack-0001.zip" {
		t.Errorf("fragment 9: %v %q %q", err, vals[65535], vals[99_999])
	}
	if got := r.fragments(); !slices.Equal(got, []uint64{3, 7, 9}) {
		t.Errorf("fragments %v", got)
	}
	if _, _, err := r.values(3, 6); err == nil {
		t.Error("a count that differs from the fragment's was accepted")
	}
	if err := r.setCell(7, 2, first); err == nil {
		t.Error("a row past the fragment's end was accepted")
	}
}
