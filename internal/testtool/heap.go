package testtool

import (
	"runtime/metrics"
	"sync"
	"time"
)

// HeapPeak samples the bytes of live and not yet swept heap objects every
// millisecond until stop is called, which returns the highest sample: a
// test's measure of the memory a piece of work holds at its peak.
func HeapPeak() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var mu sync.Mutex
	var peak uint64
	sample := func() {
		mu.Lock()
		defer mu.Unlock()
		metrics.Read(s)
		peak = max(peak, s[0].Value.Uint64())
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		sample()
		return peak
	}
}
