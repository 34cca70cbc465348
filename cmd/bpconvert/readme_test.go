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
// directory laid out like the repository after make demo (bin/ with both
// programs, scripts/ and fixtures/), with `set -e`, so every command of
// every block must succeed. The outputs the blocks point at are checked
// after.
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
	script.WriteString("set -e\n")
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
}
