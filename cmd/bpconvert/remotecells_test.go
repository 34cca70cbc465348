package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// remoteCellsPy writes a dataset whose Image() and List(Image()) values
// are partly remote, as dataset builders write them: bytes null and a path
// that is an hf://, https:// or s3:// URL (never fetched), beside values
// with bytes, a null image and a label. The schema and its huggingface
// metadata are datasets 5.2.0's own (Features.arrow_schema); pyarrow
// writes the table, since datasets' encoder would resolve the hf:// URL.
const remoteCellsPy = `
import os, sys
import pyarrow as pa, pyarrow.parquet as pq
from datasets import Features, Image, List, Value
out = sys.argv[1]
os.makedirs(out)
J = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"
img = [{"bytes": J + b"0", "path": None},
       {"bytes": None, "path": "hf://datasets/org/name@main/images/1.jpg"},
       {"bytes": None, "path": "https://example.com/images/2.jpg"},
       None,
       {"bytes": None, "path": "s3://bucket/images/4.jpg"}]
frames = [[], [{"bytes": J + b"1", "path": None}, {"bytes": None, "path": "https://example.com/f/1-1.jpg"}], [], [], []]
feats = Features({"image": Image(), "frames": List(Image()), "label": Value("int64")})
t = pa.Table.from_pydict({"image": img, "frames": frames, "label": list(range(5))}, schema=feats.arrow_schema)
pq.write_table(t, os.path.join(out, "data.parquet"))
`

// TestRemoteCellsKept converts a dataset with remote media values (see
// remoteCellsPy): by default the plan says how many the sample found, the
// conversion keeps them as they are (pyarrow reads the source's path in
// the output's struct, bytes null), packs the others, and counts the kept
// ones in the summary (remote_cells 4); verify --against passes and reports
// them as kept. With --strict-remote the conversion stops at the first one
// (exit 3) naming the table, row, column and URL.
func TestRemoteCellsKept(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	src := filepath.Join(root, "src")
	gen := exec.Command(py, "-c", remoteCellsPy, src)
	gen.Env = hfEnv(t)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("writing the dataset: %v\n%s", err, out)
	}
	cols := []string{"--column", "image", "--column", "frames"}

	r := bp(t, append([]string{"convert-parquet", src, filepath.Join(root, "plan"), "--dry-run"}, cols...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "Remote cells: 4 values in the sample") {
		t.Fatalf("plan: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}

	dst := filepath.Join(root, "out")
	r = bp(t, append([]string{"convert-parquet", src, dst, "--yes", "--json"}, cols...)...)
	if r.code != exitOK {
		t.Fatalf("convert-parquet: exit %d: %s", r.code, r.stderr)
	}
	doc := lastJSON(t, r)
	counts, _ := doc["counts"].(map[string]any)
	if counts["remote_cells"] != float64(4) || doc["blobs"] != float64(2) {
		t.Fatalf("summary: %v", doc)
	}
	read := exec.Command(py, "-c", `
import sys, json, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
print(json.dumps({"image": [None if v is None else [v["bytes"] is None, v["path"]] for v in t.column("image").to_pylist()],
                  "frames": [[e["path"] for e in v] for v in t.column("frames").to_pylist()]}))
`, filepath.Join(dst, "data.parquet"))
	out, err := read.Output()
	if err != nil {
		t.Fatalf("reading the output: %v", err)
	}
	var got struct {
		Image  [][2]any   `json:"image"`
		Frames [][]string `json:"frames"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{1: "hf://datasets/org/name@main/images/1.jpg", 2: "https://example.com/images/2.jpg", 4: "s3://bucket/images/4.jpg"}
	for i, p := range want {
		if got.Image[i][0] != true || got.Image[i][1] != p {
			t.Errorf("row %d: image %v, want bytes null and path %s", i, got.Image[i], p)
		}
	}
	if p, _ := got.Image[0][1].(string); !strings.HasPrefix(p, "zip://") || got.Image[3][1] != nil {
		t.Errorf("rows 0 and 3: %v %v", got.Image[0], got.Image[3])
	}
	if len(got.Frames[1]) != 2 || !strings.HasPrefix(got.Frames[1][0], "zip://") || got.Frames[1][1] != "https://example.com/f/1-1.jpg" {
		t.Errorf("frames of row 1: %v", got.Frames[1])
	}

	r = bp(t, "verify", dst, "--against", src)
	if r.code != exitOK || !strings.Contains(r.stdout, "(4 kept as their URI, compared with the source's)") {
		t.Fatalf("verify --against: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = bp(t, append([]string{"convert-parquet", src, filepath.Join(root, "strict"), "--yes", "--strict-remote"}, cols...)...)
	if r.code != exitInvalid || !strings.Contains(r.stderr, "hf://datasets/org/name@main/images/1.jpg") || !strings.Contains(r.stderr, "row 1") {
		t.Fatalf("--strict-remote: exit %d (want %d): %s", r.code, exitInvalid, r.stderr)
	}
}
