package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestAirflowCommands byte-compiles examples/airflow with the system
// python3 and runs exactly the commands its helper module templates: the
// parts concurrently, then finalize, then a retry of each (all exit 0),
// then verify against the sources; it also checks the module's exit-code
// rules against the codes bpconvert documents, and what the append DAG
// gives bpconvert for an Asset's URI (a file:// URI's path, another URI as
// it is).
func TestAirflowCommands(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "python3")
	dir := filepath.Join("..", "..", "examples", "airflow")
	root := t.TempDir()
	for _, f := range []string{"bpconvert_commands.py", "bpconvert_dag.py", "bpconvert_append_dag.py"} {
		// python3 -m py_compile, with the byte code kept out of the tree.
		script := "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)"
		if out, err := exec.Command("python3", "-c", script, filepath.Join(dir, f), filepath.Join(root, f+"c")).CombinedOutput(); err != nil {
			t.Fatalf("py_compile %s: %v\n%s", f, err, out)
		}
	}
	// The path or URI the append DAG gives bpconvert for an Asset's URI.
	for uri, want := range map[string]string{
		"file:///data/shards/train":   "/data/shards/train",
		"file:///data/new%20shards":   "/data/new shards",
		"s3://bucket/shards/train":    "s3://bucket/shards/train",
		"file:///data/packs/train/":   "/data/packs/train/",
		"s3://bucket/packs?region=x1": "s3://bucket/packs?region=x1",
	} {
		script := "import sys; sys.path.insert(0, sys.argv[1]); import bpconvert_commands; print(bpconvert_commands.location(sys.argv[2]))"
		cmd := exec.Command("python3", "-c", script, dir, uri)
		cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSuffix(string(out), "\n") != want {
			t.Errorf("location(%q) = %q (%v), want %q", uri, out, err, want)
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
		argvs = append(argvs, append(argv, "--json"))
	}
	if len(argvs) != 5 {
		t.Fatalf("want 3 parts, finalize and verify, got %v", argvs)
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
		runAll(argvs[3:4], want)
	}
	if r := bp(t, argvs[4][1:]...); r.code != 0 || !strings.Contains(r.stderr, "0 mismatches") {
		t.Fatalf("verify: %+v", r)
	}
	for code, want := range map[int]string{0: "ok", 1: "retry", 2: "fail", 3: "fail", 130: "retry", 143: "retry"} {
		line := `{"exit": ` + itoa(int64(code)) + `, "outcome": "` + want + `"}`
		if !strings.Contains(se.String(), line) {
			t.Errorf("exit %d: want outcome %q; the module says:\n%s", code, want, se.String())
		}
	}
}

// airflow is an Airflow 3 installation (the pinned environment of
// scripts/requirements/airflow.txt) with a home of its own: SQLite, the
// example DAG folder, a pool for the parts.
type airflow struct {
	bin  string   // the airflow command
	py   string   // its Python
	env  []string // the environment every command gets
	home string   // AIRFLOW_HOME (task logs under logs/)
	db   string
}

func newAirflow(t *testing.T) *airflow {
	t.Helper()
	dags, err := filepath.Abs(filepath.Join("..", "..", "examples", "airflow"))
	if err != nil {
		t.Fatal(err)
	}
	return newAirflowAt(t, dags)
}

// newAirflowAt is newAirflow with the DAG folder dags and more variables
// (which replace the defaults of the same name).
func newAirflowAt(t *testing.T, dags string, env ...string) *airflow {
	t.Helper()
	py := testtool.PythonFor(t, "airflow")
	home := t.TempDir()
	a := &airflow{bin: filepath.Join(filepath.Dir(py), "airflow"), py: py, home: home, db: filepath.Join(home, "airflow.db")}
	a.env = append(os.Environ(), "AIRFLOW_HOME="+home, "AIRFLOW__CORE__DAGS_FOLDER="+dags, "AIRFLOW__CORE__LOAD_EXAMPLES=False",
		"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=sqlite:///"+a.db, "PYTHONDONTWRITEBYTECODE=1",
		"BPCONVERT_RETRY_DELAY=0", "BPCONVERT_POOL=bpconvert", "BPCONVERT_ASSET_URI=file:///converted/packs")
	a.env = append(a.env, env...)
	for _, args := range [][]string{{"db", "migrate"}, {"pools", "set", "bpconvert", "4", "bpconvert parts"}} {
		if out, err := a.cmd(context.Background(), args...).CombinedOutput(); err != nil {
			t.Fatalf("airflow %v: %v\n%s", args, err, out)
		}
	}
	return a
}

