package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binPath is the bpconvert binary built once for the tests that run it as a
// process (signals, memory, exit codes as a shell sees them).
var binPath string

func TestMain(m *testing.M) {
	if os.Getenv(rssWrapEnv) == "1" {
		os.Exit(rssWrap())
	}
	dir, err := os.MkdirTemp("", "bpconvert-bin-")
	if err != nil {
		panic(err)
	}
	// Both programs, as make build makes them: bpconvert, and
	// bpconvert-lerobot beside it (built with libav), which bpconvert runs
	// for convert-lerobot.
	binPath = filepath.Join(dir, "bpconvert")
	for _, b := range [][]string{
		{"build", "-o", binPath, "."},
		{"build", "-tags", "lerobot", "-o", filepath.Join(dir, "bpconvert-lerobot"), "."},
	} {
		out, err := exec.Command("go", b...).CombinedOutput()
		if err != nil {
			os.Stderr.Write(out)
			panic(err)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	parquetFixtures.Cleanup()
	lerobotFixtures.Cleanup()
	lerobotBig.Cleanup()
	hfDiskFixtures.Cleanup()
	lanceGen.Cleanup()
	os.Exit(code)
}

// result is one finished bpconvert process.
type result struct {
	code           int
	stdout, stderr string
}

// bp runs the built binary without a terminal.
func bp(t *testing.T, args ...string) result {
	t.Helper()
	return runBin(t, nil, args...)
}

// runBin runs the built binary without a terminal, with env as its whole
// environment (nil: this process's).
func runBin(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, so.String(), se.String()}
}

// lastJSON parses stdout as exactly one JSON document on one line.
func lastJSON(t *testing.T, r result) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("stdout has %d lines, want 1 JSON line:\n%s", len(lines), r.stdout)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	return m
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
