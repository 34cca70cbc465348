package lancefmt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// refValues builds the replacement values of the tests: a reference string
// per physical row, null for deleted rows and every 13th row.
func refValues(d *Dataset, column string) func(ctx context.Context, frag uint64, rows uint64) ([]string, []bool, error) {
	return func(ctx context.Context, frag uint64, rows uint64) ([]string, []bool, error) {
		var del interface{ Contains(uint32) bool }
		for i := range d.Fragments() {
			fr := &d.Fragments()[i]
			if fr.ID == frag {
				bm, err := d.Deleted(fr)
				if err != nil {
					return nil, nil, err
				}
				if bm != nil {
					del = bm
				}
			}
		}
		vals := make([]string, rows)
		valid := make([]bool, rows)
		for r := range vals {
			if r%13 == 0 || del != nil && del.Contains(uint32(r)) {
				continue
			}
			vals[r] = refString(column, frag, uint64(r))
			valid[r] = true
		}
		return vals, valid, nil
	}
}

// refString is the reference string of one row.
func refString(column string, frag, row uint64) string {
	return fmt.Sprintf("zip://%s/%02d-%06d.jpg::media/pack-%04d.zip", column, frag, row, frag)
}

// expectedRefs lists the replaced column's values in scan order (deleted
// rows skipped), as JSON values.
func expectedRefs(t *testing.T, d *Dataset, column string) []any {
	t.Helper()
	var out []any
	for i := range d.Fragments() {
		fr := &d.Fragments()[i]
		bm, err := d.Deleted(fr)
		if err != nil {
			t.Fatal(err)
		}
		for r := uint64(0); r < fr.PhysicalRows; r++ {
			if bm != nil && bm.Contains(uint32(r)) {
				continue
			}
			if r%13 == 0 {
				out = append(out, nil)
			} else {
				out = append(out, refString(column, fr.ID, r))
			}
		}
	}
	return out
}

