package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// readerSources writes, with pyarrow 26.0.1 and pylance 14.0.3 of the
// pinned environment, 4,096 rows of random payloads (200 B to 4 KB, a few
// nulls) as src/train.parquet and src.lance, and the same rows with every
// payload reversed as other/train.parquet and other.lance.
const readerSources = `
import random, sys, pyarrow as pa, pyarrow.parquet as pq, lance, os
root = sys.argv[1]
rng = random.Random(6)
n = 4096
imgs = [None if i % 997 == 5 else rng.randbytes(rng.randint(200, 4000)) for i in range(n)]
for name, vals in (("src", imgs), ("other", [None if v is None else v[::-1] for v in imgs])):
    t = pa.table({"id": list(range(n)), "label": [i % 10 for i in range(n)], "img": pa.array(vals, pa.binary())})
    os.makedirs(os.path.join(root, name))
    pq.write_table(t, os.path.join(root, name, "train.parquet"), row_group_size=1000)
    lance.write_dataset(t, os.path.join(root, name + ".lance"), max_rows_per_file=1500)
`

// TestReadingRecipes runs the reading recipes of examples/readers with the
// pinned Python environment on a convert-parquet and a convert-lance output
// of 4,096 payloads in 1,024-member shards: pylance (+ PackSet), PackSet in
// DataLoader-style worker processes, DuckDB with a zipfile resolver. Each
// reads 1,000 random references and asserts that every payload equals the
// source's; against a source whose payloads differ, each fails.
func TestReadingRecipes(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	at := func(p string) string { return filepath.Join(root, p) }
	if out, err := exec.Command(py, "-c", readerSources, root).CombinedOutput(); err != nil {
		t.Fatalf("sources: %v\n%s", err, out)
	}
	if r := bp(t, "convert-parquet", at("src"), at("pq"), "--yes", "--quiet", "--column", "img", "--max-members", "1024"); r.code != exitOK {
		t.Fatalf("convert-parquet: %+v", r)
	}
	if r := bp(t, "convert-lance", at("src.lance"), at("lc"), "--yes", "--quiet", "--column", "img", "--max-members", "1024"); r.code != exitOK {
		t.Fatalf("convert-lance: %+v", r)
	}
	dir := filepath.Join(testtool.RepoRoot(t), "examples", "readers")
	timing := regexp.MustCompile(`: 1000 random references (resolved|read) in [0-9.]+ ms \([0-9.]+ ms per 1,000\), every payload equal to the source\n$`)
	for _, tc := range []struct {
		script string
		args   []string
		src    string // --check: the source, then one that differs
		other  string
	}{
		{"pylance_refs.py", []string{at("lc"), "img"}, at("src.lance"), at("other.lance")},
		{"packset_loader.py", []string{at("pq"), "train.parquet", "img"}, at("src/train.parquet"), at("other/train.parquet")},
		{"duckdb_refs.py", []string{at("pq"), "train.parquet", "img"}, at("src/train.parquet"), at("other/train.parquet")},
	} {
		t.Run(tc.script, func(t *testing.T) {
			args := append([]string{filepath.Join(dir, tc.script)}, tc.args...)
			out, err := exec.Command(py, append(args, "--check", tc.src)...).CombinedOutput()
			if err != nil || !timing.Match(out) {
				t.Fatalf("%s: %v\n%s", tc.script, err, out)
			}
			t.Logf("%s", strings.TrimSpace(string(out)))
			out, err = exec.Command(py, append(args, "--check", tc.other)...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "differ from the source") {
				t.Fatalf("%s against a different source: %v\n%s", tc.script, err, out)
			}
		})
	}
}
