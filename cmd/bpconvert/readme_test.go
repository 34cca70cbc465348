package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestReadmeRuns runs the shell blocks of README.md's "Convert, verify,
// read" section as a newcomer would: top to bottom in one shell, from a
// directory laid out like the repository after make build (bin/ with both
// programs, scripts/ and fixtures/), with `set -e`, so every command of
// every block must succeed. The outputs the blocks point at are checked
// after. Then, in the directory those blocks worked in (not a dataset's
// root), it runs every block of docs/reading.md: shell blocks with bash,
// Python blocks with the test environment's Python, each of whose output
// must equal the text block that follows it in the doc.
func TestReadmeRuns(t *testing.T) {
	testtool.Require(t, "ffmpeg", "ffprobe", "node", "bash")
	py := testtool.Python(t)
	repo := testtool.RepoRoot(t)
	root := t.TempDir()
	for name, target := range map[string]string{
		"bin":      filepath.Dir(binPath),
		"scripts":  filepath.Join(repo, "scripts"),
		"fixtures": filepath.Join(repo, "fixtures"),
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	var script strings.Builder
	script.WriteString("set -eo pipefail\n")
	readme := filepath.Join(repo, "README.md")
	n := 0
	for _, b := range testtool.DocBlocks(t, readme, "## Convert, verify, read") {
		if b.Lang != "sh" {
			continue
		}
		n++
		fmt.Fprintf(&script, "echo '>>> README.md:%d'\n%s", b.Line, b.Text)
	}
	if n < 5 {
		t.Fatalf("README.md's Convert, verify, read section has %d shell blocks, want at least 5", n)
	}
	cmd := exec.Command("bash", "-x", "-c", script.String())
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BPCONVERT_PYTHON="+py)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("README.md's blocks: %v\n%s", err, out)
	}
	try := filepath.Join(root, "try")
	for _, p := range []string{"ds-wds/samples.parquet", "ds-wds/media/pack-0000.zip", "one.png",
		"ds-hf/media/pack-0000.zip", "ds-lerobot/media/pack-0000.zip", "ds-lance/table.lance"} {
		if _, err := os.Stat(filepath.Join(try, p)); err != nil {
			t.Errorf("after the README's blocks: %v", err)
		}
	}
	if png, err := os.ReadFile(filepath.Join(try, "one.png")); err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Errorf("one.png is not the PNG the README's cat line names (%v)", err)
	}
	for _, want := range []string{"Image(", "(24, 24)", "pattern 0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's python lines did not print %q:\n%s", want, out)
		}
	}
	env := append(os.Environ(), "PATH="+filepath.Dir(binPath)+":"+filepath.Dir(py)+":"+os.Getenv("PATH"))
	runDocRecipes(t, filepath.Join(repo, "docs", "reading.md"), try, py, env)
	// The DuckDB example program reads a Hugging Face struct's reference.
	prog := exec.Command(py, filepath.Join(repo, "examples", "readers", "duckdb_refs.py"), "ds-hf",
		"data/train-00000-of-00001.parquet", "image", "--n", "50", "--check", "hf/data/train-00000-of-00001.parquet")
	prog.Dir = try
	if out, err := prog.CombinedOutput(); err != nil || !strings.Contains(string(out), "every payload equal to the source") {
		t.Errorf("duckdb_refs.py on a Hugging Face output: %v\n%s", err, out)
	}
}

// runDocRecipes runs the fenced blocks of a doc in dir: a sh block with
// bash -e, a python block with py, whose standard output must equal the
// text block right after it (when there is one).
func runDocRecipes(t *testing.T, doc, dir, py string, env []string) {
	t.Helper()
	blocks := testtool.DocBlocks(t, doc, "")
	ran := 0
	for i, b := range blocks {
		var cmd *exec.Cmd
		switch b.Lang {
		case "sh":
			cmd = exec.Command("bash", "-e", "-o", "pipefail", "-c", b.Text)
		case "python":
			cmd = exec.Command(py, "-c", b.Text)
		default:
			continue
		}
		ran++
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("%s:%d: %v\n%s%s", doc, b.Line, err, stdout.String(), stderr.String())
			continue
		}
		if i+1 < len(blocks) && blocks[i+1].Lang == "text" {
			if got, want := strings.TrimSpace(stdout.String()), strings.TrimSpace(blocks[i+1].Text); got != want {
				t.Errorf("%s:%d prints\n%s\nthe doc says (line %d)\n%s", doc, b.Line, got, blocks[i+1].Line, want)
			}
		}
	}
	if ran == 0 {
		t.Errorf("%s: no block to run", doc)
	}
}
