package lancefmt

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestDescribe describes committed datasets: the fragments and row counts
// agree with the manifest, every stored column has pages (its largest one
// among them), and an unknown
// column is reported with the schema's columns.
func TestDescribe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, name := range []string{"s_types_2_1", "s_blob_2_2", "s_nested_legacy", "s_bitmap_2_1"} {
		t.Run(name, func(t *testing.T) {
			ds, err := Open(ctx, filepath.Join(committedFixtures(t), name+".lance"), OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d, err := Describe(ctx, ds, DescribeOptions{Rows: 2})
			if err != nil {
				t.Fatal(err)
			}
			if d.Version != ds.Version() || d.LatestVersion != d.Versions[len(d.Versions)-1] {
				t.Fatalf("versions: got %d of %v (latest %d)", d.Version, d.Versions, d.LatestVersion)
			}
			if d.NumRows != ds.NumRows() || d.PhysicalRows-d.DeletedRows != d.NumRows {
				t.Fatalf("rows: got %d (%d physical, %d deleted), dataset has %d", d.NumRows, d.PhysicalRows, d.DeletedRows, ds.NumRows())
			}
			if len(d.Fragments) != len(ds.Fragments()) || len(d.Fields) != len(ds.Schema().Fields) {
				t.Fatalf("got %d fragments, %d fields", len(d.Fragments), len(d.Fields))
			}
			for _, c := range d.Columns {
				if c.Pages == 0 || len(c.Encodings) == 0 || len(c.FileVersions) == 0 {
					t.Fatalf("column %s: %+v", c.Path, c)
				}
				// The largest page is one of the pages summed in Bytes.
				if c.LargestPage > c.Bytes || c.LargestPage*uint64(c.Pages) < c.Bytes || (c.Bytes > 0) != (c.LargestPage > 0) {
					t.Fatalf("column %s: largest page %d bytes of %d pages, %d bytes", c.Path, c.LargestPage, c.Pages, c.Bytes)
				}
			}
			if want := min(2, int(d.NumRows)); len(d.Rows) != want {
				t.Fatalf("got %d rows, want %d", len(d.Rows), want)
			}
			_, err = Describe(ctx, ds, DescribeOptions{Columns: []string{"no such column"}})
			var unknown *UnknownColumnError
			if !errors.As(err, &unknown) || len(unknown.Columns) != len(ds.Schema().Fields) {
				t.Fatalf("unknown column: got %v", err)
			}
		})
	}
}

func TestFileVersionName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		major, minor uint32
		want         string
	}{{0, 1, "0.1 (legacy)"}, {0, 2, "0.2 (legacy)"}, {0, 3, "2.0"}, {2, 1, "2.1"}, {2, 2, "2.2"}} {
		if got := FileVersionName(c.major, c.minor); got != c.want {
			t.Fatalf("FileVersionName(%d, %d) = %q, want %q", c.major, c.minor, got, c.want)
		}
	}
}
