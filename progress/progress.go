// Package progress is the narrow interface through which libraries report
// how far a long job has come. Libraries call a Counter and never print; the
// CLI decides whether that becomes a bar on a terminal or periodic log lines.
// It holds no rendering code.
package progress

// Counter receives progress reports. Implementations must be safe for use
// from one goroutine at a time; callers do not report concurrently.
type Counter interface {
	// SetTotal announces the expected totals; a negative value is unknown.
	SetTotal(items, bytes int64)
	// Add reports finished work.
	Add(items, bytes int64)
	// Milestone reports a notable step, such as a finished shard, in words.
	Milestone(msg string)
}

// Nop is a Counter that discards everything.
type Nop struct{}

// SetTotal does nothing.
func (Nop) SetTotal(items, bytes int64) {}

// Add does nothing.
func (Nop) Add(items, bytes int64) {}

// Milestone does nothing.
func (Nop) Milestone(string) {}

// OrNop returns c, or Nop when c is nil.
func OrNop(c Counter) Counter {
	if c == nil {
		return Nop{}
	}
	return c
}
