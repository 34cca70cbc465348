package convert

import (
	"fmt"
	"testing"
)

func TestParsePart(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Part
		ok   bool
	}{
		{"", Part{}, true}, {"1/1", Part{1, 1}, true}, {"3/8", Part{3, 8}, true},
		{"0/2", Part{}, false}, {"3/2", Part{}, false}, {"1/0", Part{}, false}, {"-1/2", Part{}, false},
		{"1/20000", Part{}, false}, {"1", Part{}, false}, {"a/b", Part{}, false}, {"1/2/3", Part{}, false},
	} {
		got, err := ParsePart(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePart(%q) = %v, %v", tc.in, got, err)
		}
	}
	if p, ok := ParsePartName(PartName(Part{7, 12})); !ok || p != (Part{7, 12}) {
		t.Errorf("ParsePartName: %v %v", p, ok)
	}
	for _, bad := range []string{"part-1-of-2", "part-0003-of-0002", "part-0001-of-0002x", "x"} {
		if _, ok := ParsePartName(bad); ok {
			t.Errorf("ParsePartName(%q) accepted", bad)
		}
	}
}

// TestPartRange checks that the parts of every split cover each item once,
// in order, and stay within one item's size of an equal share of bytes.
func TestPartRange(t *testing.T) {
	cases := [][]int64{
		{}, {5}, {0, 0, 0}, {1, 1, 1, 1, 1, 1, 1}, {100, 1, 1, 1, 1}, {1, 1, 1, 1, 100},
		{7, 3, 9, 1, 4, 4, 8, 2, 6, 5, 0, 3}, {1 << 40, 1 << 40, 3},
	}
	for ci, sizes := range cases {
		for n := 1; n <= 9; n++ {
			t.Run(fmt.Sprint(ci, "/", n), func(t *testing.T) {
				var total, largest int64
				for _, s := range sizes {
					total += s
					largest = max(largest, s)
				}
				next := 0
				for i := 1; i <= n; i++ {
					lo, hi := Part{i, n}.Range(sizes)
					if lo != next || hi < lo {
						t.Fatalf("part %d/%d = [%d,%d), want it to start at %d", i, n, lo, hi, next)
					}
					next = hi
					var bytes int64
					for _, s := range sizes[lo:hi] {
						bytes += s
					}
					if share := total / int64(n); total > 0 && bytes > share+largest+1 {
						t.Errorf("part %d/%d holds %d bytes; an equal share is %d", i, n, bytes, share)
					}
				}
				if next != len(sizes) {
					t.Fatalf("parts end at %d of %d items", next, len(sizes))
				}
			})
		}
	}
	if lo, hi := (Part{}).Range([]int64{1, 2}); lo != 0 || hi != 2 {
		t.Fatalf("whole: [%d,%d)", lo, hi)
	}
}
