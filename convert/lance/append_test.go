package lance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// dirFiles reads a committed output in a local directory.
type dirFiles string

func (d dirFiles) List(_ context.Context, rel string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(string(d), filepath.FromSlash(rel)))
	var names []string
	for _, e := range ents {
		names = append(names, rel+"/"+e.Name())
	}
	return names, err
}

func (d dirFiles) ReadFile(_ context.Context, rel string, _ int64) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), filepath.FromSlash(rel)))
}

// grow runs one step of fixtures/lance14/grow.py (pylance 14.0.3).
func grow(t *testing.T, py, dir, kind, step string) {
	t.Helper()
	out, err := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "fixtures", "lance14", "grow.py"), dir, kind, step).CombinedOutput()
	if err != nil {
		t.Fatalf("grow.py %s: %v\n%s", step, err, out)
	}
}

// planAppendTo plans convert-lance --append of src into the committed
// output dst.
func planAppendTo(t *testing.T, src, dst string, opts Options) (*Job, string, error) {
	t.Helper()
	j, err := NewJob(t.Context(), src, converttest.Dest(t, dst), opts)
	if err != nil {
		t.Fatal(err)
	}
	j.base = dirFiles(dst)
	if err := j.prepareAppend(t.Context()); err != nil {
		return j, "", err
	}
	p, err := j.Plan(t.Context(), nil, progress.Nop{})
	if err != nil {
		return j, "", err
	}
	var text bytes.Buffer
	if err := plan.RenderText(&text, p); err != nil {
		t.Fatal(err)
	}
	return j, text.String(), nil
}

// TestAppendPlan plans appends to a conversion of a dataset pylance 14.0.3
// wrote and then grew: the plan counts the new fragments and rows and the
// converted ones, evidence is taken of the new rows only, the new rows'
// keys follow the converted rows; a run with other columns is a usage
// error, and a source whose converted fragments were rewritten is refused
// naming the fragment.
func TestAppendPlan(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	src, dst := filepath.Join(root, "src.lance"), filepath.Join(root, "out")
	grow(t, py, src, "binary", "0")
	opts := Options{Columns: []string{"img"}}
	j, err := NewJob(t.Context(), src, converttest.Dest(t, dst), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Plan(t.Context(), nil, progress.Nop{}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Run(t.Context(), nil); err != nil {
		t.Fatal(err)
	}

	j, text, err := planAppendTo(t, src, dst, opts)
	if err != nil || !j.app.unchanged() || !strings.Contains(text, "nothing to append") {
		t.Fatalf("append of the converted version: %v, plan:\n%s", err, text)
	}

	grow(t, py, src, "binary", "1")
	j, text, err = planAppendTo(t, src, dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 new fragments", "11 new rows", "3 fragments already converted", "20 rows already converted", "11 values",
		"2 new fragments (17.9 KiB) to convert into new shards; 3 fragments (34.5 KiB) held already"} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan does not say %q:\n%s", want, text)
		}
	}
	if j.app.nextRow != 20 || j.sel[0].ev.ev.Values != 11 {
		t.Errorf("new rows keyed from %d, evidence of %d values; want 20 and 11", j.app.nextRow, j.sel[0].ev.ev.Values)
	}

	if _, _, err := planAppendTo(t, src, dst, Options{Columns: []string{"img"}, External: ExternalKeep}); !errors.As(err, new(*convert.UsageError)) {
		t.Errorf("append with other options: %v, want a usage error", err)
	}

	grow(t, py, src, "binary", "compact")
	_, _, err = planAppendTo(t, src, dst, opts)
	if !errors.Is(err, convert.ErrInvalidInput) || !strings.Contains(err.Error(), "fragment 0: removed") {
		t.Errorf("append after compaction: %v, want an invalid-input error naming fragment 0", err)
	}

	// The converted version cleaned up (its manifest removed, as
	// cleanup_old_versions does): what changed since cannot be told.
	if err := os.Remove(filepath.Join(src, "_versions", fmt.Sprintf("%020d.manifest", ^uint64(0)-1))); err != nil {
		t.Fatal(err)
	}
	_, _, err = planAppendTo(t, src, dst, opts)
	var ie *convert.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "version 1, which the committed output was converted from, is no longer in the dataset") || !strings.Contains(ie.Hint, "--restart") {
		t.Errorf("append after the converted version was cleaned up: %v, want an invalid-input error saying so", err)
	}
}
