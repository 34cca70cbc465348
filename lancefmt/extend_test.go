package lancefmt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// growDataset runs fixtures/lance14/grow.py (pylance 14.0.3) for one step
// of the dataset at dir.
func growDataset(t *testing.T, py, dir, kind, step string) {
	t.Helper()
	script := filepath.Join(testtool.RepoRoot(t), "fixtures", "lance14", "grow.py")
	out, err := exec.Command(py, script, dir, kind, step).CombinedOutput()
	if err != nil {
		t.Fatalf("grow.py %s: %v\n%s", step, err, out)
	}
}

// latestManifest returns the latest manifest file of the table at dir.
func latestManifest(t *testing.T, dir string) []byte {
	t.Helper()
	vs, names, err := listVersions(context.Background(), LocalStorage{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "_versions", names[vs[len(vs)-1]]))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// moveIn moves every file below stage to the same path below dir, as a
// commit does; none may exist there yet.
func moveIn(t *testing.T, stage, dir string) []string {
	t.Helper()
	var moved []string
	err := filepath.WalkDir(stage, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(stage, p)
		target := filepath.Join(dir, rel)
		if _, err := os.Stat(target); err == nil {
			return fmt.Errorf("%s would replace a committed file", rel)
		}
		moved = append(moved, filepath.ToSlash(rel))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.Rename(p, target)
	})
	if err != nil {
		t.Fatal(err)
	}
	return moved
}

// markValues gives every physical row of a fragment the value
// "ref:FRAGMENT:ROW" and records which fragments were asked for.
func markValues(asked *[]uint64) func(context.Context, uint64, uint64) ([]string, []bool, error) {
	return func(_ context.Context, frag, n uint64) ([]string, []bool, error) {
		*asked = append(*asked, frag)
		vals, valid := make([]string, n), make([]bool, n)
		for i := range vals {
			vals[i], valid[i] = fmt.Sprintf("ref:%d:%d", frag, i), true
		}
		return vals, valid, nil
	}
}

// checkWithPylance reads the latest version of the table with pylance and
// compares it with the latest version of src: the same fragments (ids,
// physical rows, deletions), the same ids and names row for row, and the
// replaced column holding "ref:FRAGMENT:ROW" for every row.
func checkWithPylance(t *testing.T, py, src, table, column string, wantVersion uint64) {
	t.Helper()
	script := `
import json, sys, lance
src, out, col = lance.dataset(sys.argv[1]), lance.dataset(sys.argv[2]), sys.argv[3]
p = []
frags = lambda ds: [(f.fragment_id, f.physical_rows, f.count_rows()) for f in ds.get_fragments()]
if frags(src) != frags(out):
    p.append("fragments %s, source %s" % (frags(out), frags(src)))
a = src.to_table(columns=["id", "name"], with_row_id=True).to_pylist()
b = out.to_table(columns=["id", "name", col], with_row_address=True, with_row_id=True).to_pylist()
if len(a) != len(b):
    p.append("%d rows, source %d" % (len(b), len(a)))
for x, y in zip(a, b):
    want = "ref:%d:%d" % (y["_rowaddr"] >> 32, y["_rowaddr"] & 0xffffffff)
    if x["id"] != y["id"] or x["name"] != y["name"] or y[col] != want or x["_rowid"] != y["_rowid"]:
        p.append("row %s: %s, want %s" % (x, y, want))
        break
print(json.dumps({"version": out.version, "problems": p}))
`
	out, err := exec.Command(py, "-c", script, src, table, column).CombinedOutput()
	if err != nil {
		t.Fatalf("pylance: %v\n%s", err, out)
	}
	var got struct {
		Version  uint64   `json:"version"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("pylance: %v\n%s", err, out)
	}
	if got.Version != wantVersion || len(got.Problems) > 0 {
		t.Fatalf("pylance reads version %d (want %d) of the table: %v", got.Version, wantVersion, got.Problems)
	}
}

// TestExtendFollowsGrowingSource converts a dataset pylance 14.0.3 wrote,
// lets pylance append to it, delete rows, update a row and append again,
// and after each step writes the table's next version with Extend: only
// the new fragments' values are asked for, no committed file is replaced,
// and pylance reads the table's latest version as the source's, row for
// row (the same _rowid too, where the source has stable row ids).
func TestExtendFollowsGrowingSource(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	for _, kind := range []string{"binary", "blob2", "binary+stable"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			testExtend(t, py, kind)
		})
	}
}

func testExtend(t *testing.T, py, kind string) {
	ctx := context.Background()
	root := t.TempDir()
	src, table := filepath.Join(root, "src.lance"), filepath.Join(root, "table.lance")
	column := map[string]string{"binary": "img", "blob2": "blob", "binary+stable": "img"}[kind]
	growDataset(t, py, src, kind, "0")
	d, err := Open(ctx, src, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var asked []uint64
	reps := []Replacement{{Column: column, Values: markValues(&asked)}}
	if _, err := d.Rewrite(ctx, table, RewriteOptions{Replace: reps}); err != nil {
		t.Fatal(err)
	}
	checkWithPylance(t, py, src, table, column, 1)
	steps := []struct {
		step                         string
		newFrags, deletions, removed int
		allowRemoved                 bool
		wantErr                      string
	}{
		{step: "1", newFrags: 2},
		{step: "delete", deletions: 4},
		{step: "update", newFrags: 1, deletions: 1},
		{step: "2", newFrags: 2},
		{step: "compact", wantErr: "fragment 0: removed"},
		{step: "", newFrags: 1, removed: 8, allowRemoved: true},
	}
	for i, st := range steps {
		if st.step != "" {
			growDataset(t, py, src, kind, st.step)
		}
		before := testtool.FileSums(t, table)
		from := d
		if d, err = Open(ctx, src, OpenOptions{}); err != nil {
			t.Fatal(err)
		}
		p, err := d.PlanExtend(from, latestManifest(t, table), st.allowRemoved)
		if st.wantErr != "" {
			var fe *FragmentChangedError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), st.wantErr) {
				t.Fatalf("step %s: %v, want a FragmentChangedError saying %q", st.step, err, st.wantErr)
			}
			d = from // the next step plans from the same version
			continue
		}
		if err != nil {
			t.Fatalf("step %s: %v", st.step, err)
		}
		if len(p.New) != st.newFrags || len(p.Deletions) != st.deletions || len(p.Removed) != st.removed {
			t.Fatalf("step %s: %d new, %d with new deletions, %d removed; want %d, %d, %d", st.step, len(p.New), len(p.Deletions), len(p.Removed), st.newFrags, st.deletions, st.removed)
		}
		asked = nil
		stage := filepath.Join(root, fmt.Sprintf("stage%d", i))
		res, err := d.Rewrite(ctx, stage, RewriteOptions{Replace: reps, Extend: p})
		if err != nil {
			t.Fatalf("step %s: %v", st.step, err)
		}
		if !slices.Equal(asked, p.NewIDs()) {
			t.Fatalf("step %s: values asked for fragments %v, want the new ones %v", st.step, asked, p.NewIDs())
		}
		moved := moveIn(t, stage, table)
		if len(moved) != len(res.DataFiles)+len(p.Deletions)+2 {
			t.Fatalf("step %s: the extension wrote %v", st.step, moved)
		}
		after := testtool.FileSums(t, table)
		for rel, h := range before {
			if after[rel] != h {
				t.Fatalf("step %s: committed file %s changed", st.step, rel)
			}
		}
		checkWithPylance(t, py, src, table, column, p.TableVersion+1)
	}
}
