// Package converttest holds what the tests of every converter share: the
// destination of a test run parsed as the CLI parses it. It is for tests,
// not for programs.
package converttest

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/progress"
)

// Dest parses dst (a local path or s3://BUCKET/PREFIX) as a run's
// destination with the default staging; a failure fails the test.
func Dest(t testing.TB, dst string) convert.Dest {
	t.Helper()
	d, err := convert.ParseDest(dst, "")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// RunBeforePlan checks the last rule of the Job contract on a job just
// made: its Run, called before any Plan, fails with convert.ErrNotPlanned
// and leaves nothing at dst (a local path).
func RunBeforePlan(t testing.TB, job convert.Job, dst string) {
	t.Helper()
	_, err := job.Run(t.Context(), progress.Nop{})
	if !errors.Is(err, convert.ErrNotPlanned) {
		t.Fatalf("Run before Plan: %v, want convert.ErrNotPlanned", err)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Run before Plan left %s: %v", dst, err)
	}
}
