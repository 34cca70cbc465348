package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestAirflowExample compiles examples/airflow and runs exactly the
// commands its helper module templates: the parts concurrently, then
// finalize, then a retry of each (all exit 0); it also checks the module's
// exit-code rules against the codes bpconvert documents.
func TestAirflowExample(t *testing.T) {
	testtool.Require(t, "python3")
	dir := filepath.Join("..", "..", "examples", "airflow")
	root := t.TempDir()
	for _, f := range []string{"bpconvert_commands.py", "bpconvert_dag.py"} {
		// python3 -m py_compile, with the byte code kept out of the tree.
		script := "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)"
		if out, err := exec.Command("python3", "-c", script, filepath.Join(dir, f), filepath.Join(root, f+"c")).CombinedOutput(); err != nil {
			t.Fatalf("py_compile %s: %v\n%s", f, err, out)
		}
	}
	shards := wdsShards(t, root, 5, 4, 2000)
	dst := filepath.Join(root, "packs")
	cmd := exec.Command("python3", append([]string{filepath.Join(dir, "bpconvert_commands.py"), binPath, "convert-wds", dst, "3"}, shards...)...)
	cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var se strings.Builder
	cmd.Stderr = &se
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, se.String())
	}
	var argvs [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var argv []string
		if err := json.Unmarshal([]byte(line), &argv); err != nil {
			t.Fatal(err)
		}
		argvs = append(argvs, argv)
	}
	if len(argvs) != 4 {
		t.Fatalf("want 3 parts and finalize, got %v", argvs)
	}
	runAll := func(argvs [][]string, want string) {
		var wg sync.WaitGroup
		res := make([]result, len(argvs))
		for i, argv := range argvs {
			wg.Add(1)
			go func() { defer wg.Done(); res[i] = bp(t, argv[1:]...) }()
		}
		wg.Wait()
		for i, r := range res {
			if r.code != 0 || lastJSON(t, r)["status"] != want {
				t.Fatalf("%v: %+v", argvs[i], r)
			}
		}
	}
	for _, want := range []string{"ok", "already_done"} {
		runAll(argvs[:3], want)
		runAll(argvs[3:], want)
	}
	if r := bp(t, "verify", filepath.Join(dst, "media")); r.code != 0 {
		t.Fatalf("verify: %+v", r)
	}
	for code, want := range map[int]string{0: "ok", 1: "retry", 2: "fail", 3: "fail", 130: "retry", 143: "retry"} {
		line := `{"exit": ` + itoa(int64(code)) + `, "outcome": "` + want + `"}`
		if !strings.Contains(se.String(), line) {
			t.Errorf("exit %d: want outcome %q; the module says:\n%s", code, want, se.String())
		}
	}
}
