package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestBarFigures drives the terminal bar with a clock of its own: the
// figures beside it give bytes and items done and in all in binary units,
// no rate in the first second (the first update is where the rate is
// measured from, so the first chunk cannot make a spike), then the rate
// and the time left; and the bar stays below 100 % while the run goes on.
func TestBarFigures(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	b := &barCounter{label: "convert", w: &out, now: func() time.Time { return now }}
	b.SetTotal(700, 2<<30)
	b.Add(1, 64<<20) // a first chunk at once: no rate yet
	if got := b.figures(now); got != "convert: 64.0 MiB of 2.0 GiB, 1 of 700 items" {
		t.Fatalf("at the start: %q", got)
	}
	now = now.Add(500 * time.Millisecond)
	b.Add(10, 64<<20)
	if got := b.figures(now); strings.Contains(got, "/s") {
		t.Fatalf("a rate before a second has passed: %q", got)
	}
	now = now.Add(1500 * time.Millisecond)
	b.Add(300, 128<<20)
	// 192 MiB in 2 s since the first update: 96 MiB/s; 1.75 GiB left.
	if got, want := b.figures(now), "convert: 256.0 MiB of 2.0 GiB, 311 of 700 items, 96.0 MiB/s, 19s left"; got != want {
		t.Fatalf("figures %q, want %q", got, want)
	}
	b.Add(389, (2<<30)-(256<<20))
	if b.bar.IsFinished() || b.bar.State().CurrentPercent >= 1 {
		t.Fatalf("the bar reached 100 %% before the run ended: %+v", b.bar.State())
	}
	if strings.Contains(out.String(), "100%") {
		t.Fatalf("the bar showed 100 %%:\n%q", out.String())
	}
}
