package testtool

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Python returns the interpreter of the pinned test environment, made by
// scripts/pyenv.sh from scripts/requirements/test.txt (pylance, pyarrow,
// datasets, blobpack, s3fs, duckdb). It skips t, or fails it under
// BPCONVERT_REQUIRE_TOOLS=1, when the environment has not been made.
func Python(t testing.TB) string {
	t.Helper()
	return PythonFor(t, "test")
}

// PythonFor returns the interpreter of the environment that scripts/pyenv.sh
// makes from scripts/requirements/NAME.txt: the one BPCONVERT_PYTHON_NAME
// names when set (BPCONVERT_PYTHON for "test"), else the one pyenv.sh would
// make for the file as it is now. It skips t, or fails it under
// BPCONVERT_REQUIRE_TOOLS=1, when there is none.
func PythonFor(t testing.TB, name string) string {
	t.Helper()
	v := "BPCONVERT_PYTHON"
	if name != "test" {
		v += "_" + strings.ToUpper(name)
	}
	if p := os.Getenv(v); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v", v, p, err)
		}
		return p
	}
	req := filepath.Join(RepoRoot(t), "scripts", "requirements", name+".txt")
	b, err := os.ReadFile(req)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	root := os.Getenv("BPCONVERT_VENV_ROOT")
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			Missing(t, "no home directory for the Python test environment")
		}
		root = filepath.Join(home, ".cache", "bpconvert")
	}
	dir := filepath.Join(root, "venv-"+name+"-"+hex.EncodeToString(sum[:])[:12])
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		Missing(t, "the Python environment of "+req+" is not made (run: bash scripts/pyenv.sh "+req+", or make test)")
	}
	return filepath.Join(dir, "bin", "python")
}
