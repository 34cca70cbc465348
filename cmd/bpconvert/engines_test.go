package main

import (
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

// The paths the engine examples convert; the test puts its own in their
// place, and changes nothing else in the commands.
const (
	exampleSources = "/data/shards/train-{000000..000999}.tar"
	exampleDest    = "/data/packs"
)

// engineTask is one task of an engine example, as the engine would start
// it: its argv and the variables the engine sets.
type engineTask struct {
	argv []string
	env  []string
}

// engine is an example read from examples/: the N tasks of the split and
// the finalize (and verify) commands that follow them.
type engine struct {
	name     string
	tasks    []engineTask
	finalize [][]string
}

// readExample returns an example file's text.
func readExample(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// must fails unless text matches every pattern.
func must(t *testing.T, file, text string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(text) {
			t.Fatalf("%s: no %q", file, p)
		}
	}
}

// localize puts the test's paths and binary into an example's argv.
func localize(argv []string, src, dst string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		a = strings.ReplaceAll(a, exampleSources, src)
		a = strings.ReplaceAll(a, exampleDest, dst)
		if a == "/usr/local/bin/bpconvert" || a == "bpconvert" {
			a = binPath
		}
		out[i] = a
	}
	return out
}

// yamlLists returns every `key: [..]` flow list of a manifest (JSON
// syntax, as the examples write them).
func yamlLists(t *testing.T, text, key string) [][]string {
	t.Helper()
	var out [][]string
	for _, m := range regexp.MustCompile(`(?m)^\s*`+key+`: (\[.*\])\s*$`).FindAllStringSubmatch(text, -1) {
		var l []string
		if err := json.Unmarshal([]byte(m[1]), &l); err != nil {
			t.Fatalf("%s: %s: %v", key, m[1], err)
		}
		out = append(out, l)
	}
	return out
}

func kubernetesEngine(t *testing.T, src, dst string) engine {
	parts := readExample(t, "kubernetes/bpconvert-parts.yaml")
	must(t, "bpconvert-parts.yaml", parts, `completionMode: Indexed`, `backoffLimitPerIndex: \d+`, `restartPolicy: Never`,
		`action: FailIndex\s+onExitCodes:\s+containerName: bpconvert\s+operator: In\s+values: \[2, 3\]`)
	n, _ := strconv.Atoi(regexp.MustCompile(`completions: (\d+)`).FindStringSubmatch(parts)[1])
	argv := append(yamlLists(t, parts, "command")[0], yamlLists(t, parts, "args")[0]...)
	if !strings.Contains(strings.Join(argv, " "), fmt.Sprintf("--part auto/%d", n)) {
		t.Fatalf("bpconvert-parts.yaml: completions %d, but the args say %v", n, argv)
	}
	e := engine{name: "kubernetes"}
	for i := range n {
		e.tasks = append(e.tasks, engineTask{localize(argv, src, dst), []string{fmt.Sprint("JOB_COMPLETION_INDEX=", i)}})
	}
	fin := readExample(t, "kubernetes/bpconvert-finalize.yaml")
	cmds, args := yamlLists(t, fin, "command"), yamlLists(t, fin, "args")
	for i := range args { // the init container (finalize), then verify
		e.finalize = append(e.finalize, localize(append(cmds[i], args[i]...), src, dst))
	}
	return e
}

func slurmEngine(t *testing.T, src, dst string) engine {
	script := readExample(t, "slurm/bpconvert-array.sbatch")
	must(t, "bpconvert-array.sbatch", script, `--part auto`)
	must(t, "submit.sh", readExample(t, "slurm/submit.sh"), `--dependency="afterok:`)
	m := regexp.MustCompile(`#SBATCH --array=(\d+)-(\d+)`).FindStringSubmatch(script)
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	dir := filepath.Join("..", "..", "examples", "slurm")
	vars := []string{"BPCONVERT=" + binPath, "SRC=" + src, "DST=" + dst}
	e := engine{name: "slurm"}
	for id := lo; id <= hi; id++ {
		e.tasks = append(e.tasks, engineTask{[]string{"bash", filepath.Join(dir, "bpconvert-array.sbatch")},
			append([]string{fmt.Sprint("SLURM_ARRAY_TASK_ID=", id), fmt.Sprint("SLURM_ARRAY_TASK_MIN=", lo),
				fmt.Sprint("SLURM_ARRAY_TASK_COUNT=", hi-lo+1), "BPCONVERT_FLAGS=--max-pack-bytes 100KB"}, vars...)})
	}
	e.finalize = [][]string{append(append([]string{"env"}, vars...), "bash", filepath.Join(dir, "bpconvert-finalize.sbatch"))}
	return e
}

