package testtool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// LanceBench writes, with fixtures/lance/bench.mjs (the real Lance
// library), a dataset of rows rows of size pseudo-random bytes in a binary
// column "data" at file version 2.1, and returns its directory: one
// fragment per append of at most 64 MiB (one full-zip page each), or with
// oneFragment every row in one fragment of pages of about 32 MiB. It skips
// under -short and without node (fails under BPCONVERT_REQUIRE_TOOLS=1).
// Under a run's fixture cache (FixtureCacheEnv) a dataset is written once
// for the run; callers must not change it.
func LanceBench(t testing.TB, rows, size int, oneFragment bool) string {
	t.Helper()
	if testing.Short() {
		t.Skip("writes a large dataset")
	}
	Require(t, "node")
	gen := filepath.Join(RepoRoot(t), "fixtures", "lance")
	if _, err := os.Stat(filepath.Join(gen, "node_modules", "@lancedb", "lancedb")); err != nil {
		Missing(t, "fixture dependencies are not installed (run: npm ci --prefix fixtures/lance)")
	}
	one := "0"
	if oneFragment {
		one = "1"
	}
	args := []string{strconv.Itoa(rows), strconv.Itoa(size), "2.1", one}
	write := func(out string) error {
		cmd := exec.Command("node", filepath.Join(gen, "bench.mjs"), out, args[0], args[1], args[2])
		cmd.Dir = gen
		cmd.Env = append(os.Environ(), "ONE_FRAGMENT="+one)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("bench.mjs: %v\n%s", err, b)
		}
		return nil
	}
	key, err := fixtureKey(gen, "bench.mjs", args)
	if err != nil {
		t.Fatal(err)
	}
	out, shared, err := sharedDir(key, write)
	if !shared {
		out = t.TempDir()
		err = write(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(out, "bench_2_1.lance")
}
