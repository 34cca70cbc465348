//go:build !lerobot

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	flag "github.com/spf13/pflag"
)

// lerobotBinary is the companion program that runs convert-lerobot. It is
// the same command-line program built with the "lerobot" tag, which links
// libav (through go-astiav) for packet-level video work. Keeping libav out of
// bpconvert itself keeps every other command free of libav's start-up cost
// (about 60 MiB of resident memory and 0.3 s for its shared libraries).
const lerobotBinary = "bpconvert-lerobot"

// runLerobot replaces this process with bpconvert-lerobot, found beside the
// running executable or on PATH, so the terminal, signals, exit code and
// output streams are the conversion's own. Without the companion, a dry
// run plans here, from the dataset's metadata (the camera files are not
// probed: that needs libav).
func runLerobot(ctx context.Context, e *env, fset *flag.FlagSet, o *lerobotFlags, pos []string) (any, error) {
	path, err := findLerobot()
	if err != nil && o.cf.dryRun {
		return o.run(ctx, e, fset, pos, nil)
	}
	if err != nil {
		// Not a failure a retry mends: exit 2, as for a missing setting.
		return nil, &usageError{msg: err.Error(),
			hint: "build it with `make build` (bin/bpconvert-lerobot) or `go build -tags lerobot -o bpconvert-lerobot ./cmd/bpconvert`, and keep it beside bpconvert"}
	}
	if e.stdin != os.Stdin || terminal(e.stdout) != os.Stdout || terminal(e.stderr) != os.Stderr {
		return nil, errors.New("convert-lerobot: runs only as a command, with the process's own streams")
	}
	argv := append([]string{path, "convert-lerobot"}, e.args...)
	err = syscall.Exec(path, argv, os.Environ())
	return nil, fmt.Errorf("convert-lerobot: starting %s: %w", path, err)
}

func findLerobot() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), lerobotBinary)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(lerobotBinary); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("convert-lerobot: %s is not installed beside bpconvert or on PATH", lerobotBinary)
}
