// Package workpool runs a known number of jobs on a bounded number of
// goroutines and stops handing them out at the first failure: the pattern
// behind multipart uploads and copies, and the copies of many objects at
// once.
//
// It is not a queue that outlives a call, and it does not order results:
// jobs write their results into slots of their own (by index).
package workpool

import (
	"context"
	"sync"
)

// Run calls job for every i in [0, n), on at most workers goroutines at
// once (one when workers is below one). The ctx a job gets is cancelled
// when a job fails or ctx ends; no job starts after that but the ones
// already handed out, and Run returns, once every running job has
// returned, the error of the job that failed first, or nil.
//
// Jobs not started because ctx ended are not an error here: a caller that
// must run every job checks ctx.Err() after Run returns nil.
func Run(ctx context.Context, n, workers int, job func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	next := make(chan int)
	for range min(max(workers, 1), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := job(ctx, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return firstErr
}
