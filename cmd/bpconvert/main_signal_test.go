package main

import (
	"syscall"
	"testing"
	"time"
)

// TestSignalGrace: after SIGTERM the context is cancelled at once; a run
// that does not return within the grace period is ended with exit 143, and
// a second signal ends it without waiting. A run that returns in time is
// not ended.
func TestSignalGrace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grace   time.Duration
		second  bool
		returns bool
	}{
		{"blocked run", 100 * time.Millisecond, false, false},
		{"second signal", time.Hour, true, false},
		{"run returns", 300 * time.Millisecond, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exited := make(chan int, 1)
			ctx, stop := signalContext(tc.grace, func(code int) { exited <- code })
			start := time.Now()
			syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the context was not cancelled")
			}
			if tc.second {
				syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
			}
			if tc.returns {
				stop()
				select {
				case code := <-exited:
					t.Fatalf("exit(%d) after the run returned", code)
				case <-time.After(2 * tc.grace):
				}
				return
			}
			defer stop()
			select {
			case code := <-exited:
				if code != 143 {
					t.Fatalf("exit(%d), want 143", code)
				}
				if !tc.second && time.Since(start) < tc.grace {
					t.Fatalf("exit before the grace period")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("never exited")
			}
		})
	}
}
