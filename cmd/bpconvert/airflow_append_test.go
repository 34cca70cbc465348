package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// producerDAG stands for the pipeline upstream of bpconvert: each run
// writes round N's WebDataset shards (two tars of 20 samples, made with
// Python's tarfile, each written under a hidden name and renamed) into the
// directory of the source Asset and declares that Asset as its outlet, so
// its success is an event of the source Asset.
const producerDAG = `import io, os, random, tarfile
from urllib.parse import urlparse

from airflow.sdk import Asset, dag, task

SOURCE = Asset(name="bpconvert_source", uri=os.environ["BPCONVERT_SOURCE_URI"])


@dag(dag_id="shard_producer", schedule=None, catchup=False, params={"round": 1})
def shard_producer():
    @task(outlets=[SOURCE])
    def write_shards(params=None, outlet_events=None):
        r = params["round"]
        rng = random.Random(r)
        names = []
        for s in range(2):
            name = f"train-r{r}-{s:04d}.tar"
            tmp = os.path.join(urlparse(SOURCE.uri).path, "." + name)
            with tarfile.open(tmp, "w", format=tarfile.GNU_FORMAT) as tf:
                for m in range(20):
                    key = f"r{r}s{s}m{m:04d}"
                    for ext, data in ((".bin", rng.randbytes(3000)), (".cls", str(m % 7).encode())):
                        info = tarfile.TarInfo(key + ext)
                        info.size, info.mtime = len(data), 1700000000
                        tf.addfile(info, io.BytesIO(data))
            os.rename(tmp, os.path.join(os.path.dirname(tmp), name))
            names.append(name)
        outlet_events[SOURCE].extra = {"shards": names}
        return names

    write_shards()


shard_producer()
`

// loopbackPort returns a TCP port on 127.0.0.1 that was free a moment ago.
func loopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run runs one airflow command, bounded in time, and fails t unless it
// succeeds.
func (a *airflow) run(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := a.cmd(ctx, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("airflow %v: %v\n%s", args, err, tail(out))
	}
	return string(out)
}

