package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestVerifyAgainstKeptColumns converts a dataset written by Hugging Face
// datasets 5.2.0 (fixtures/parquet/exacttypes.py: Image(), List(Image()),
// List(Json()), Json(), Array2D, ClassLabel, a list of strings), extracting
// the media columns: verify --against passes and says it compared the kept
// columns. Then pyarrow changes one kept value in the output (row 5 of the
// label column, the table's schema and metadata unchanged) and verify
// --against fails with exit 1, naming the column and the row.
func TestVerifyAgainstKeptColumns(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	gen := exec.Command(py, filepath.Join("..", "..", "fixtures", "parquet", "exacttypes.py"), "gen", root, "0", "1")
	gen.Env = hfEnv(t)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("exacttypes.py: %v\n%s", err, out)
	}
	src, dst := filepath.Join(root, "hf"), filepath.Join(root, "out")
	if r := bp(t, "convert-parquet", src, dst, "--yes", "--quiet", "--column", "image", "--column", "frames"); r.code != exitOK {
		t.Fatalf("convert-parquet: exit %d: %s", r.code, r.stderr)
	}
	r := bp(t, "verify", dst, "--against", src, "--json")
	if r.code != exitOK || !strings.Contains(r.stdout, "kept columns compared value by value: 120 values in 5 columns") {
		t.Fatalf("verify --against: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}

	edit := exec.Command(py, "-c", `
import sys, pyarrow as pa, pyarrow.parquet as pq
p = sys.argv[1]
t = pq.read_table(p)
i = t.schema.get_field_index("label")
v = t.column(i).to_pylist()
v[5] = (v[5] + 1) % 3
t = t.set_column(i, t.schema.field(i), pa.array(v, t.schema.field(i).type))
pq.write_table(t, p)
`, filepath.Join(dst, "data.parquet"))
	if out, err := edit.CombinedOutput(); err != nil {
		t.Fatalf("editing the output: %v\n%s", err, out)
	}
	r = bp(t, "verify", dst, "--against", src)
	if r.code != exitFailure || !strings.Contains(r.stdout+r.stderr, "label") || !strings.Contains(r.stdout+r.stderr, "row 5") {
		t.Fatalf("verify --against after a kept value changed: exit %d (want %d):\n%s%s", r.code, exitFailure, r.stdout, r.stderr)
	}
}
