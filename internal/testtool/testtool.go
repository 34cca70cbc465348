// Package testtool helps tests that need an outside program (unzip, python3,
// ffmpeg, node): such a test is skipped with the reason when the program is
// missing, unless BPCONVERT_REQUIRE_TOOLS=1 (set by CI), which turns the skip
// into a failure so a green CI run never hides an untested reader.
package testtool

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RequireEnv is the environment variable that makes missing tools fatal.
const RequireEnv = "BPCONVERT_REQUIRE_TOOLS"

// Require skips or fails t unless every named program is on PATH.
func Require(t testing.TB, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			Missing(t, n+" is not on PATH")
		}
	}
}

// Missing skips t with reason, or fails it when tools are required.
func Missing(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (required: %s=1)", reason, RequireEnv)
	}
	t.Skip(reason)
}

// RepoRoot returns the repository root (the directory holding go.mod),
// searching upward from the test's working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// SharedDir returns the shared data directory that sits beside the
// repository (../shared), skipping or failing when it is absent.
func SharedDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(filepath.Dir(RepoRoot(t)), "shared")
	if _, err := os.Stat(d); err != nil {
		Missing(t, "shared data directory "+d+" is missing")
	}
	return d
}

// Run runs a program and fails t with its output when it fails.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// RunJSON runs a program that prints one JSON document (a fixture reader
// such as a Node or Python script) and decodes its standard output into v.
// It fails t with the program's standard error when the program fails, and
// when the output does not decode.
func RunJSON(t testing.TB, v any, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		t.Fatalf("%s %s: output: %v", name, strings.Join(args, " "), err)
	}
}
