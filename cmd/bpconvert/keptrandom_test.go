package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestVerifyAgainstRandomKept converts 8 tables of random nested types
// that pyarrow wrote (fixtures/parquet/exacttypes.py, seed 2: JSON fields
// with field metadata, nullable fixed-size lists, decimals and UUIDs in
// lists, among others), extracting the media column, and verify --against
// each output with its source: exit 0, the kept columns compared value by
// value.
func TestVerifyAgainstRandomKept(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	const seed, tables = "2", 8
	gen := exec.Command(py, filepath.Join("..", "..", "fixtures", "parquet", "exacttypes.py"), "gen", root, fmt.Sprint(tables), seed)
	gen.Env = hfEnv(t)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("exacttypes.py: %v\n%s", err, out)
	}
	for i := range tables {
		src := filepath.Join(root, fmt.Sprintf("t%02d", i))
		dst := src + ".out"
		if r := bp(t, "convert-parquet", src, dst, "--yes", "--quiet", "--column", "image"); r.code != exitOK {
			t.Fatalf("seed %s: %s: convert-parquet: exit %d: %s", seed, src, r.code, r.stderr)
		}
		r := bp(t, "verify", dst, "--against", src)
		if r.code != exitOK || !strings.Contains(r.stdout, "kept columns compared value by value") {
			t.Fatalf("seed %s: %s: verify --against: exit %d: %s%s", seed, src, r.code, r.stdout, r.stderr)
		}
	}
}

// TestKeptColumnsExactParts converts 10 random tables and a dataset that
// datasets 5.2.0 wrote (fixtures/parquet/exacttypes.py, seed 4) in 3
// parts, each table written by one part and joined by finalize: pyarrow
// and datasets find every kept column's Arrow field, values, parquet types
// and page index as in the source (exacttypes.py check).
func TestKeptColumnsExactParts(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "out")
	script := filepath.Join("..", "..", "fixtures", "parquet", "exacttypes.py")
	gen := exec.Command(py, script, "gen", src, "10", "4")
	gen.Env = hfEnv(t)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("exacttypes.py: %v\n%s", err, out)
	}
	for i := 1; i <= 3; i++ {
		if r := bp(t, "convert-parquet", src, dst, "--yes", "--quiet", "--column", "image", "--part", fmt.Sprintf("%d/3", i)); r.code != exitOK {
			t.Fatalf("part %d/3: exit %d: %s", i, r.code, r.stderr)
		}
	}
	if r := bp(t, "finalize", dst); r.code != exitOK {
		t.Fatalf("finalize: exit %d: %s", r.code, r.stderr)
	}
	check := exec.Command(py, script, "check", src, dst)
	check.Env = hfEnv(t)
	out, err := check.Output()
	if err != nil {
		t.Fatalf("exacttypes.py check: %v", err)
	}
	var rep struct {
		Tables     int      `json:"tables"`
		Mismatches []string `json:"mismatches"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Tables != 11 || len(rep.Mismatches) > 0 {
		t.Fatalf("seed 4: %d tables compared (want 11), %d mismatches:\n%s", rep.Tables, len(rep.Mismatches), strings.Join(rep.Mismatches, "\n"))
	}
}
