package parquet

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestKeptColumnsExact converts 30 tables of random nested types written
// by pyarrow, and a dataset written by Hugging Face datasets 5.2.0
// (fixtures/parquet/exacttypes.py, seeded), extracting the media columns,
// and has pyarrow and datasets compare each output with its source: every
// other column keeps its Arrow field (type, extension types at any depth,
// list element names, nullability, field metadata:
// schema.equals(check_metadata=True)) and its values, every parquet leaf
// its physical, logical and converted type and levels, every column chunk
// its column index and offset index (the null bytes of a kept
// List(Image()) included), and datasets.load_dataset finds the source's
// features (List(Json()), Json(), Array2D, ClassLabel, Image()) and rows.
func TestKeptColumnsExact(t *testing.T) {
	py := testtool.Python(t)
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	env := append(os.Environ(), "HF_HOME="+filepath.Join(root, "hf-home"), "HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1")
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(py, append([]string{filepath.Join(fixtureDir, "exacttypes.py")}, args...)...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("exacttypes.py %s: %v\n%s", args[0], err, stderr.String())
		}
		return out
	}
	run("gen", src, "30", "1")
	dirs, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		cols := []string{"image"}
		if d.Name() == "hf" {
			cols = append(cols, "frames")
		}
		ctx := context.Background()
		ins, err := Inspect(ctx, filepath.Join(src, d.Name()), Options{})
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		sel, err := ins.Select(cols, nil)
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		if _, err := Convert(ctx, ins, sel, converttest.Dest(t, filepath.Join(dst, d.Name())), Options{}, nil); err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
	}
	var rep struct {
		Tables     int      `json:"tables"`
		Mismatches []string `json:"mismatches"`
	}
	if err := json.Unmarshal(run("check", src, dst), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Tables != 31 || len(rep.Mismatches) > 0 {
		t.Fatalf("%d tables compared (want 31), %d mismatches:\n%s", rep.Tables, len(rep.Mismatches), strings.Join(rep.Mismatches, "\n"))
	}
}
