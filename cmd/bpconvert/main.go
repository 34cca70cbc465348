// Command bpconvert migrates machine-learning datasets into blob packs and
// packs, lists, verifies and unpacks them. Run "bpconvert --help".
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// stopGrace is how long a run has to stop after SIGINT or SIGTERM before
// the process exits regardless (see signalContext).
const stopGrace = 10 * time.Second

func main() {
	// A closed stdout (bpconvert ls | head) surfaces as EPIPE from Write,
	// which commands treat as the reader having seen enough.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signalContext(stopGrace, func(code int) {
		fmt.Fprintf(os.Stderr, "bpconvert: interrupted; the run did not stop within %s, exiting (a staging directory may be left: the next run removes or resumes it)\n", stopGrace)
		os.Exit(code)
	})
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext returns a context cancelled by SIGINT or SIGTERM, with the
// signal as its cause. Every read and write a run makes stops on the
// context; should one block anyway, exit is called with 128+signal once
// grace has passed after the signal, or at once on a second signal, so a
// signal always ends the process.
func signalContext(grace time.Duration, exit func(code int)) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	done := make(chan struct{})
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		var sig os.Signal
		select {
		case sig = <-ch:
		case <-done:
			return
		}
		cancel(interrupted{sig.(syscall.Signal)})
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ch:
		case <-done:
			return
		}
		exit(128 + int(sig.(syscall.Signal)))
	}()
	return ctx, func() { signal.Stop(ch); close(done); cancel(nil) }
}
