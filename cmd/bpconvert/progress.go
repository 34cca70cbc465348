package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// statusEvery is the longest silence between status lines off a terminal.
const statusEvery = 30 * time.Second

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	if b, ok := w.(*barSafe); ok {
		w = b.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress returns the counter a command hands to libraries: a bar on
// stderr when it is a terminal, plain status lines otherwise (no carriage
// returns: one line per milestone, at most one status line every 30 s),
// nothing under --quiet or --json on a non-terminal... (--json keeps stderr
// messages: stdout carries the document).
func (e *env) newProgress(label string) progress.Counter {
	if e.quiet {
		return progress.Nop{}
	}
	if isTerminal(e.stderr) {
		b := &barCounter{label: label, w: terminal(e.stderr)}
		e.bars = append(e.bars, b)
		return b
	}
	return &logCounter{label: label, w: e.stderr, last: time.Now(), now: time.Now}
}

// barCounter draws a progress bar with what people read off it: bytes
// done and in all (binary units, as everywhere else), items done and in
// all, the rate and the time left. The rate is measured from the first
// update, and only once a second has passed (no start-up spike); the bar
// stays below 100 % until the run ends (the summary follows it).
type barCounter struct {
	label string
	w     io.Writer
	bar   *progressbar.ProgressBar
	now   func() time.Time

	mu                sync.Mutex
	items, totalItems int64
	bytes, totalBytes int64
	first             time.Time // the first update, where the rate is measured from
	firstBytes        int64
	described         time.Time
	// shown is set while the bar may be on the screen (see clearBars).
	shown atomic.Bool
}

// describeEvery is how often the bar's figures are recomputed.
const describeEvery = 200 * time.Millisecond

func (b *barCounter) SetTotal(items, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.totalItems, b.totalBytes = items, bytes
	max := bytes
	if bytes > 0 {
		max = bytes + 1 // 100 % only when the run has ended
	}
	b.bar = progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription(b.label),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(24),
	)
}

func (b *barCounter) Add(items, bytes int64) {
	if b.bar == nil {
		b.SetTotal(-1, -1)
	}
	b.mu.Lock()
	now := b.clock()
	b.items += items
	b.bytes += bytes
	if b.first.IsZero() {
		// The first chunk took an unknown time before it came: the rate
		// counts what came after it.
		b.first, b.firstBytes = now, b.bytes
	}
	if now.Sub(b.described) >= describeEvery {
		b.described = now
		b.bar.Describe(b.figures(now))
	}
	b.mu.Unlock()
	b.bar.Add64(bytes)
	b.shown.Store(true)
}

func (b *barCounter) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

// figures is the text beside the bar: "convert: 1.2 GiB of 2.6 GiB, 312 of
// 700 items, 85.0 MiB/s, 16s left".
func (b *barCounter) figures(now time.Time) string {
	parts := []string{plan.HumanBytes(b.bytes)}
	if b.totalBytes > 0 {
		parts[0] += " of " + plan.HumanBytes(b.totalBytes)
	}
	if b.totalItems > 0 {
		parts = append(parts, plan.Thousands(b.items)+" of "+plan.CountText(b.totalItems, "items"))
	} else if b.items > 0 {
		parts = append(parts, plan.CountText(b.items, "items"))
	}
	if d := now.Sub(b.first); d >= time.Second && b.bytes > b.firstBytes {
		rate := float64(b.bytes-b.firstBytes) / d.Seconds()
		parts = append(parts, plan.HumanBytes(int64(rate))+"/s")
		if b.totalBytes > b.bytes {
			left := time.Duration(float64(b.totalBytes-b.bytes) / rate * float64(time.Second))
			parts = append(parts, left.Round(time.Second).String()+" left")
		}
	}
	return b.label + ": " + strings.Join(parts, ", ")
}

func (b *barCounter) Milestone(msg string) {
	if b.bar != nil {
		b.bar.Clear()
	}
	fmt.Fprintln(b.w, "bpconvert: "+msg)
	if b.bar != nil {
		b.bar.RenderBlank()
		b.shown.Store(true)
	}
}

// clearBars erases any progress bar drawn on the terminal, so that the
// messages printed after a run (an error, an interruption) start on a
// fresh line instead of after the bar.
func (e *env) clearBars() {
	for _, b := range e.bars {
		if b.shown.Swap(false) && b.bar != nil && !b.bar.IsFinished() {
			b.bar.Clear()
		}
	}
}

// barSafe is stdout or stderr on a terminal where a progress bar may be
// drawn: a write first erases the bar, so that a message or a plan starts
// on a fresh line (the bar comes back with its next update).
type barSafe struct {
	w io.Writer
	e *env
}

func (b *barSafe) Write(p []byte) (int, error) {
	b.e.clearBars()
	return b.w.Write(p)
}

// terminal returns the stream under a barSafe (the bar and prompts draw on
// it directly).
func terminal(w io.Writer) io.Writer {
	if b, ok := w.(*barSafe); ok {
		return b.w
	}
	return w
}

// logCounter writes plain lines for logs (Airflow, CI, pipes).
type logCounter struct {
	label                  string
	w                      io.Writer
	items, bytes           int64
	totalItems, totalBytes int64
	last                   time.Time
	now                    func() time.Time
}

func (l *logCounter) SetTotal(items, bytes int64) { l.totalItems, l.totalBytes = items, bytes }

func (l *logCounter) Add(items, bytes int64) {
	l.items += items
	l.bytes += bytes
	if t := l.now(); t.Sub(l.last) >= statusEvery {
		l.last = t
		l.status()
	}
}

func (l *logCounter) status() {
	line := fmt.Sprintf("bpconvert: %s: %s items, %s", l.label, plan.Thousands(l.items), plan.HumanBytes(l.bytes))
	if l.totalBytes > 0 {
		line += fmt.Sprintf(" of %s (%d%%)", plan.HumanBytes(l.totalBytes), l.bytes*100/l.totalBytes)
	}
	fmt.Fprintln(l.w, line)
}

func (l *logCounter) Milestone(msg string) {
	fmt.Fprintln(l.w, "bpconvert: "+msg)
}
