package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// engineEnv returns the environment of this process without any variable
// that --part auto reads, plus vars.
func engineEnv(vars ...string) []string {
	var out []string
	for _, kv := range exec.Command("true").Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "JOB_COMPLETION_") || strings.HasPrefix(name, "AWS_BATCH_") || strings.HasPrefix(name, "BATCH_TASK_") ||
			strings.HasPrefix(name, "CLOUD_RUN_") || strings.HasPrefix(name, "SLURM_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, vars...)
}

// bpEnv runs bpconvert with env as its whole environment.
func bpEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runBin(t, env, args...)
}

// TestPartAuto runs convert-wds --part auto as each batch engine would, N
// processes at once with the variables that engine sets, then finalize:
// the joined output holds what one undivided run holds, and each part's
// summary names the part and the variable it came from. Without a variable,
// or with an index outside 1..N, the run is a usage error naming the
// variables.
func TestPartAuto(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shards := wdsShards(t, root, 5, 4, 1500)
	one := filepath.Join(root, "one")
	flags := []string{"--yes", "--quiet", "--max-pack-bytes", "20KB", "--json"}
	if r := bp(t, append(append(append([]string{"convert-wds"}, shards...), one), flags...)...); r.code != 0 {
		t.Fatalf("whole run: %+v", r)
	}
	const n = 3
	for _, tc := range []struct {
		engine, spec string
		env          func(i int) []string // i from 0
		from         string
	}{
		{"kubernetes", "auto/3", func(i int) []string { return []string{fmt.Sprint("JOB_COMPLETION_INDEX=", i)} }, "JOB_COMPLETION_INDEX=%d (Kubernetes Indexed Job), N from --part auto/3"},
		{"aws batch", "auto", func(i int) []string {
			return []string{fmt.Sprint("AWS_BATCH_JOB_ARRAY_INDEX=", i), "AWS_BATCH_JOB_ARRAY_SIZE=3"}
		}, "AWS_BATCH_JOB_ARRAY_INDEX=%d (AWS Batch array job), N from AWS_BATCH_JOB_ARRAY_SIZE=3"},
		{"gcp batch", "auto", func(i int) []string { return []string{fmt.Sprint("BATCH_TASK_INDEX=", i), "BATCH_TASK_COUNT=3"} }, "BATCH_TASK_INDEX=%d"},
		{"cloud run", "auto", func(i int) []string {
			return []string{fmt.Sprint("CLOUD_RUN_TASK_INDEX=", i), "CLOUD_RUN_TASK_COUNT=3"}
		}, "CLOUD_RUN_TASK_INDEX=%d"},
		{"slurm", "auto", func(i int) []string {
			return []string{fmt.Sprint("SLURM_ARRAY_TASK_ID=", i+5), "SLURM_ARRAY_TASK_MIN=5", "SLURM_ARRAY_TASK_COUNT=3"}
		}, "SLURM_ARRAY_TASK_ID=%d less SLURM_ARRAY_TASK_MIN=5"},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			dst := filepath.Join(root, strings.ReplaceAll(tc.engine, " ", "-"))
			args := append(append(append([]string{"convert-wds"}, shards...), dst, "--part", tc.spec), flags...)
			res := make([]result, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() { defer wg.Done(); res[i] = bpEnv(t, engineEnv(tc.env(i)...), args...) }()
			}
			wg.Wait()
			for i, r := range res {
				if r.code != 0 {
					t.Fatalf("task %d: %+v", i, r)
				}
				doc := lastJSON(t, r)
				from := tc.from
				if strings.Contains(from, "%d") {
					idx := i
					if tc.engine == "slurm" {
						idx = i + 5
					}
					from = fmt.Sprintf(from, idx)
				}
				if doc["part"] != fmt.Sprintf("%d/%d", i+1, n) || !strings.Contains(fmt.Sprint(doc["part_from"]), from) {
					t.Fatalf("task %d: part %v from %v, want %d/%d from %q", i, doc["part"], doc["part_from"], i+1, n, from)
				}
			}
			if r := bp(t, "finalize", dst, "--json"); r.code != 0 || lastJSON(t, r)["blobs"] != float64(5*4*2) {
				t.Fatalf("finalize: %+v", r)
			}
			sameMembers(t, filepath.Join(dst, "media"), filepath.Join(one, "media"))
			// A replacement task with the same index finds its part done.
			if r := bpEnv(t, engineEnv(tc.env(1)...), args...); r.code != 0 || lastJSON(t, r)["status"] != "already_done" {
				t.Fatalf("rerun of task 1: %+v", r)
			}
		})
	}
	for _, tc := range []struct {
		name, spec string
		env        []string
		want       string
	}{
		{"no variable", "auto", nil, "no part index in the environment (tried JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX, BATCH_TASK_INDEX, CLOUD_RUN_TASK_INDEX, SLURM_ARRAY_TASK_ID)"},
		{"outside", "auto/3", []string{"JOB_COMPLETION_INDEX=3"}, "JOB_COMPLETION_INDEX=3 (Kubernetes Indexed Job), N from --part auto/3 gives part 4, outside 1..3"},
		{"no count", "auto", []string{"JOB_COMPLETION_INDEX=0"}, "give it as --part auto/N"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
			r := bpEnv(t, engineEnv(tc.env...), append(append([]string{"convert-wds", "--json"}, shards...), dst, "--part", tc.spec)...)
			var doc map[string]any
			json.Unmarshal([]byte(r.stdout), &doc)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) || !strings.Contains(fmt.Sprint(doc["error"]), tc.want) {
				t.Fatalf("exit %d, want 2 and %q in:\n%s", r.code, tc.want, r.stderr)
			}
			if exists(dst) || exists(filepath.Join(root, "."+filepath.Base(dst)+".bpconvert-parts")) {
				t.Fatal("a refused run wrote something")
			}
		})
	}
}
