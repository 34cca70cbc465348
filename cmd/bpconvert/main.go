// Command bpconvert migrates machine-learning datasets into blob packs and
// packs, lists, verifies and unpacks them. Run "bpconvert --help".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// A closed stdout (bpconvert ls | head) surfaces as EPIPE from Write,
	// which commands treat as the reader having seen enough.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext returns a context cancelled by SIGINT or SIGTERM, with the
// signal as its cause.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if sig, ok := <-ch; ok {
			cancel(interrupted{sig.(syscall.Signal)})
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}
