package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// companion hands the converter command name over to its companion
// program prog (a build of this program that links the converter's
// engine, built with the tag that its name after "bpconvert-" says; see
// formats.Format.Companion), found beside the running
// executable or on PATH: this process is replaced with it, so the
// terminal, signals, exit code and output streams are the conversion's
// own. handled is false when the companion is missing and dryRun is set:
// the command then plans here, without the engine.
func (e *env) companion(name, prog string, dryRun bool) (handled bool, err error) {
	path, err := findProgram(name, prog)
	if err != nil && dryRun {
		return false, nil
	}
	if err != nil {
		// Not a failure a retry mends: exit 2, as for a missing setting.
		return true, &usageError{msg: err.Error(),
			hint: fmt.Sprintf("build it with `make build` (bin/%s) or `go build -tags %s -o %s ./cmd/bpconvert`, and keep it beside bpconvert", prog, strings.TrimPrefix(prog, "bpconvert-"), prog)}
	}
	if e.stdin != os.Stdin || terminal(e.stdout) != os.Stdout || terminal(e.stderr) != os.Stderr {
		return true, fmt.Errorf("%s: runs only as a command, with the process's own streams", name)
	}
	argv := append([]string{path, name}, e.args...)
	err = syscall.Exec(path, argv, os.Environ())
	return true, fmt.Errorf("%s: starting %s: %w", name, path, err)
}

// findProgram finds the program prog beside the running executable, else
// on PATH.
func findProgram(name, prog string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), prog)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(prog); err == nil {
		return p, nil
	}
	return "", errors.New(name + ": " + prog + " is not installed beside bpconvert or on PATH")
}
