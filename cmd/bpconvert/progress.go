package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/bpconvert/bpconvert/progress"
)

// statusEvery is the longest silence between status lines off a terminal.
const statusEvery = 30 * time.Second

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
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
		return &barCounter{label: label, w: e.stderr}
	}
	return &logCounter{label: label, w: e.stderr, last: time.Now(), now: time.Now}
}

// barCounter draws a byte-based progress bar.
type barCounter struct {
	label        string
	w            io.Writer
	bar          *progressbar.ProgressBar
	items, total int64
}

func (b *barCounter) SetTotal(items, bytes int64) {
	b.total = items
	b.bar = progressbar.NewOptions64(bytes,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetDescription(b.label),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(b.w) }),
	)
}

func (b *barCounter) Add(items, bytes int64) {
	if b.bar == nil {
		b.SetTotal(-1, -1)
	}
	b.items += items
	b.bar.Add64(bytes)
}

func (b *barCounter) Milestone(msg string) {
	if b.bar != nil {
		b.bar.Clear()
	}
	fmt.Fprintln(b.w, "bpconvert: "+msg)
	if b.bar != nil {
		b.bar.RenderBlank()
	}
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
	line := fmt.Sprintf("bpconvert: %s: %s items, %s", l.label, thousands(l.items), humanBytes(l.bytes))
	if l.totalBytes > 0 {
		line += fmt.Sprintf(" of %s (%d%%)", humanBytes(l.totalBytes), l.bytes*100/l.totalBytes)
	}
	fmt.Fprintln(l.w, line)
}

func (l *logCounter) Milestone(msg string) {
	fmt.Fprintln(l.w, "bpconvert: "+msg)
}

// humanBytes renders a size with base-1024 units and one decimal.
func humanBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		if v < 1024 || u == "TiB" {
			return fmt.Sprintf("%.1f %s", v, u)
		}
	}
	return ""
}

// thousands renders n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}
