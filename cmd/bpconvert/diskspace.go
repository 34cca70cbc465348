package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/bpconvert/bpconvert/plan"
)

// spaceWarning returns a warning when the file system that will hold a
// run's output has less room than the plan's estimate of it (the source's
// size: payloads are copied unchanged), or "" when there is room or either
// figure is unknown. For an s3:// destination the local staging holds at
// most a few shards at a time, so the estimate there is bounded by them.
func spaceWarning(cf *convertFlags, p plan.Plan) string {
	need := p.Source.Bytes
	if need <= 0 || cf.dest == nil {
		return ""
	}
	dir := cf.dest.Location()
	if cf.dest.Remote() {
		dir = cf.staging
		if dir == "" {
			dir = os.TempDir()
		}
		if s := int64(cf.maxPackBytes); s > 0 {
			need = min(need, 3*s)
		}
	}
	at, free := freeSpace(dir)
	if free < 0 || free >= need {
		return ""
	}
	return fmt.Sprintf("%s has %s free and this run needs about %s there: it may stop when the disk is full (nothing it wrote is left behind then)",
		at, plan.HumanBytes(free), plan.HumanBytes(need))
}

// freeSpace returns the nearest existing directory at or above dir and
// the bytes free to an unprivileged user on its file system (-1 when it
// cannot be told).
func freeSpace(dir string) (string, int64) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return dir, -1
	}
	for {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d, statFree(d)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return d, -1
		}
		d = parent
	}
}

// diskFull explains a run that stopped because its file system filled up:
// where, how much is free now, and that the run's temporary output is
// gone; err when the run did not stop for that reason.
func diskFull(err error, cf *convertFlags) error {
	if !errors.Is(err, syscall.ENOSPC) || cf == nil || cf.dest == nil {
		return err
	}
	dir := cf.dest.Location()
	if cf.dest.Remote() {
		if dir = cf.staging; dir == "" {
			dir = os.TempDir()
		}
	}
	at, free := freeSpace(dir)
	msg := fmt.Sprintf("the file system of %s is full", at)
	if free >= 0 {
		msg += fmt.Sprintf(" (%s free now)", plan.HumanBytes(free))
	}
	return &hintError{err: fmt.Errorf("%s: %w", msg, err),
		hint: "the run's temporary output was removed; free some space there (or choose a destination on another file system, or --staging for object storage) and run the same command again"}
}
