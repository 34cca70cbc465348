package lancefmt

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestScanFragments checks ScanOptions.Fragments on a committed dataset of
// several fragments with deletions: each fragment scanned alone yields its
// share of the whole scan's ids, and the shares, in order, make the whole.
func TestScanFragments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ds, err := Open(ctx, filepath.Join(committedFixtures(t), "s_types_2_1.lance"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(frags []uint64) []int64 {
		sc, err := ds.Scan(ctx, ScanOptions{Columns: []string{"id"}, Fragments: frags})
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		var out []int64
		for sc.Next() {
			out = append(out, sc.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	whole := ids(nil)
	if len(ds.Fragments()) < 2 || len(whole) == 0 {
		t.Fatalf("fixture has %d fragments and %d rows; the test needs several", len(ds.Fragments()), len(whole))
	}
	var joined []int64
	for _, f := range ds.Fragments() {
		part := ids([]uint64{f.ID})
		if len(part) == 0 || len(part) == len(whole) {
			t.Fatalf("fragment %d alone: %d rows of %d", f.ID, len(part), len(whole))
		}
		joined = append(joined, part...)
	}
	if !slices.Equal(joined, whole) {
		t.Fatalf("fragments one by one: %v\nwhole scan: %v", joined, whole)
	}
	if got := ids([]uint64{}); len(got) != 0 {
		t.Fatalf("no fragments: %d rows", len(got))
	}
}