// executionAPI starts Airflow's execution API (the part of the API server
// that task processes report to) on 127.0.0.1:port, waits until it
// answers, and stops it when the test ends.
func (a *airflow) executionAPI(t *testing.T, port int) {
	t.Helper()
	logf, err := os.Create(filepath.Join(a.home, "api-server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := a.cmd(context.Background(), "api-server", "--apps", "execution", "-H", "127.0.0.1", "-p", strconv.Itoa(port), "-w", "1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its workers stop with it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	health := fmt.Sprintf("http://127.0.0.1:%d/execution/health", port)
	client := &http.Client{Timeout: 20 * time.Second}
	up := testtool.WaitFor(2*time.Minute, 250*time.Millisecond, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		resp, err := client.Get(health)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	select {
	case <-exited:
		up = false
	default:
	}
	if !up {
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("the execution API did not come up on %s:\n%s", health, tail(b))
	}
}

// schedule runs Airflow's scheduler until done holds: at most ten runs
// of `airflow scheduler --num-runs 5 --only-idle`, each of which ends
// after five scheduling loops with nothing to do (a loop waiting on a
// running task counts, so a DAG run may take more than one). It returns
// the last run's output.
func (a *airflow) schedule(t *testing.T, done func() bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var out []byte
	for range 10 {
		var err error
		out, err = a.cmd(ctx, "scheduler", "--num-runs", "5", "--only-idle", "--skip-serve-logs").CombinedOutput()
		if err != nil {
			t.Fatalf("airflow scheduler: %v\n%s", err, tail(out))
		}
		if done() {
			return string(out)
		}
	}
	t.Fatalf("ten scheduler runs did not finish the DAG run:\n%s", tail(out))
	return ""
}

// taskLog returns the log of the first try of a task of a DAG run.
func (a *airflow) taskLog(dag, runID, task string) string {
	b, _ := os.ReadFile(filepath.Join(a.home, "logs", "dag_id="+dag, "run_id="+runID, "task_id="+task, "attempt=1.log"))
	return string(b)
}

// xcomOf returns the value a task of a DAG run returned, decoded.
func (a *airflow) xcomOf(t *testing.T, dag, runID, task string) map[string]any {
	t.Helper()
	rows := a.query(t, fmt.Sprintf("select value from xcom where dag_id = '%s' and run_id = '%s' and task_id = '%s' and key = 'return_value'", dag, runID, task))
	var v map[string]any
	if len(rows) != 1 || json.Unmarshal([]byte(rows[0][0].(string)), &v) != nil {
		t.Fatalf("%s %s: XCom %v", runID, task, rows)
	}
	return v
}

// TestAirflowAppendOnAsset runs examples/airflow/bpconvert_append_dag.py
// as Airflow schedules it, in a real Apache Airflow 3: its scheduler (in
// bounded runs, LocalExecutor, SQLite) and the execution API on loopback.
// Twice, a producer DAG run writes two new tars into the source Asset's
// directory and declares the Asset as its outlet; the scheduler turns that
// event into an asset-triggered run of the append DAG, which runs
// `convert-wds SRC DST --append` (the first time into an absent DST), then
// verify against SRC, and updates the packs Asset. After each run: the run
// was asset-triggered by that round's event, no task was retried, DST
// verifies against every source and holds the members of one conversion of
// all of them; after the second, the first run's shards are byte for byte
// as they were and the append reports the two new sources. A third event,
// after the producer rewrote tars DST holds, fails its append with exit 3
// without a retry.
func TestAirflowAppendOnAsset(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs Apache Airflow's scheduler; skipped with -short")
	}
	root := t.TempDir()
	src, dst, dags := filepath.Join(root, "shards"), filepath.Join(root, "packs"), filepath.Join(root, "dags")
	for _, d := range []string{src, dags} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"bpconvert_commands.py", "bpconvert_append_dag.py", "bpconvert_dag.py"} {
		copyFile(t, filepath.Join("..", "..", "examples", "airflow", f), filepath.Join(dags, f))
	}
	if err := os.WriteFile(filepath.Join(dags, "shard_producer.py"), []byte(producerDAG), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 16)
	rand.Read(secret)
	port := loopbackPort(t)
	a := newAirflowAt(t, dags, "BPCONVERT_SOURCE_URI=file://"+src, "BPCONVERT_ASSET_URI=file://"+dst,
		"BPCONVERT_APPEND_FLAGS=--max-pack-bytes 40KB", "PATH="+filepath.Dir(binPath)+":"+os.Getenv("PATH"),
		"AIRFLOW__CORE__EXECUTOR=LocalExecutor", "AIRFLOW__CORE__PARALLELISM=2", "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=False",
		fmt.Sprintf("AIRFLOW__CORE__EXECUTION_API_SERVER_URL=http://127.0.0.1:%d/execution/", port),
		"AIRFLOW__API_AUTH__JWT_SECRET="+hex.EncodeToString(secret))
	a.run(t, "dags", "reserialize")
	a.executionAPI(t, port)

	var first map[string]string // the first run's shards: name -> size and digest
	for round := 1; round <= 2; round++ {
		a.run(t, "dags", "trigger", "shard_producer", "-c", fmt.Sprintf(`{"round": %d}`, round))
		finished := "select id, run_id, run_type, state from dag_run where dag_id = 'bpconvert_append' and state in ('success', 'failed') order by id"
		out := a.schedule(t, func() bool { return len(a.query(t, finished)) == round })
		runs := a.query(t, finished)
		id, runID := runs[round-1][0], runs[round-1][1].(string)
		if fmt.Sprint(runs[round-1][2:]) != "[asset_triggered success]" {
			t.Fatalf("round %d: append runs %v\n%s\n%s", round, runs, a.taskLog("bpconvert_append", runID, "append"), tail([]byte(out)))
		}
		ev := a.query(t, fmt.Sprintf("select e.source_dag_id, e.extra from dagrun_asset_event d join asset_event e on e.id = d.event_id where d.dag_run_id = %v", id))
		if len(ev) != 1 || ev[0][0] != "shard_producer" || !strings.Contains(ev[0][1].(string), fmt.Sprintf(`"train-r%d-0001.tar"`, round)) {
			t.Fatalf("round %d: the run consumed %v, want the producer's event of round %d", round, ev, round)
		}
		tis := a.query(t, fmt.Sprintf("select task_id, try_number, state from task_instance where run_id = '%s' order by task_id", runID))
		if fmt.Sprint(tis) != "[[append 1 success] [verify 1 success]]" {
			t.Fatalf("round %d: tasks %v", round, tis)
		}
		log := a.taskLog("bpconvert_append", runID, "append")
		for _, want := range []string{"triggered by file://" + src, "convert-wds " + src + " " + dst + " --append --yes --json --max-pack-bytes 40KB"} {
			if !strings.Contains(log, want) {
				t.Fatalf("round %d: the append task's log lacks %q:\n%s", round, want, log)
			}
		}
		appended := a.xcomOf(t, "bpconvert_append", runID, "append")
		if appended["status"] != "ok" {
			t.Fatalf("round %d: append summary %v", round, appended)
		}
		if verified := a.xcomOf(t, "bpconvert_append", runID, "verify"); verified["ok"] != true {
			t.Fatalf("round %d: verify summary %v", round, verified)
		}
		packs := a.query(t, "select e.extra from asset_event e join asset a on a.id = e.asset_id where a.uri = 'file://"+dst+"' order by e.id")
		if len(packs) != round || !strings.Contains(packs[round-1][0].(string), dst) {
			t.Fatalf("round %d: packs Asset events %v", round, packs)
		}

		if r := bp(t, "verify", dst, "--against", src); r.code != 0 || !strings.Contains(r.stdout, " 0 mismatches") {
			t.Fatalf("round %d: verify against every source: %+v", round, r)
		}
		one := filepath.Join(root, fmt.Sprint("one", round))
		if r := bp(t, "convert-wds", src, one, "--yes", "--quiet", "--max-pack-bytes", "40KB"); r.code != 0 {
			t.Fatalf("one conversion of every source: %+v", r)
		}
		sameMembers(t, filepath.Join(dst, "media"), filepath.Join(one, "media"))
		media := packBytes(t, dst)
		if round == 1 {
			first = media
			if len(first) < 2 {
				t.Fatalf("the first run wrote %d shards, want several: %v", len(first), first)
			}
			continue
		}
		for name, sum := range first {
			if media[name] != sum {
				t.Errorf("the first run's shard %s is now %q, was %q", name, media[name], sum)
			}
		}
		if len(media) <= len(first) {
			t.Errorf("the append added no shard: %v", media)
		}
		if got, _ := appended["appended"].(map[string]any); got["sources"] != 2.0 {
			t.Errorf("the append's summary says appended %v, want 2 new sources", appended["appended"])
		}
	}
	changedSourceFails(t, a, dst)
}

// changedSourceFails has the producer write round 1's tars again (the same
// bytes, a new modification time): the next asset-triggered append stops
// with exit 3 naming one of them, its task fails once without a retry,
// verify does not run, and DST's shards stay as they were.
func changedSourceFails(t *testing.T, a *airflow, dst string) {
	t.Helper()
	before := packBytes(t, dst)
	a.run(t, "dags", "trigger", "shard_producer", "-c", `{"round": 1}`)
	finished := "select run_id, run_type, state from dag_run where dag_id = 'bpconvert_append' and state in ('success', 'failed') order by id"
	a.schedule(t, func() bool { return len(a.query(t, finished)) == 3 })
	run := a.query(t, finished)[2]
	runID := run[0].(string)
	log := a.taskLog("bpconvert_append", runID, "append")
	if fmt.Sprint(run[1:]) != "[asset_triggered failed]" {
		t.Fatalf("a run over a changed source: %v\n%s", run, log)
	}
	tis := a.query(t, fmt.Sprintf("select task_id, try_number, state from task_instance where run_id = '%s' order by task_id", runID))
	if fmt.Sprint(tis) != "[[append 1 failed] [verify 0 upstream_failed]]" {
		t.Fatalf("a run over a changed source: tasks %v", tis)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`"level":"error","event":"bpconvert: error: [^"]*train-r1-000[01]\.tar`),
		regexp.MustCompile(`AirflowFailException.*bpconvert convert-wds exited 3: [^"]*train-r1-000[01]\.tar[^"]*invalid input, not retried`),
	} {
		if !want.MatchString(log) {
			t.Fatalf("the append task's log lacks %q:\n%s", want, log)
		}
	}
	if after := packBytes(t, dst); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a refused append changed the shards: %v, were %v", after, before)
	}
}
