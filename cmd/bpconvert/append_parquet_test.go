package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// hfTablePy writes one table file of a Hugging Face dataset with datasets
// itself: ROWS rows from FIRST of an id and an Image() column holding
// random bytes, saved with to_parquet.
const hfTablePy = `
import os, sys
import datasets
out, first, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ds = datasets.Dataset.from_dict(
    {"id": list(range(first, first + rows)),
     "image": [{"bytes": os.urandom(800 + i), "path": "img%05d.png" % i} for i in range(first, first + rows)]},
    features=datasets.Features({"id": datasets.Value("int64"), "image": datasets.Image()}))
os.makedirs(os.path.dirname(out), exist_ok=True)
ds.to_parquet(out)
`

// TestAppendParquet appends new table files of a Hugging Face dataset
// (written by datasets 5.2.0) to its conversion: only the new tables are
// read and written, the first commit's shards stay byte for byte, verify
// --against the grown source passes, and datasets.load_dataset reads every
// row's payload through the references (examples/hf-datasets/read_hf.py).
// A table the output holds that changed is refused (exit 3), and a
// save_to_disk dataset cannot be appended to (exit 2).
func TestAppendParquet(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "out")
	table := func(name string, first, rows int) {
		t.Helper()
		cmd := exec.Command(py, "-c", hfTablePy, filepath.Join(src, "data", name), itoa(int64(first)), itoa(int64(rows)))
		cmd.Env = hfEnv(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("datasets: %v\n%s", err, out)
		}
	}
	args := []string{"convert-parquet", "--append", "--yes", "--json", "--column", "image", "--max-members", "16", "--ref-base", dst, src, dst}
	table("train-0.parquet", 0, 30)
	appendRun(t, nil, args, "ok")
	first := shardSums(t, filepath.Join(dst, "media"))
	table("train-1.parquet", 30, 20)
	sum := appendRun(t, nil, args, "ok")
	a, _ := sum["appended"].(map[string]any)
	if a == nil || a["sources"].(float64) != 1 || a["skipped"].(float64) != 1 || a["blobs"].(float64) != 20 || sum["blobs"].(float64) != 50 {
		t.Fatalf("append: %v", sum)
	}
	sameFiles(t, "the committed shards", first, shardSums(t, filepath.Join(dst, "media")))
	verifyAgainstAll(t, nil, [2]string{dst, src})
	appendRun(t, nil, args, "already_done")

	cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "examples", "hf-datasets", "read_hf.py"), dst, "--n", "50")
	cmd.Dir, cmd.Env = t.TempDir(), hfEnv(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("read_hf.py: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got struct{ Rows, Refs, Bytes int }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil || got.Rows != 50 || got.Refs != 50 {
		t.Fatalf("datasets read %s (%v), want every one of 50 rows", out, err)
	}

	// A committed table rewritten: refused, named.
	table("train-0.parquet", 0, 31)
	r := bp(t, args...)
	if r.code != exitInvalid || !strings.Contains(r.stderr, "train-0.parquet: changed since") {
		t.Fatalf("a changed table: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.Remove(filepath.Join(src, "data", "train-0.parquet")); err != nil {
		t.Fatal(err)
	}
	r = bp(t, args...)
	if r.code != exitInvalid || !strings.Contains(r.stderr, "--allow-removed") {
		t.Fatalf("a table gone: exit %d\n%s", r.code, r.stderr)
	}
	table("train-2.parquet", 50, 5)
	if sum := appendRun(t, nil, append(args, "--allow-removed"), "ok"); sum["blobs"].(float64) != 55 {
		t.Fatalf("--allow-removed keeps the gone table's rows: %v", sum)
	}

	disk, ddst := filepath.Join(root, "disk"), filepath.Join(root, "disk-out")
	if out, err := exec.Command("cp", "-r", filepath.Join(hfDiskFixtures.Dir(t), "dict"), disk).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	appendRun(t, nil, []string{"convert-parquet", "--append", "--yes", "--json", disk, ddst}, "ok")
	writeTree(t, disk, map[string]string{"notes.txt": "grown"})
	r = bp(t, "convert-parquet", "--append", "--yes", disk, ddst)
	if r.code != exitUsage || !strings.Contains(r.stderr, "save_to_disk") {
		t.Fatalf("an append to a save_to_disk conversion: exit %d\n%s", r.code, r.stderr)
	}
}
