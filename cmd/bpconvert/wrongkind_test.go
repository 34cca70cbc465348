package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// wrongKindSources writes, with the pinned Python environment, one small
// input of each kind: shards/ (Python's tarfile), hf/data/*.parquet
// (datasets, an Image() column), data.lance (pylance).
const wrongKindSources = `
import io, os, sys, tarfile, datasets, lance, pyarrow as pa
root = sys.argv[1]
os.makedirs(os.path.join(root, "shards"))
with tarfile.open(os.path.join(root, "shards", "train-000000.tar"), "w") as tf:
    for i in range(3):
        data = b"payload %d" % i
        ti = tarfile.TarInfo("%06d.bin" % i)
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
os.makedirs(os.path.join(root, "hf", "data"))
datasets.Dataset.from_dict({"blob": [b"a", b"b"], "label": [0, 1]}).to_parquet(os.path.join(root, "hf", "data", "train-00000-of-00001.parquet"))
lance.write_dataset(pa.table({"id": [0, 1], "image": pa.array([b"x", b"y"], pa.binary())}), os.path.join(root, "data.lance"))
`

// TestWrongInputKind gives each converter inputs of the other kinds, a
// source that does not exist, sources and destinations the wrong way round
// and a converted output as a source: each refusal keeps its exit code and
// its hint names what the input is and what to run instead.
func TestWrongInputKind(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	at := func(p string) string { return filepath.Join(root, p) }
	if out, err := exec.Command(py, "-c", wrongKindSources, root).CombinedOutput(); err != nil {
		t.Fatalf("sources: %v\n%s", err, out)
	}
	lerobot := filepath.Join(lerobotFixtureRoot(t), "v3.0")
	if r := bp(t, "convert-wds", "--yes", "--quiet", at("shards"), at("out")); r.code != exitOK {
		t.Fatalf("convert-wds: %+v", r)
	}
	for _, tc := range []struct {
		args []string
		code int
		hint string
	}{
		{[]string{"convert-wds", at("hf"), at("x")}, exitUsage, "looks like a Parquet or Hugging Face dataset: use bpconvert convert-parquet"},
		{[]string{"convert-wds", lerobot, at("x")}, exitUsage, "looks like a LeRobot dataset: use bpconvert convert-lerobot"},
		{[]string{"convert-parquet", at("shards"), at("x")}, exitInvalid, "looks like a WebDataset (tar shards): use bpconvert convert-wds"},
		{[]string{"convert-parquet", at("data.lance"), at("x")}, exitInvalid, "looks like a Lance table: use bpconvert convert-lance"},
		{[]string{"convert-lance", at("hf"), at("x")}, exitInvalid, "looks like a Parquet or Hugging Face dataset: use bpconvert convert-parquet"},
		{[]string{"convert-lance", at("shards"), at("x")}, exitInvalid, "use bpconvert convert-wds"},
		{[]string{"convert-lerobot", at("hf"), at("x")}, exitInvalid, "use bpconvert convert-parquet"},
		// A source that does not exist is named, whatever the destination.
		{[]string{"convert-wds", at("nosuch"), at("shards")}, exitInvalid, "holds a WebDataset (tar shards): did you swap SRC and DST?"},
		{[]string{"convert-parquet", at("nosuch"), at("x")}, exitInvalid, "the source comes first"},
		// Both exist, the wrong way round: the output as the source.
		{[]string{"convert-wds", at("out"), at("shards")}, exitUsage, "is a dataset bpconvert wrote and " + at("shards") + " holds a WebDataset (tar shards): did you swap SRC and DST?"},
		{[]string{"convert-parquet", at("out"), at("y")}, -1, "is a dataset bpconvert wrote: read it with bpconvert verify"},
	} {
		t.Run(strings.Join(tc.args[:1], " ")+" "+filepath.Base(tc.args[1]), func(t *testing.T) {
			r := bp(t, append(tc.args, "--yes")...)
			if tc.code >= 0 && r.code != tc.code || tc.code < 0 && r.code != exitUsage && r.code != exitInvalid {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "bpconvert: hint: ") || !strings.Contains(r.stderr, tc.hint) {
				t.Fatalf("stderr lacks the hint %q:\n%s", tc.hint, r.stderr)
			}
			if strings.Contains(tc.args[1], "nosuch") && !strings.Contains(r.stderr, "source "+tc.args[1]+": no such file or directory") {
				t.Fatalf("the missing source is not named:\n%s", r.stderr)
			}
		})
	}
}

// TestLerobotWithoutCompanion runs convert-lerobot from a bpconvert that has
// no bpconvert-lerobot beside it or on PATH: a missing install is a usage
// error (exit 2, which schedulers do not retry) with a hint on building it.
func TestLerobotWithoutCompanion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	alone := filepath.Join(dir, "bpconvert")
	b, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(alone, "convert-lerobot", "--yes", filepath.Join(dir, "src"), filepath.Join(dir, "dst"))
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitUsage {
		t.Fatalf("exit %v, want %d:\n%s", err, exitUsage, out)
	}
	if !strings.Contains(string(out), "bpconvert-lerobot is not installed beside bpconvert or on PATH") || !strings.Contains(string(out), "hint: build it with") {
		t.Fatalf("output:\n%s", out)
	}
}
