package lance

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/progress"
)

// TestKeptColumnsExactLance converts 16 Lance tables that pylance 14.0.3
// wrote with random nested columns (fixtures/parquet/exacttypes.py
// lance-gen, seed 3: list, large list, fixed-size list, struct and map to
// depth 3 around Arrow's JSON and UUID types, fixed-shape tensors,
// decimals, timestamps and Image/Audio structs, with field metadata and
// nullability, at file versions 2.0 to 2.2, columns pylance itself does
// not write back unchanged drawn again), extracting the binary column
// payload: pylance reads every other column of the output with the
// source's Arrow field (schema.equals with check_metadata=True) and values.
func TestKeptColumnsExactLance(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	script := filepath.Join(testtool.RepoRoot(t), "fixtures", "parquet", "exacttypes.py")
	const seed, tables = "3", 16
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(py, append([]string{script}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("exacttypes.py %s (seed %s): %v\n%s", args[0], seed, err, stderr.String())
		}
		return out
	}
	run("lance-gen", src, "16", seed)
	dirs, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		name, ok := strings.CutSuffix(d.Name(), ".lance")
		if !ok {
			continue
		}
		j, err := NewJob(t.Context(), filepath.Join(src, d.Name()), filepath.Join(dst, name), Options{Columns: []string{"payload"}})
		if err == nil {
			_, err = j.Plan(t.Context(), nil, progress.Nop{})
		}
		if err == nil {
			_, err = j.Run(t.Context(), nil)
		}
		if err != nil {
			t.Fatalf("seed %s: %s: %v", seed, d.Name(), err)
		}
	}
	var rep struct {
		Tables     int      `json:"tables"`
		Mismatches []string `json:"mismatches"`
	}
	if err := json.Unmarshal(run("lance-check", src, dst), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Tables != tables || len(rep.Mismatches) > 0 {
		t.Fatalf("seed %s: %d tables compared (want %d), %d mismatches:\n%s", seed, rep.Tables, tables, len(rep.Mismatches), strings.Join(rep.Mismatches, "\n"))
	}
}
