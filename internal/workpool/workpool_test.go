package workpool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRunsEveryJobOnce checks that every index is run exactly once and
// never on more goroutines than asked for.
func TestRunsEveryJobOnce(t *testing.T) {
	cases := []struct{ n, workers int }{
		{0, 4}, {1, 4}, {3, 1}, {100, 3}, {5, 0}, {7, 100},
	}
	for _, c := range cases {
		var (
			mu      sync.Mutex
			counts  = make([]int, c.n)
			running atomic.Int32
			most    atomic.Int32
		)
		err := Run(context.Background(), c.n, c.workers, func(ctx context.Context, i int) error {
			now := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			mu.Lock()
			counts[i]++
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatalf("n %d, workers %d: %v", c.n, c.workers, err)
		}
		for i, k := range counts {
			if k != 1 {
				t.Fatalf("n %d, workers %d: job %d ran %d times", c.n, c.workers, i, k)
			}
		}
		if limit := int32(max(c.workers, 1)); most.Load() > limit {
			t.Fatalf("n %d, workers %d: %d jobs ran at once", c.n, c.workers, most.Load())
		}
	}
}

// TestFirstFailureStops checks that the failing job's error is returned and
// that every job handed out after it gets a cancelled context (one worker:
// jobs run one after another).
func TestFirstFailureStops(t *testing.T) {
	boom := errors.New("boom")
	var late []int
	err := Run(context.Background(), 1000, 1, func(ctx context.Context, i int) error {
		if i > 5 && ctx.Err() == nil {
			late = append(late, i)
		}
		if i == 5 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want %v", err, boom)
	}
	if len(late) > 0 {
		t.Fatalf("jobs %v ran after the failure with a live context", late)
	}
}

// TestCancelledContext checks that a cancelled ctx is not reported as a job
// failure and that no job runs with a live context.
func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var live atomic.Int32
	err := Run(ctx, 100, 4, func(ctx context.Context, i int) error {
		if ctx.Err() == nil {
			live.Add(1)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run: %v, want nil (the caller checks ctx)", err)
	}
	if live.Load() != 0 {
		t.Fatalf("%d jobs ran with a live context after ctx was cancelled", live.Load())
	}
}
