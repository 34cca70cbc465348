package testtool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The child-process harness of the memory tests: a test runs its own test
// binary again, with no test selected and an environment variable that
// names one piece of work; the child does it and reports its own peak
// resident set, which no other test's allocations inflate.

// peakLine starts the line on which a child reports its peak RSS in KiB.
const peakLine = "peak RSS KiB:"

// ChildMain is called first in a TestMain. When the environment variable
// name is set, this process is a child that RunChild started: run is
// called with the job the variable holds (JSON) and may write lines to
// out; the child
// prints its peak RSS (the process's own high-water mark, VmHWM: its
// rusage maxrss would count the parent's RSS at the fork, as the child
// shares the parent's memory until it execs), then what run wrote, and
// exits, with 1 and the error on stderr when run fails. Without the
// variable ChildMain returns.
func ChildMain[Job any](name string, run func(job Job, out io.Writer) error) {
	spec, ok := os.LookupEnv(name)
	if !ok {
		return
	}
	var job Job
	err := json.Unmarshal([]byte(spec), &job)
	var out bytes.Buffer
	if err == nil {
		err = run(job, &out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kib, err := selfPeakKiB()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s %d\n", peakLine, kib)
	os.Stdout.Write(out.Bytes())
	os.Exit(0)
}

// selfPeakKiB reads this process's VmHWM.
func selfPeakKiB() (int64, error) {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(st), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no VmHWM line")
}

// RunChild runs this test binary as a child (see ChildMain) with the
// variable name set to job (as JSON) and env added to this process's
// environment.
// It returns the child's peak RSS in bytes and the lines its work wrote;
// a child that fails, or reports no peak, fails the test.
func RunChild(t testing.TB, name string, job any, env ...string) (int64, []string) {
	t.Helper()
	spec, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), name+"="+string(spec))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", name, err, stderr.String())
	}
	first, rest, _ := strings.Cut(string(stdout), "\n")
	var kib int64
	if _, err := fmt.Sscanf(first, peakLine+" %d", &kib); err != nil || kib <= 0 {
		t.Fatalf("child %s printed %q, not its peak RSS", name, stdout)
	}
	var lines []string
	if rest = strings.TrimSpace(rest); rest != "" {
		lines = strings.Split(rest, "\n")
	}
	return kib << 10, lines
}