func awsBatchEngine(t *testing.T, src, dst string) engine {
	var def struct {
		Parameters    map[string]string `json:"parameters"`
		RetryStrategy struct {
			EvaluateOnExit []struct{ OnExitCode, Action string } `json:"evaluateOnExit"`
		} `json:"retryStrategy"`
		ContainerProperties struct {
			Command []string `json:"command"`
		} `json:"containerProperties"`
	}
	if err := json.Unmarshal([]byte(readExample(t, "aws-batch/job-definition.json")), &def); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(def.RetryStrategy.EvaluateOnExit) != "[{2 EXIT} {3 EXIT} {* RETRY}]" {
		t.Fatalf("job-definition.json: evaluateOnExit %v", def.RetryStrategy.EvaluateOnExit)
	}
	submit := readExample(t, "aws-batch/submit.sh")
	must(t, "submit.sh", submit, `--depends-on jobId="\$parts"`, `"/usr/local/bin/bpconvert","finalize","/data/packs"`,
		`--depends-on jobId="\$fin"`, `"/usr/local/bin/bpconvert","verify","/data/packs","--against","/data/shards/train-\{000000\.\.000999\}\.tar"`)
	n, _ := strconv.Atoi(regexp.MustCompile(`--array-properties size=(\d+)`).FindStringSubmatch(submit)[1])
	var argv []string
	for _, a := range def.ContainerProperties.Command {
		if name, ok := strings.CutPrefix(a, "Ref::"); ok {
			a = def.Parameters[name]
		}
		argv = append(argv, a)
	}
	e := engine{name: "aws batch"}
	for i := range n {
		e.tasks = append(e.tasks, engineTask{localize(argv, src, dst),
			[]string{fmt.Sprint("AWS_BATCH_JOB_ARRAY_INDEX=", i), fmt.Sprint("AWS_BATCH_JOB_ARRAY_SIZE=", n)}})
	}
	e.finalize = [][]string{localize([]string{"bpconvert", "finalize", exampleDest}, src, dst),
		localize([]string{"bpconvert", "verify", exampleDest, "--against", exampleSources}, src, dst)}
	return e
}

// TestEngineExamples runs the Kubernetes Indexed Job, Slurm array and AWS
// Batch array examples as their engines would: the N tasks at once, each
// with the variables its engine sets, exactly the example's command but
// for the paths (and smaller shards, so a task has many); one task is
// killed with SIGKILL once it has written a shard and then replaced by a
// task of the same index, as the engines do. Then the example's finalize
// and verify --against the source. Every engine's output holds the members
// of one undivided run, and the three outputs (packs, table, record) are
// byte for byte the same.
func TestEngineExamples(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	in := filepath.Join(root, "in")
	os.MkdirAll(in, 0o755)
	for i, s := range wdsShards(t, root, 8, 24, 48<<10) {
		if err := os.Rename(s, filepath.Join(in, fmt.Sprintf("train-%06d.tar", i))); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(in, "train-{000000..000007}.tar")
	one := filepath.Join(root, "one")
	if r := bp(t, "convert-wds", src, one, "--yes", "--quiet", "--max-pack-bytes", "100KB"); r.code != 0 {
		t.Fatalf("undivided run: %+v", r)
	}
	var outputs []string
	for _, mk := range []func(*testing.T, string, string) engine{kubernetesEngine, slurmEngine, awsBatchEngine} {
		dst := filepath.Join(root, fmt.Sprint("out", len(outputs)))
		e := mk(t, src, dst)
		t.Run(e.name, func(t *testing.T) {
			for i := range e.tasks {
				if e.name != "slurm" {
					e.tasks[i].argv = append(e.tasks[i].argv, "--max-pack-bytes", "100KB")
				}
			}
			const victim = 3
			staging := filepath.Join(root, "."+filepath.Base(dst)+".bpconvert-parts", fmt.Sprintf(".part-%04d-of-%04d.bpconvert-staging", victim+1, len(e.tasks)))
			errs := make([]string, len(e.tasks))
			var wg sync.WaitGroup
			for i, task := range e.tasks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.Command(task.argv[0], task.argv[1:]...)
					cmd.Env = engineEnv(task.env...)
					if i != victim {
						if out, err := cmd.CombinedOutput(); err != nil {
							errs[i] = fmt.Sprintf("task %d: %v\n%s", i, err, out)
						}
						return
					}
					// A process group of its own: a signal reaches the
					// bpconvert a task's script starts too.
					cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
					if err := cmd.Start(); err != nil {
						errs[i] = err.Error()
						return
					}
					group := -cmd.Process.Pid
					// The task runs in steps of a millisecond and is looked at
					// while stopped, so it is killed with a shard staged
					// however fast it runs on a busy machine.
					testtool.WaitFor(60*time.Second, 0, func() bool {
						syscall.Kill(group, syscall.SIGCONT)
						time.Sleep(time.Millisecond)
						syscall.Kill(group, syscall.SIGSTOP)
						return len(packShards(filepath.Join(staging, "media"))) >= 1
					})
					syscall.Kill(group, syscall.SIGKILL)
					if err := cmd.Wait(); err == nil {
						errs[i] = fmt.Sprintf("task %d finished before it was killed", i)
						return
					}
					// The engine replaces it with a task of the same index.
					again := exec.Command(task.argv[0], task.argv[1:]...)
					again.Env = engineEnv(task.env...)
					if out, err := again.CombinedOutput(); err != nil || !strings.Contains(string(out), "resuming an interrupted run") {
						errs[i] = fmt.Sprintf("task %d after the kill: %v\n%s", i, err, out)
					}
				}()
			}
			wg.Wait()
			for _, e := range errs {
				if e != "" {
					t.Fatal(e)
				}
			}
			for _, argv := range e.finalize {
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = engineEnv()
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%v: %v\n%s", argv, err, out)
				} else if strings.Contains(strings.Join(argv, " "), "verify") && !strings.Contains(string(out), "0 mismatches") {
					t.Fatalf("%v:\n%s", argv, out)
				}
			}
			sameMembers(t, filepath.Join(dst, "media"), filepath.Join(one, "media"))
			for _, prev := range outputs {
				sameTree(t, dst, prev)
			}
			outputs = append(outputs, dst)
		})
	}
}
