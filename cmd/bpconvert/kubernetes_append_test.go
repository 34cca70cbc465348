package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// cronJob is the part of a Kubernetes CronJob manifest the test reads.
type cronJob struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Schedule          string `yaml:"schedule"`
		ConcurrencyPolicy string `yaml:"concurrencyPolicy"`
		JobTemplate       struct {
			Spec struct {
				BackoffLimit     int `yaml:"backoffLimit"`
				PodFailurePolicy struct {
					Rules []struct {
						Action      string `yaml:"action"`
						OnExitCodes *struct {
							ContainerName string `yaml:"containerName"`
							Operator      string `yaml:"operator"`
							Values        []int  `yaml:"values"`
						} `yaml:"onExitCodes"`
					} `yaml:"rules"`
				} `yaml:"podFailurePolicy"`
				Template struct {
					Spec struct {
						RestartPolicy  string         `yaml:"restartPolicy"`
						InitContainers []k8sContainer `yaml:"initContainers"`
						Containers     []k8sContainer `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		} `yaml:"jobTemplate"`
	} `yaml:"spec"`
}

// k8sContainer is a container of a pod template.
type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
}

// tarRound writes n WebDataset tars of round r into dir with Python's
// tarfile: train-rR-NNNN.tar, 12 samples each (a .bin of 5,000 random
// bytes and a .cls), keys of their own per round.
func tarRound(t *testing.T, dir string, r, n int) {
	t.Helper()
	script := `import io, os, random, sys, tarfile
d, r, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(r)
for s in range(n):
    with tarfile.open(os.path.join(d, f"train-r{r}-{s:04d}.tar"), "w", format=tarfile.GNU_FORMAT) as tf:
        for m in range(12):
            for ext, data in ((".bin", rng.randbytes(5000)), (".cls", str(m % 5).encode())):
                info = tarfile.TarInfo(f"r{r}s{s}m{m:03d}{ext}")
                info.size, info.mtime = len(data), 1700000000
                tf.addfile(info, io.BytesIO(data))
`
	if out, err := exec.Command(testtool.Python(t), "-c", script, dir, fmt.Sprint(r), fmt.Sprint(n)).CombinedOutput(); err != nil {
		t.Fatalf("tarfile: %v\n%s", err, out)
	}
}

// TestKubernetesAppendCronJob reads examples/kubernetes/bpconvert-append-cronjob.yaml
// (a CronJob: one run at a time, the pod never restarted in place, exit
// codes 2 and 3 failing the Job without a retry, whichever container exits
// with them) and runs its pod's commands, the append init container then
// the verify container, as the CronJob would on four nights, with the
// test's paths in place of the manifest's: the first night converts two
// tars into an absent output, the second finds nothing new (exit 0,
// already_done), the third appends two new tars and leaves the first
// night's shards byte for byte as they were; each night's verify against
// every source passes and the output holds the members of one conversion
// of all of them. A held tar that changed fails the fourth night with an
// exit code the manifest's podFailurePolicy fails the Job on.
func TestKubernetesAppendCronJob(t *testing.T) {
	t.Parallel()
	var cj cronJob
	text := readExample(t, "kubernetes/bpconvert-append-cronjob.yaml")
	if err := yaml.Unmarshal([]byte(text), &cj); err != nil {
		t.Fatalf("bpconvert-append-cronjob.yaml: %v", err)
	}
	job := cj.Spec.JobTemplate.Spec
	pod := job.Template.Spec
	if cj.Kind != "CronJob" || len(strings.Fields(cj.Spec.Schedule)) != 5 || cj.Spec.ConcurrencyPolicy != "Forbid" ||
		job.BackoffLimit < 1 || pod.RestartPolicy != "Never" || len(pod.InitContainers) != 1 || len(pod.Containers) != 1 {
		t.Fatalf("bpconvert-append-cronjob.yaml: %+v", cj.Spec)
	}
	var failJob []int
	for _, r := range job.PodFailurePolicy.Rules {
		if r.Action == "FailJob" && r.OnExitCodes != nil && r.OnExitCodes.Operator == "In" && r.OnExitCodes.ContainerName == "" {
			failJob = append(failJob, r.OnExitCodes.Values...)
		}
	}
	if fmt.Sprint(failJob) != "[2 3]" {
		t.Fatalf("bpconvert-append-cronjob.yaml: the Job fails at once on exits %v of any container, want [2 3]", failJob)
	}
	image := regexp1(t, readExample(t, "kubernetes/bpconvert-parts.yaml"), `image: (\S+)`)
	append1, verify := pod.InitContainers[0], pod.Containers[0]
	for _, c := range []k8sContainer{append1, verify} {
		if c.Image != image || !slices.Equal(c.Command, []string{"/usr/local/bin/bpconvert"}) {
			t.Fatalf("container %s: image %s, command %v; want %s and the program alone (the image has no shell)", c.Name, c.Image, c.Command, image)
		}
	}
	if !slices.Contains(append1.Args, "--append") || len(verify.Args) == 0 || verify.Args[0] != "verify" {
		t.Fatalf("want an append, then verify: %v, %v", append1.Args, verify.Args)
	}

	root := t.TempDir()
	src, dst := filepath.Join(root, "shards"), filepath.Join(root, "packs")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	local := func(args []string) []string {
		out := make([]string, len(args))
		for i, a := range args {
			out[i] = strings.ReplaceAll(strings.ReplaceAll(a, "/data/shards", src), "/data/packs", dst)
		}
		return out
	}
	// night runs the pod: the init container, then (if it succeeded) the
	// container; it returns the init container's result.
	night := func(n int) result {
		r := runBin(t, engineEnv(), local(append1.Args)...)
		if r.code != 0 {
			return r
		}
		if v := runBin(t, engineEnv(), local(verify.Args)...); v.code != 0 || lastJSON(t, v)["ok"] != true {
			t.Fatalf("night %d: verify: %+v", n, v)
		}
		one := filepath.Join(root, fmt.Sprint("one", n))
		if o := bp(t, "convert-wds", src, one, "--yes", "--quiet"); o.code != 0 {
			t.Fatalf("one conversion of every source: %+v", o)
		}
		sameMembers(t, filepath.Join(dst, "media"), filepath.Join(one, "media"))
		return r
	}

	tarRound(t, src, 1, 2)
	r := night(1)
	if r.code != 0 || lastJSON(t, r)["status"] != "ok" {
		t.Fatalf("night 1: %+v", r)
	}
	first := packBytes(t, dst)
	if r := night(2); r.code != 0 || lastJSON(t, r)["status"] != "already_done" {
		t.Fatalf("night 2, nothing new: %+v", r)
	}
	tarRound(t, src, 3, 2)
	r = night(3)
	if got, _ := lastJSON(t, r)["appended"].(map[string]any); r.code != 0 || lastJSON(t, r)["status"] != "ok" || got["sources"] != 2.0 {
		t.Fatalf("night 3, two new tars: %+v", r)
	}
	media := packBytes(t, dst)
	for name, sum := range first {
		if media[name] != sum {
			t.Errorf("night 1's shard %s is now %q, was %q", name, media[name], sum)
		}
	}
	if len(media) <= len(first) {
		t.Errorf("night 3 added no shard: %v", media)
	}

	// A tar the output holds is rewritten: the append stops, naming it,
	// and the Job fails without a retry.
	tarRound(t, src, 1, 1)
	if r := night(4); !slices.Contains(failJob, r.code) || !strings.Contains(r.stderr, "train-r1-0000.tar") {
		t.Fatalf("night 4, a held tar changed: exit %d, want one of %v naming it: %+v", r.code, failJob, r)
	}
}

// packBytes maps every pack shard of dst (media/*.zip) to its size and
// SHA-256.
func packBytes(t *testing.T, dst string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, sum := range treeBytes(t, filepath.Join(dst, "media")) {
		if strings.HasSuffix(name, ".zip") {
			out[name] = sum
		}
	}
	return out
}

// regexp1 returns the first group of pattern's first match in text.
func regexp1(t *testing.T, text, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %q", pattern)
	}
	return m[1]
}
