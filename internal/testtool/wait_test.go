package testtool

import (
	"testing"
	"time"
)

// TestWaitFor: a condition met after a few calls is waited for; one never
// met ends the wait after the timeout, having been called more than once.
func TestWaitFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		metAt   int // the call that first reports true; 0: never
		want    bool
		minimum int // calls made at least
	}{
		{"at once", 1, true, 1},
		{"on the fifth call", 5, true, 5},
		{"never", 0, false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			got := WaitFor(50*time.Millisecond, time.Millisecond, func() bool {
				calls++
				return c.metAt > 0 && calls >= c.metAt
			})
			if got != c.want || calls < c.minimum {
				t.Fatalf("WaitFor = %v after %d calls, want %v after at least %d", got, calls, c.want, c.minimum)
			}
			if c.want && calls != c.metAt {
				t.Fatalf("called %d times, want %d (no call after the condition was met)", calls, c.metAt)
			}
		})
	}
}
