package testtool

import "time"

// WaitFor calls done until it reports true, sleeping interval between calls,
// and says whether it did before timeout passed. Tests use it to wait, with
// a bound, for what another process or goroutine makes (a staged shard, a
// line on a screen, a freed region), so that a run that stalls fails the
// test instead of hanging it. done is called at least once, and once more
// after the deadline, so a condition met just in time is not missed.
func WaitFor(timeout, interval time.Duration, done func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if done() {
			return true
		}
		if time.Now().After(deadline) {
			return done()
		}
		time.Sleep(interval)
	}
}
