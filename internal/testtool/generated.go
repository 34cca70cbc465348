package testtool

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bpconvert/bpconvert/internal/filelock"
)

// Generated is a fixture directory that a script of one of the pinned
// projects under fixtures/ (a Node script, or a Python one run by the
// test environment's interpreter) writes the first time a test asks for
// it: once per run of the tests when FixtureCacheEnv names the run's cache
// (every test process of the run then reads the same directory, which
// tests must not change), once per test process otherwise or when Local
// is set. Declare one as a package variable and call Cleanup from
// TestMain.
type Generated struct {
	// Project is the fixture project's directory under fixtures/ ("parquet").
	Project string
	// Script is the generator inside it; it is run as: node SCRIPT OUTDIR
	// ARGS... (PYTHON SCRIPT OUTDIR ARGS... when Python is set).
	Script string
	// Python runs Script with the interpreter of the pinned Python test
	// environment (Python) instead of node.
	Python bool
	// Local keeps the directory out of the run's cache, written once per
	// test process where it stays: for generators whose output names its
	// own absolute paths (external blob URIs), which a move would break.
	Local bool
	// Args are further arguments of the generator.
	Args []string
	// Need lists further programs the generator runs (ffmpeg, ...).
	Need []string

	once    sync.Once
	dir     string
	shared  bool   // dir belongs to the run's cache, not to this process
	release func() // unlocks and removes dir when it is this process's
	err     error
}

// Dir returns the generated directory. Without the interpreter (node and
// the project's node_modules, or the Python test environment) or a needed
// program the test is skipped, or fails under BPCONVERT_REQUIRE_TOOLS=1.
func (g *Generated) Dir(t testing.TB) string {
	t.Helper()
	Require(t, g.Need...)
	proj := filepath.Join(RepoRoot(t), "fixtures", g.Project)
	interp := "node"
	if g.Python {
		interp = Python(t)
	} else {
		Require(t, "node")
		if _, err := os.Stat(filepath.Join(proj, "node_modules")); err != nil {
			Missing(t, fmt.Sprintf("fixtures/%s/node_modules is missing: run npm ci --prefix fixtures/%s", g.Project, g.Project))
		}
	}
	g.once.Do(func() {
		write := func(dir string) error {
			cmd := exec.Command(interp, append([]string{filepath.Join(proj, g.Script), dir}, g.Args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %v: %s", g.Script, err, stderr.String())
			}
			return nil
		}
		if !g.Local {
			key, err := fixtureKey(proj, g.Script, g.Args)
			if err != nil {
				g.err = err
				return
			}
			if g.dir, g.shared, g.err = sharedDir(key, write); g.shared {
				return
			}
		}
		// Held until Cleanup; a process killed before it (a fuzzing
		// worker, a test binary that timed out) leaves the directory to
		// the next one's sweep.
		if g.dir, g.release, g.err = filelock.MkdirTemp("", "bpconvert-fixtures-"+g.Project+"-"); g.err == nil {
			g.err = write(g.dir)
		}
	})
	if g.err != nil {
		t.Fatal(g.err)
	}
	return g.dir
}

// Cleanup removes the generated directory, if any, unless it belongs to
// the run's cache.
func (g *Generated) Cleanup() {
	if g.release != nil {
		g.release()
	}
}
