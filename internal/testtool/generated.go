package testtool

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Generated is a fixture directory that a Node script of one of the pinned
// projects under fixtures/ writes once per test process, the first time a
// test asks for it. Declare one as a package variable and call Cleanup from
// TestMain.
type Generated struct {
	// Project is the fixture project's directory under fixtures/ ("parquet").
	Project string
	// Script is the generator inside it; it is run as: node SCRIPT OUTDIR
	// ARGS...
	Script string
	// Args are further arguments of the generator.
	Args []string
	// Need lists further programs the generator runs (ffmpeg, ...).
	Need []string

	once sync.Once
	dir  string
	err  error
}

// Dir returns the generated directory. Without node, the project's
// node_modules or a needed program the test is skipped, or fails under
// BPCONVERT_REQUIRE_TOOLS=1.
func (g *Generated) Dir(t testing.TB) string {
	t.Helper()
	Require(t, append([]string{"node"}, g.Need...)...)
	proj := filepath.Join(RepoRoot(t), "fixtures", g.Project)
	if _, err := os.Stat(filepath.Join(proj, "node_modules")); err != nil {
		Missing(t, fmt.Sprintf("fixtures/%s/node_modules is missing: run npm ci --prefix fixtures/%s", g.Project, g.Project))
	}
	g.once.Do(func() {
		// Read the generator's inputs from Go, so that go test's result
		// cache notices when they change.
		for _, name := range []string{g.Script, "package.json", "package-lock.json"} {
			if _, err := os.ReadFile(filepath.Join(proj, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				g.err = err
				return
			}
		}
		dir, err := os.MkdirTemp("", "bpconvert-fixtures-"+g.Project+"-")
		if err != nil {
			g.err = err
			return
		}
		g.dir = dir
		cmd := exec.Command("node", append([]string{filepath.Join(proj, g.Script), dir}, g.Args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			g.err = fmt.Errorf("node %s: %v: %s", g.Script, err, stderr.String())
		}
	})
	if g.err != nil {
		t.Fatal(g.err)
	}
	return g.dir
}

// Cleanup removes the generated directory, if any.
func (g *Generated) Cleanup() {
	if g.dir != "" {
		os.RemoveAll(g.dir)
	}
}
