package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/stage"
)

// Exit codes, a documented contract (see usage).
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInvalid     = 3
	exitInterrupted = 130 // SIGINT; SIGTERM gives 143
)

// interrupted is the cancellation cause set by a signal.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return "interrupted (" + signalName(i.sig) + ")" }

// signalName is a signal's conventional name (SIGTERM), for messages.
func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// Is makes SIGINT and SIGTERM ask a converter to keep its complete staged
// shards (convert.ErrKeepStaged): a person at a terminal stops an
// hours-long conversion with Ctrl-C, schedulers (Airflow, Kubernetes,
// Slurm) send SIGTERM to a task they will run again, and in both cases the
// same command resumes. --restart discards what was kept.
func (i interrupted) Is(target error) bool {
	return target == convert.ErrKeepStaged && (i.sig == syscall.SIGINT || i.sig == syscall.SIGTERM)
}

// keptError is an interrupted conversion that left its complete shards
// staged for a rerun to resume.
type keptError struct {
	err     error
	staging string
	shards  int
}

func (e *keptError) Error() string { return e.err.Error() }
func (e *keptError) Unwrap() error { return e.err }

// usageError is a command line the program refuses: exit 2.
type usageError struct {
	msg  string
	hint string
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{msg: fmt.Sprintf(format, a...)} }

// inputError marks bad input data: exit 3.
type inputError struct {
	err  error
	hint string
}

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// hintError carries a hint for a failure that is not about input.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

// exitCode maps an error to the documented exit code. It is the only place
// that does.
func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	var intr interrupted
	if errors.As(context.Cause(ctx), &intr) {
		return 128 + int(intr.sig)
	}
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	if errors.Is(err, errAborted) {
		return exitFailure
	}
	if errors.Is(err, objstore.ErrUnavailable) || errors.Is(err, objstore.ErrChanged) {
		// A store that failed, or an object replaced while it was read, is
		// not bad input, whatever was being read: a rerun may succeed.
		return exitFailure
	}
	for _, target := range []error{objstore.ErrBadLocation, objstore.ErrSetting, objstore.ErrDenied, objstore.ErrNoBucket} {
		// Usage, in whatever direction the location was named.
		if errors.Is(err, target) {
			return exitUsage
		}
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	var ce *convert.UsageError
	if errors.As(err, &ce) {
		return exitUsage
	}
	var ie *inputError
	if errors.As(err, &ie) || errors.Is(err, convert.ErrInvalidInput) {
		return exitInvalid
	}
	for _, target := range []error{stage.ErrExists, stage.ErrOverlap, packcore.ErrNotEmpty} {
		if errors.Is(err, target) {
			return exitUsage
		}
	}
	for _, target := range []error{packcore.ErrInvalidKey, packcore.ErrDuplicateKey, packcore.ErrFormat, packcore.ErrNotRef, srcfile.ErrNotRegular} {
		if errors.Is(err, target) {
			return exitInvalid
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return exitInvalid
	}
	return exitFailure
}

// hintFor returns the hint attached to err, if any.
func hintFor(err error) string {
	if h, ok := kindHintOf(err); ok {
		return h
	}
	var ue *usageError
	if errors.As(err, &ue) && ue.hint != "" {
		return ue.hint
	}
	var ie *inputError
	if errors.As(err, &ie) && ie.hint != "" {
		return ie.hint
	}
	var he *hintError
	if errors.As(err, &he) {
		return he.hint
	}
	var ke *keptError
	if errors.As(err, &ke) {
		return "rerun the same command to resume from the kept shards; add --restart (or remove " + ke.staging + ") to discard them"
	}
	if h := convert.Hint(err); h != "" {
		return h
	}
	if errors.Is(err, stage.ErrExists) || errors.Is(err, packcore.ErrNotEmpty) {
		return "packs are immutable: choose a new destination directory"
	}
	if errors.Is(err, stage.ErrBusy) {
		return "another run is writing this destination: rerun when it has finished (a rerun of the same command then finds its work done or adds to it)"
	}
	if errors.Is(err, stage.ErrOverlap) {
		return "choose a destination outside the source directory"
	}
	if errors.Is(err, objstore.ErrBadLocation) {
		return "name object storage as s3://BUCKET/PREFIX, with credentials in the environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) or a profile (AWS_PROFILE), never in the location"
	}
	if errors.Is(err, objstore.ErrSetting) {
		if strings.Contains(err.Error(), "BPCONVERT_S3_") {
			return "set " + objstore.EnvTimeout + " and " + objstore.EnvConnectTimeout + " to durations such as 30s, or unset them for the defaults"
		}
		return "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE naming a profile of the shared config and credentials files"
	}
	if errors.Is(err, objstore.ErrChanged) {
		return "rerun the same command to convert the object's current version"
	}
	if errors.Is(err, objstore.ErrDenied) {
		return "check the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, the shared credentials file) and the endpoint (AWS_ENDPOINT_URL_S3)"
	}
	if errors.Is(err, objstore.ErrNoBucket) {
		return "create the bucket, or correct its name or the endpoint (AWS_ENDPOINT_URL_S3)"
	}
	if errors.Is(err, objstore.ErrUnavailable) {
		return "rerun the same command once the store answers: a run into object storage resumes from the shards it holds"
	}
	return ""
}
