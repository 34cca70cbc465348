package lancefmt

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestRewriteLegacy transcodes Lance-written legacy (0.1) datasets into
// 2.0 data files and checks that Lance reads the result with the same
// values as the source, column by column, and so does this package.
func TestRewriteLegacy(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	cases := []struct {
		name    string
		replace []string
		// expected: Lance cannot read the source's schema through
		// apache-arrow JS (a large_list column, replaced here), so the
		// source values are those gen.mjs recorded for this version.
		expected bool
	}{
		{name: "types_legacy", replace: []string{"bin", "dict"}},
		{name: "nested_legacy", replace: []string{"lbig64"}, expected: true},
		{name: "blob1_legacy", replace: []string{"blob"}},
		{name: "optin_legacy", replace: []string{"pk"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src, d, plan := planFixture(t, dir, tc.name, tc.replace)
			if plan.DataVersion != "2.0" {
				t.Errorf("plan data version %s, want 2.0", plan.DataVersion)
			}
			for _, fp := range plan.Fragments {
				if !fp.Transcode || fp.FileVersion != "2.0" {
					t.Errorf("fragment %d: transcode %v version %s", fp.ID, fp.Transcode, fp.FileVersion)
				}
			}
			dst := filepath.Join(t.TempDir(), tc.name+".lance")
			res, err := d.Rewrite(context.Background(), dst, RewriteOptions{Replace: refReplacements(d, tc.replace)})
			if err != nil {
				t.Fatal(err)
			}
			if res.CopiedBytes != 0 {
				t.Errorf("%d bytes copied from legacy files", res.CopiedBytes)
			}
			var kept []string
			for _, f := range d.Schema().Fields {
				if !slices.Contains(tc.replace, f.Name) {
					kept = append(kept, f.Name)
				}
			}
			got := testtool.ReadWithLance(t, dst, map[string]any{"columns": append(append([]string(nil), kept...), tc.replace...)})
			var want *testtool.LanceRead
			if tc.expected {
				want = &testtool.LanceRead{Fields: got.Fields}
				for _, sc := range loadExpected(t, dir, tc.name).Scans {
					if sc.Version == d.Version() {
						want.Scan = &sc
					}
				}
				if want.Scan == nil {
					t.Fatalf("gen.mjs recorded no scan of version %d", d.Version())
				}
			} else {
				want = testtool.ReadWithLance(t, src, map[string]any{"columns": kept})
			}
			if got.NumRows != int(d.NumRows()) || got.Scan.NumRows != int(d.NumRows()) {
				t.Errorf("lance counts %d rows (scan %d), want %d", got.NumRows, got.Scan.NumRows, d.NumRows())
			}
			for i, f := range want.Fields {
				if slices.Contains(tc.replace, f.Name) {
					continue
				}
				if i >= len(got.Fields) || got.Fields[i].Name != f.Name || got.Fields[i].Type != f.Type {
					t.Errorf("field %d: lance sees %+v after, %+v before", i, got.Fields[min(i, len(got.Fields)-1)], f)
				}
			}
			for _, c := range kept {
				if g, w := got.Scan.Column(t, c), want.Scan.Column(t, c); !reflect.DeepEqual(g, w) {
					t.Errorf("lance scan of %s differs from the source: %d values, want %d; first %v, want %v", c, len(g), len(w), g[:min(3, len(g))], w[:min(3, len(w))])
				}
			}
			for _, c := range tc.replace {
				if g, w := got.Scan.Column(t, c), expectedRefs(t, d, c); !reflect.DeepEqual(g, w) {
					t.Errorf("lance scan of replaced column %s differs", c)
				}
			}
			od, err := Open(context.Background(), dst, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if od.Manifest().DataVersion != "2.0" {
				t.Errorf("output data version %s", od.Manifest().DataVersion)
			}
			var scannable []string
			for _, c := range kept {
				if d.Schema().Unsupported[c] == nil {
					scannable = append(scannable, c)
				}
			}
			gs, gd := goScan(t, d, scannable), goScan(t, od, scannable)
			for _, c := range scannable {
				if !reflect.DeepEqual(gd[c], gs[c]) {
					t.Errorf("go scan of %s differs from the source", c)
				}
			}
			for i, fr := range od.Fragments() {
				s := d.Fragments()[i]
				if fr.ID != s.ID || fr.PhysicalRows != s.PhysicalRows || len(fr.Files) != 1 || fr.Files[0].Major != 2 || fr.Files[0].Minor != 0 {
					t.Errorf("fragment %d: %+v, source %+v", i, fr, s)
				}
			}
		})
	}
}
