package testtool

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyFence keeps heavy dependencies out of the core packages:
// they must build and test on a machine without libav, arrow or a terminal
// UI (STYLE.md, "Shape of the code").
func TestDependencyFence(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	forbidden := []string{
		"github.com/apache/arrow-go/",
		"github.com/charmbracelet/",
		"github.com/schollz/progressbar/",
		"github.com/asticode/",
	}
	root := RepoRoot(t)
	for _, pkg := range []string{"packcore", "plan", "sniff", "stage", "progress"} {
		cmd := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", "./"+pkg)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			path, cgoFiles, _ := strings.Cut(line, " ")
			for _, f := range forbidden {
				if strings.HasPrefix(path, f) {
					t.Errorf("%s depends on %s", pkg, path)
				}
			}
			first, _, _ := strings.Cut(path, "/")
			if cgoFiles != "0" && strings.Contains(first, ".") {
				t.Errorf("%s depends on %s, which uses cgo", pkg, path)
			}
		}
	}
}