func (a *airflow) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, a.bin, args...)
	c.Env = a.env
	return c
}

// dagsTest runs `airflow dags test` of the example with conf, and returns
// its output (task logs included) and whether the run succeeded.
func (a *airflow) dagsTest(t *testing.T, conf map[string]any) (string, bool) {
	t.Helper()
	b, _ := json.Marshal(conf)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := a.cmd(ctx, "dags", "test", "bpconvert_fanout", "-c", string(b)).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("airflow dags test did not finish in 5 minutes:\n%s", tail(out))
	}
	return string(out), err == nil
}

// query runs one SQL query on Airflow's database with its own Python and
// returns the rows as JSON arrays.
func (a *airflow) query(t *testing.T, sql string) [][]any {
	t.Helper()
	script := "import json, sqlite3, sys; print(json.dumps(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall()))"
	out, err := exec.Command(a.py, "-c", script, a.db, sql).Output()
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var rows [][]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func tail(b []byte) string {
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

// TestAirflowDAG runs the example DAG in a real Apache Airflow 3 (`airflow
// dags test`, SQLite): three mapped parts of convert-wds, finalize, verify
// against the source. Part 2 is stopped with SIGTERM mid-run, as Airflow
// stops a task it clears or times out; Airflow retries it and the retry
// resumes from the kept shards. The UI's map index shows parts 1..3, the
// summaries are XComs, verify emits an asset event. A part cleared and run
// again (airflow tasks clear, tasks test) is already done. The same run again
// finds every task already done; a corrupt input fails its part once, not
// retried, with bpconvert's error in the task log at error level. Each
// successful run ends with verify --against the source passing.
func TestAirflowDAG(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs Apache Airflow three times; skipped with -short")
	}
	a := newAirflow(t)
	root := t.TempDir()
	shards := wdsShards(t, root, 3, 40, 256<<10)
	dst := filepath.Join(root, "packs")
	conf := map[string]any{"bpconvert": binPath, "converter": "convert-wds", "sources": shards, "dest": dst, "parts": 3,
		"extra": []string{"--max-pack-bytes", "300KB"}}

	// Stop part 2/3 with SIGTERM once it has complete shards.
	staging := filepath.Join(root, ".packs.bpconvert-parts", ".part-0002-of-0003.bpconvert-staging")
	stopped := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		defer close(stopped)
		testtool.WaitFor(4*time.Minute, time.Millisecond, func() bool {
			select {
			case <-done:
				return true
			default:
			}
			if len(packShards(filepath.Join(staging, "media"))) < 1 {
				return false
			}
			pid := findProcess(binPath, "--part", "2/3")
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGTERM)
				stopped <- pid
			}
			return pid > 0
		})
	}()
	out, ok := a.dagsTest(t, conf)
	close(done)
	pid, killed := <-stopped
	if !ok {
		t.Fatalf("dags test failed:\n%s", tail([]byte(out)))
	}
	if !killed {
		t.Fatalf("part 2/3 was never stopped:\n%s", tail([]byte(out)))
	}
	t.Logf("stopped part 2/3 (pid %d) with SIGTERM", pid)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`\[error\s*\] bpconvert: interrupted \(SIGTERM\); \d+ complete shards? kept in ` + regexp.QuoteMeta(staging)),
		regexp.MustCompile(`bpconvert convert-wds exited 143`),
		regexp.MustCompile(`resuming an interrupted run: \d+ complete shards? verified`),
		regexp.MustCompile(`against .*: 240 payloads compared, .* 0 mismatches`),
	} {
		if !want.MatchString(out) {
			t.Fatalf("the task logs lack %q:\n%s", want, tail([]byte(out)))
		}
	}
	rows := a.query(t, "select map_index, rendered_map_index, try_number, state from task_instance where task_id = 'convert_part' order by map_index")
	if fmt.Sprint(rows) != "[[0 part 1/3 1 success] [1 part 2/3 2 success] [2 part 3/3 1 success]]" {
		t.Fatalf("mapped parts: %v", rows)
	}
	var verified map[string]any
	xcom := a.query(t, "select value from xcom where task_id = 'verify'")
	if len(xcom) != 1 || json.Unmarshal([]byte(xcom[0][0].(string)), &verified) != nil || verified["ok"] != true {
		t.Fatalf("verify's XCom: %v", xcom)
	}
	if ev := a.query(t, "select a.uri, e.extra from asset_event e join asset a on a.id = e.asset_id"); len(ev) != 1 || ev[0][0] != "file:///converted/packs" || !strings.Contains(ev[0][1].(string), dst) {
		t.Fatalf("asset events: %v", ev)
	}
	one := filepath.Join(root, "one")
	if r := bp(t, append(append([]string{"convert-wds"}, shards...), one, "--yes", "--quiet", "--max-pack-bytes", "300KB")...); r.code != 0 {
		t.Fatalf("undivided run: %+v", r)
	}
	sameMembers(t, filepath.Join(dst, "media"), filepath.Join(one, "media"))

	// Part 2/3 cleared and run again in the same DAG run: already done (in
	// the joined DST), with the part's own figures (40 samples of 2 members).
	runID := a.query(t, "select run_id from dag_run where dag_id = 'bpconvert_fanout'")[0][0].(string)
	if out, err := a.cmd(context.Background(), "tasks", "clear", "bpconvert_fanout", "-t", "^convert_part$", "-y").CombinedOutput(); err != nil {
		t.Fatalf("tasks clear: %v\n%s", err, tail(out))
	}
	b, err := a.cmd(context.Background(), "tasks", "test", "bpconvert_fanout", "convert_part", runID, "--map-index", "1").CombinedOutput()
	if err != nil || !strings.Contains(string(b), "already done: "+dst+" holds") ||
		!regexp.MustCompile(`Returned value was: \{'blobs': 80, .*'part': '2/3'`).Match(b) {
		t.Fatalf("cleared part 2/3 run again: %v\n%s", err, tail(b))
	}

	// The same run again: every part and finalize are already done.
	out, ok = a.dagsTest(t, conf)
	if !ok || strings.Count(out, `'status': 'already_done'`) != 4 {
		t.Fatalf("rerun: ok %v, want 4 already_done summaries:\n%s", ok, tail([]byte(out)))
	}
	if r := bp(t, "verify", dst, "--against", strings.Join(shards, "::")); r.code != 0 {
		t.Fatalf("verify after the rerun: %+v", r)
	}

	// A corrupt input: part 3/3's tar is cut short.
	bad := filepath.Join(root, "bad")
	os.MkdirAll(bad, 0o755)
	var badShards []string
	for i, s := range shards {
		c := filepath.Join(bad, filepath.Base(s))
		copyFile(t, s, c)
		if i == 2 {
			info, _ := os.Stat(c)
			os.Truncate(c, info.Size()/2+100)
		}
		badShards = append(badShards, c)
	}
	conf["sources"], conf["dest"] = badShards, filepath.Join(root, "badpacks")
	out, ok = a.dagsTest(t, conf)
	if ok {
		t.Fatalf("a run over a truncated tar succeeded:\n%s", tail([]byte(out)))
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`\[error\s*\] bpconvert: error: wds: ` + regexp.QuoteMeta(badShards[2])),
		regexp.MustCompile(`AirflowFailException: bpconvert convert-wds exited 3: wds: ` + regexp.QuoteMeta(badShards[2]) + `.*invalid input, not retried`),
	} {
		if !want.MatchString(out) {
			t.Fatalf("the task logs lack %q:\n%s", want, tail([]byte(out)))
		}
	}
	if n := strings.Count(out, "--part 3/3 --yes"); n != 1 {
		t.Fatalf("part 3/3 ran %d times, want once (no retry of invalid input)", n)
	}
}

// findProcess returns the pid of a running process whose command line is
// bin followed by arguments that include args in order, or 0.
func findProcess(bin string, args ...string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
		if len(argv) == 0 || argv[0] != bin {
			continue
		}
		if strings.Contains(strings.Join(argv, "\x00"), strings.Join(args, "\x00")) {
			return pid
		}
	}
	return 0
}
