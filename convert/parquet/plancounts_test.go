package parquet

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/plan"
)

// writeDottedPy writes, with pyarrow, a table whose struct obs holds a
// field named "cam.front" beside a struct cam with a field front: two
// payload fields whose names joined by dots alone would be the same.
const writeDottedPy = `
import sys, pyarrow as pa, pyarrow.parquet as pq
t = pa.table({"obs": pa.array([{"cam.front": b"dotted-%d" % i, "cam": {"front": b"nested-%d" % i}} for i in range(5)],
    pa.struct([("cam.front", pa.binary()), ("cam", pa.struct([("front", pa.binary())]))]))})
pq.write_table(t, sys.argv[1])
`

// TestDottedFieldNames checks that a field whose name holds a dot is
// offered under its escaped name (obs.cam\.front), that the name selects
// it and not the nested field obs.cam.front, and that both convert.
func TestDottedFieldNames(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	src := t.TempDir()
	if out, err := exec.Command(py, "-c", writeDottedPy, filepath.Join(src, "t.parquet")).CombinedOutput(); err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	ctx := context.Background()
	ins, err := Inspect(ctx, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range ins.Candidates {
		names = append(names, c.Name())
	}
	if want := []string{`obs.cam\.front`, "obs.cam.front"}; !slices.Equal(names, want) {
		t.Fatalf("candidates %q, want %q", names, want)
	}
	for _, name := range names {
		p, err := ParseFieldPath(name)
		if err != nil {
			t.Fatal(err)
		}
		sel, err := ins.Select(nil, [][]string{p})
		if err != nil {
			t.Fatalf("select %s: %v", name, err)
		}
		if len(sel.Paths) != 1 || FieldName(sel.Paths[0]) != name {
			t.Fatalf("select %s: %v", name, sel.Paths)
		}
		pl := ins.Plan(sel, "DST")
		for _, e := range pl.Entries {
			if e.Selectable && (e.Name == name) != (e.Action == "extract") {
				t.Errorf("select %s: entry %s is %s", name, e.Name, e.Action)
			}
		}
		dst := filepath.Join(t.TempDir(), "out")
		res, err := Convert(ctx, ins, sel, converttest.Dest(t, dst), Options{}, nil)
		if err != nil {
			t.Fatalf("convert %s: %v", name, err)
		}
		if res.Pack.Members != 5 {
			t.Errorf("convert %s: %d members, want 5", name, res.Pack.Members)
		}
	}
	for _, bad := range []string{`a\b`, `a\`} {
		if _, err := ParseFieldPath(bad); err == nil {
			t.Errorf("ParseFieldPath(%q) accepted", bad)
		}
	}
	if p, _ := ParseFieldPath(`a\\.b`); !slices.Equal(p, []string{`a\`, "b"}) {
		t.Errorf(`ParseFieldPath("a\\\\.b") = %q`, p)
	}
}

// writeCountsPy writes, with pyarrow, 360 rows in row groups of 100: a
// binary column with 12 nulls and an Image-like struct<bytes, path> whose
// bytes are all null and whose path names a file beside the table (9
// rows null).
const writeCountsPy = `
import os, sys, pyarrow as pa, pyarrow.parquet as pq
d = sys.argv[1]
os.makedirs(os.path.join(d, "imgs"))
for i in range(360):
    open(os.path.join(d, "imgs", "%d.png" % i), "wb").write(b"\x89PNG\r\n\x1a\n" + os.urandom(20))
blob = [None if i % 30 == 7 else os.urandom(10) for i in range(360)]
img = [None if i % 40 == 3 else {"bytes": None, "path": "imgs/%d.png" % i} for i in range(360)]
t = pa.table({"blob": pa.array(blob, pa.binary()), "image": pa.array(img, pa.struct([("bytes", pa.binary()), ("path", pa.string())]))})
pq.write_table(t, os.path.join(d, "t.parquet"), row_group_size=100, write_page_index=True)
`

// TestPlanCounts checks that a plan's null counts are the whole table's
// where the column statistics give them (12 and 9 of 360, where a sample
// of 32 sees fewer), and that media structs holding only a path count as
// values (the files they name are packed), not as nulls.
func TestPlanCounts(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	src := t.TempDir()
	if out, err := exec.Command(py, "-c", writeCountsPy, src).CombinedOutput(); err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	ins, err := Inspect(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"blob": 12, "image": 9}
	for _, c := range ins.Candidates {
		if c.Evidence.Nulls == nil || *c.Evidence.Nulls != want[c.Name()] {
			t.Errorf("%s: nulls %v, want %d", c.Name(), c.Evidence.Nulls, want[c.Name()])
		}
		text := plan.EvidenceText(c.Evidence)
		if !strings.HasPrefix(text, fmt.Sprintf("360 values, %d null, 32 sampled, ", want[c.Name()])) || strings.Contains(text, "all") {
			t.Errorf("%s: evidence %q", c.Name(), text)
		}
		if c.Name() == "image" && (c.Evidence.NonNull == 0 || !slices.Contains(c.Evidence.Kinds, "PNG")) {
			t.Errorf("image: path-only values not counted as PNG files: %+v", c.Evidence)
		}
	}

	// The source has a page index (write_page_index=True): so has the
	// output, as pyarrow reads it.
	sel, err := ins.Select([]string{"blob", "image"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := Convert(context.Background(), ins, sel, converttest.Dest(t, dst), Options{}, nil); err != nil {
		t.Fatal(err)
	}
	check := "import sys, pyarrow.parquet as pq\n" +
		"for f in sys.argv[1:]:\n" +
		"    m = pq.ParquetFile(f).metadata\n" +
		"    print(all(m.row_group(r).column(c).has_offset_index and m.row_group(r).column(c).has_column_index for r in range(m.num_row_groups) for c in range(m.num_columns)))\n"
	out, err := exec.Command(py, "-c", check, filepath.Join(src, "t.parquet"), filepath.Join(dst, "t.parquet")).CombinedOutput()
	if err != nil || string(out) != "True\nTrue\n" {
		t.Fatalf("page indexes (source, output): %s %v", out, err)
	}
}