// goScan reads the named columns with this package's reader, as JSON
// values.
func goScan(t *testing.T, d *Dataset, columns []string) map[string][]any {
	t.Helper()
	sc, err := d.Scan(context.Background(), ScanOptions{Columns: columns})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	out := map[string][]any{}
	for sc.Next() {
		rec := sc.RecordBatch()
		for c, name := range columns {
			col := rec.Column(c)
			for i := 0; i < col.Len(); i++ {
				out[name] = append(out[name], JSONValue(col, i))
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRewrite rewrites each fixture with its payload columns replaced by
// references, then reads the result with Lance's own reader (schema,
// metadata, values, indices, vector search) and with ours (values, kept
// pages copied unchanged, fragments).
func TestRewrite(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	for _, tc := range []rewriteCase{
		{name: "rw_2_0", replace: []string{"img"}, vector: true},
		{name: "rw_2_1", replace: []string{"img", "label"}, dropped: []string{"label_idx"}, vector: true},
		{name: "rw_2_2", replace: []string{"lbin"}, vector: true},
		{name: "types_2_0", replace: []string{"bin"}},
		{name: "types_2_1", replace: []string{"bin", "lbin"}},
		{name: "types_2_2", replace: []string{"s"}},
		{name: "blob1_2_0", replace: []string{"blob"}},
		{name: "blob1_2_1", replace: []string{"blob"}},
		{name: "blob2_2_2", replace: []string{"blob"}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, dir) })
	}
}

// rewriteCase is one fixture of TestRewrite and the columns it replaces.
type rewriteCase struct {
	name    string
	replace []string
	// dropped lists the indices the plan must drop.
	dropped []string
	vector  bool
}

// planFixture opens the fixture name under dir and plans the rewrite of
// its columns replace; it returns the source's path too.
func planFixture(t *testing.T, dir, name string, replace []string) (string, *Dataset, *RewritePlan) {
	t.Helper()
	src := filepath.Join(dir, name+".lance")
	d, err := Open(context.Background(), src, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := d.PlanRewrite(replace)
	if err != nil {
		t.Fatal(err)
	}
	return src, d, plan
}

// refReplacements replaces each of columns with refValues.
func refReplacements(d *Dataset, columns []string) []Replacement {
	var reps []Replacement
	for _, c := range columns {
		reps = append(reps, Replacement{Column: c, Values: refValues(d, c)})
	}
	return reps
}

func (tc rewriteCase) run(t *testing.T, dir string) {
	ctx := context.Background()
	src, d, plan := planFixture(t, dir, tc.name, tc.replace)
	tc.checkDropped(t, plan)
	dst := filepath.Join(t.TempDir(), tc.name+".lance")
	start := time.Now()
	res, err := d.Rewrite(ctx, dst, RewriteOptions{Replace: refReplacements(d, tc.replace), SchemaMetadata: map[string]string{"bpconvert": `{"packs":1}`}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d fragments, %d data bytes (%d copied) in %v, %d blob files dropped", tc.name, len(res.DataFiles), res.Bytes, res.CopiedBytes, time.Since(start).Round(time.Millisecond), len(plan.DroppedBlobFiles))

	var kept []string
	for _, f := range d.Schema().Fields {
		if !slices.Contains(tc.replace, f.Name) {
			kept = append(kept, f.Name)
		}
	}
	opts := map[string]any{"columns": append(append([]string(nil), kept...), tc.replace...)}
	srcOpts := map[string]any{"columns": kept}
	if tc.vector {
		opts["vector"] = map[string]any{"column": "vec", "k": 5}
		srcOpts["vector"] = opts["vector"]
	}
	got := testtool.ReadWithLance(t, dst, opts)
	want := testtool.ReadWithLance(t, src, srcOpts)
	if got.NumRows != int(d.NumRows()) || got.Scan.NumRows != int(d.NumRows()) {
		t.Errorf("lance counts %d rows (scan %d), want %d", got.NumRows, got.Scan.NumRows, d.NumRows())
	}
	tc.checkFields(t, got, want)
	tc.checkLanceValues(t, d, kept, got, want)
	tc.checkIndices(t, plan, got, want)
	od, err := Open(ctx, dst, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tc.checkGoReader(t, d, od, kept)
	_ = os.RemoveAll(dst)
}

// checkDropped: the plan drops exactly the indices the case names, each
// with a reason and a hint.
func (tc rewriteCase) checkDropped(t *testing.T, plan *RewritePlan) {
	t.Helper()
	var dropped []string
	for _, ip := range plan.Indices {
		if !ip.Carried {
			dropped = append(dropped, ip.Name)
			if ip.Reason == "" || ip.Hint == "" {
				t.Errorf("index %s dropped without reason or hint", ip.Name)
			}
		}
	}
	if !slices.Equal(dropped, tc.dropped) {
		t.Errorf("dropped indices %v, want %v", dropped, tc.dropped)
	}
}

// checkFields: Lance sees the same columns in the same order, kept ones
// unchanged, replaced ones nullable utf8 without blob metadata, and the
// source's schema metadata with the bpconvert key added.
func (tc rewriteCase) checkFields(t *testing.T, got, want *testtool.LanceRead) {
	t.Helper()
	if len(got.Fields) != len(want.Fields) {
		t.Fatalf("lance sees %d fields, want %d", len(got.Fields), len(want.Fields))
	}
	for i, f := range got.Fields {
		w := want.Fields[i]
		switch {
		case f.Name != w.Name:
			t.Errorf("field %d is %q, want %q", i, f.Name, w.Name)
		case slices.Contains(tc.replace, f.Name):
			if f.Type != "Utf8" || !f.Nullable {
				t.Errorf("replaced %s: type %s nullable %v", f.Name, f.Type, f.Nullable)
			}
			for k := range f.Metadata {
				if k == "lance-encoding:blob" || strings.HasPrefix(k, "ARROW:extension") {
					t.Errorf("replaced %s keeps metadata %s", f.Name, k)
				}
			}
		case f.Type != w.Type || f.Nullable != w.Nullable || !reflect.DeepEqual(f.Metadata, w.Metadata):
			t.Errorf("field %s: %s %v %v, want %s %v %v", f.Name, f.Type, f.Nullable, f.Metadata, w.Type, w.Nullable, w.Metadata)
		}
	}
	if got.Metadata["bpconvert"] != `{"packs":1}` {
		t.Errorf("schema metadata %v lacks the bpconvert key", got.Metadata)
	}
	for k, v := range want.Metadata {
		if got.Metadata[k] != v {
			t.Errorf("schema metadata %s = %q, want %q", k, got.Metadata[k], v)
		}
	}
}

// checkLanceValues: Lance scans the kept columns as it scans the source,
// and the replaced ones as the given strings.
func (tc rewriteCase) checkLanceValues(t *testing.T, d *Dataset, kept []string, got, want *testtool.LanceRead) {
	t.Helper()
	for _, c := range kept {
		if !reflect.DeepEqual(got.Scan.Column(t, c), want.Scan.Column(t, c)) {
			t.Errorf("lance scan of kept column %s differs from the source", c)
		}
	}
	for _, c := range tc.replace {
		if g, w := got.Scan.Column(t, c), expectedRefs(t, d, c); !reflect.DeepEqual(g, w) {
			t.Errorf("lance scan of replaced column %s: %d values, want %d (first %v)", c, len(g), len(w), g[:min(3, len(g))])
		}
	}
}

// checkIndices: the carried indices are listed, index rows, and a vector
// search through them finds what it found before.
func (tc rewriteCase) checkIndices(t *testing.T, plan *RewritePlan, got, want *testtool.LanceRead) {
	t.Helper()
	var carried []string
	for _, ip := range plan.Indices {
		if ip.Carried {
			carried = append(carried, ip.Name)
		}
	}
	var listed []string
	for _, ix := range got.Indices {
		listed = append(listed, ix.Name)
		if ix.IndexedRows == nil || *ix.IndexedRows == 0 {
			t.Errorf("index %s indexes no row after the rewrite", ix.Name)
		}
	}
	slices.Sort(listed)
	slices.Sort(carried)
	if !slices.Equal(listed, carried) {
		t.Errorf("lance lists indices %v, want %v", listed, carried)
	}
	if tc.vector && (got.Knn == nil || !slices.Equal(got.Knn.Indexed, want.Knn.Indexed) || !slices.Equal(got.Knn.Flat, want.Knn.Flat)) {
		t.Errorf("vector search after the rewrite %+v, before %+v", got.Knn, want.Knn)
	}
}

// checkGoReader: our reader opens the output (od) at version 1 with the
// source's (d) rows, scans the same kept values and the references, finds
// the kept pages copied, not re-encoded, and the fragments unchanged.
func (tc rewriteCase) checkGoReader(t *testing.T, d, od *Dataset, kept []string) {
	t.Helper()
	if od.Version() != 1 || od.NumRows() != d.NumRows() {
		t.Errorf("go reader: version %d rows %d", od.Version(), od.NumRows())
	}
	var scannable []string
	for _, c := range kept {
		if d.Schema().Unsupported[c] == nil {
			scannable = append(scannable, c)
		}
	}
	gs := goScan(t, d, scannable)
	gd := goScan(t, od, append(append([]string(nil), scannable...), tc.replace...))
	for _, c := range scannable {
		if !reflect.DeepEqual(gd[c], gs[c]) {
			t.Errorf("go scan of kept column %s differs from the source", c)
		}
	}
	for _, c := range tc.replace {
		if g, w := gd[c], expectedRefs(t, d, c); !reflect.DeepEqual(g, w) {
			t.Errorf("go scan of replaced column %s differs (%d values, want %d)", c, len(g), len(w))
		}
		if f := od.Schema().Field(c); f == nil || f.IsBlob() || len(f.Children) != 0 || f.LogicalType != "string" {
			t.Errorf("go reader: replaced field %s is %+v", c, f)
		}
	}
	fr0, or0 := d.Fragments()[0], od.Fragments()[0]
	se, err := d.ColumnEncodings(&fr0, scannable)
	if err != nil {
		t.Fatal(err)
	}
	oe, err := od.ColumnEncodings(&or0, scannable)
	if err != nil {
		t.Fatal(err)
	}
	if len(se) != len(oe) {
		t.Fatalf("%d kept columns in the output, %d in the source", len(oe), len(se))
	}
	for i := range se {
		if se[i].Path != oe[i].Path || !reflect.DeepEqual(se[i].Pages, oe[i].Pages) || se[i].Major != oe[i].Major || se[i].Minor != oe[i].Minor {
			t.Errorf("column %s: pages %v (%d.%d), source %v (%d.%d)", oe[i].Path, oe[i].Pages, oe[i].Major, oe[i].Minor, se[i].Pages, se[i].Major, se[i].Minor)
		}
	}
	for i := range d.Fragments() {
		a, b := d.Fragments()[i], od.Fragments()[i]
		if a.ID != b.ID || a.PhysicalRows != b.PhysicalRows || !reflect.DeepEqual(a.Deletion, b.Deletion) || len(b.Files) != 1 {
			t.Errorf("fragment %d: %+v, source %+v", i, b, a)
		}
	}
}
