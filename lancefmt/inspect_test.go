package lancefmt

import (
	"context"
	"strings"
	"testing"
)

// TestColumnEncodings checks the column and page descriptions against the
// fixtures: every fragment stores the non-null id column in pages whose
// lengths add up to the fragment's rows, at the file version the dataset
// was written with, and the encoding names belong to that version's family.
func TestColumnEncodings(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	tests := []struct {
		dataset      string
		major, minor uint32
		want         string // a substring of the id column's page encodings
		multiPage    string // a column with more than one page in fragment 0, or ""
	}{
		{"types_legacy", 0, 2, "plain", "id"}, // legacy files page by 1024 rows
		{"types_2_0", 2, 0, "Nullable(none)<Flat(64)>", ""},
		{"types_2_1", 2, 1, "MiniBlockLayout(", ""},
		{"types_2_2", 2, 2, "MiniBlockLayout(", ""},
		{"big_2_0", 2, 0, "Nullable(none)<Flat(64)>", ""},
		{"big_2_1", 2, 1, "MiniBlockLayout(", "li"},
		{"big_2_2", 2, 2, "MiniBlockLayout(", "li"},
	}
	for _, tc := range tests {
		t.Run(tc.dataset, func(t *testing.T) {
			ds, err := Open(context.Background(), dir+"/"+tc.dataset+".lance", OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, fr := range ds.Fragments() {
				ces, err := ds.ColumnEncodings(&fr, []string{"id"})
				if err != nil {
					t.Fatal(err)
				}
				if len(ces) != 1 {
					t.Fatalf("fragment %d: %d columns for id, want 1: %+v", fr.ID, len(ces), ces)
				}
				ce := ces[0]
				if ce.Path != "id" || ce.Major != tc.major || ce.Minor != tc.minor || ce.Fragment != fr.ID {
					t.Fatalf("fragment %d: got %s %d.%d fragment %d, want id %d.%d", fr.ID, ce.Path, ce.Major, ce.Minor, ce.Fragment, tc.major, tc.minor)
				}
				var rows uint64
				for _, p := range ce.Pages {
					rows += p.Length
					if !strings.Contains(p.Encoding, tc.want) {
						t.Errorf("fragment %d: page encoding %q, want it to contain %q", fr.ID, p.Encoding, tc.want)
					}
					if (p.Bytes == 0) != (tc.major == 0 && tc.minor < 3) {
						t.Errorf("fragment %d: page of %d bytes", fr.ID, p.Bytes)
					}
				}
				if rows != fr.PhysicalRows {
					t.Errorf("fragment %d: pages hold %d rows, fragment has %d", fr.ID, rows, fr.PhysicalRows)
				}
			}
			if tc.multiPage != "" {
				fr := ds.Fragments()[0]
				ces, err := ds.ColumnEncodings(&fr, []string{tc.multiPage})
				if err != nil {
					t.Fatal(err)
				}
				if len(ces) != 1 || len(ces[0].Pages) < 2 {
					t.Errorf("column %s: want one column of several pages, got %+v", tc.multiPage, ces)
				}
			}
		})
	}
}

// TestColumnEncodingsNested checks that nested and blob fields are
// described per stored column, named by their path, with the encoding
// their storage version uses, and that an unknown column is an error
// naming the dataset.
func TestColumnEncodingsNested(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	tests := []struct {
		dataset string
		columns []string
		want    map[string]string // path -> "column encoding: substring of page 0's encoding"
	}{
		{"types_legacy", []string{"st", "li"}, map[string]string{"st.x": "plain: plain", "st.y": "var_binary: var_binary", "li": "plain: plain", "li.item": "plain: plain"}},
		{"types_2_0", []string{"st", "li"}, map[string]string{"st": "values: SimpleStruct", "st.x": "values: Nullable(some)<Flat(32)>",
			"st.y": "values: Binary<", "li": "values: List<", "li.item": "values: Nullable(some)<Flat(32)>"}},
		{"types_2_1", []string{"st", "li"}, map[string]string{"st.x": "values: MiniBlockLayout(def=", "st.y": "values: MiniBlockLayout(def=",
			"li.item": "values: MiniBlockLayout(rep="}},
		{"blob1_2_0", []string{"blob"}, map[string]string{"blob": "blob: PackedStruct"}},
		{"blob1_2_1", []string{"blob"}, map[string]string{"blob": "values: BlobLayout"}},
		{"blob2_2_2", []string{"blob"}, map[string]string{"blob": "values: FullZipLayout(values="}},
		{"nested_2_2", []string{"kstr", "lbig"}, map[string]string{"kstr": "values: ConstantLayout", "lbig.item": "values: FullZipLayout(values="}},
	}
	for _, tc := range tests {
		t.Run(tc.dataset, func(t *testing.T) {
			ds, err := Open(context.Background(), dir+"/"+tc.dataset+".lance", OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fr := ds.Fragments()[0]
			ces, err := ds.ColumnEncodings(&fr, tc.columns)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, ce := range ces {
				if len(ce.Pages) == 0 {
					t.Fatalf("%s: no pages", ce.Path)
				}
				got[ce.Path] = ce.Encoding + ": " + ce.Pages[0].Encoding
			}
			if len(got) != len(tc.want) {
				t.Errorf("got columns %v, want %v", got, tc.want)
			}
			for p, w := range tc.want {
				if !strings.HasPrefix(got[p], w) {
					t.Errorf("%s: got %q, want prefix %q", p, got[p], w)
				}
			}
			_, err = ds.ColumnEncodings(&fr, []string{"nope"})
			if err == nil || !strings.Contains(err.Error(), tc.dataset) || !strings.Contains(err.Error(), `"nope"`) {
				t.Errorf("unknown column: got error %v, want one naming the dataset and the column", err)
			}
		})
	}
}
