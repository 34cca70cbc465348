package main

import (
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
