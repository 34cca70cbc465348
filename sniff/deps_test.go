package sniff

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyFence keeps the heavy dependencies out: sniff must build and test on a
// machine without libav, arrow or a terminal UI (see STYLE.md, "Shape of the code").
func TestDependencyFence(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/apache/arrow-go/",
		"github.com/charmbracelet/",
		"github.com/schollz/progressbar/",
		"github.com/asticode/",
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, cgoFiles, _ := strings.Cut(line, " ")
		for _, f := range forbidden {
			if strings.HasPrefix(path, f) {
				t.Errorf("sniff depends on %s", path)
			}
		}
		if cgoFiles != "0" && !isStd(path) {
			t.Errorf("sniff depends on %s, which uses cgo", path)
		}
	}
}

// isStd reports whether path is a standard library package (its first element has no dot).
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
