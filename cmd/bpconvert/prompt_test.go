package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPromptFocusWithoutColour drives the prompts on a terminal without
// colour (NO_COLOR, and TERM=dumb): the screen's plain text must show
// which choice has the focus. Moving the focus between Yes and No changes
// the text of the buttons' line, and the multi-select marks its cursor.
func TestPromptFocusWithoutColour(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives a terminal; skipped with -short")
	}
	src := filepath.Join(parquetFixtureRoot(t), "plain", "part-00000.parquet")
	t.Run("NO_COLOR", func(t *testing.T) {
		t.Parallel()
		dst := filepath.Join(t.TempDir(), "out")
		r := startTmuxEnv(t, []string{"NO_COLOR=1"}, "convert-parquet", src, dst)
		r.waitFor("Which columns hold payloads")
		if s := r.screen(); !strings.Contains(s, "> • ") && !strings.Contains(s, "> ✓ ") {
			t.Fatalf("the multi-select shows no cursor:\n%s", s)
		}
		r.keys("x", "Enter")
		r.waitFor("Proceed with this plan?")
		first := buttonsLine(t, r.screen())
		r.keys("Left")
		second := buttonsLine(t, r.screen())
		if first == second {
			t.Fatalf("moving the focus leaves the buttons' text unchanged: %q", first)
		}
		// The marker is on the button that Enter chooses.
		if !focusedYes(first, second) {
			r.keys("Right")
		}
		r.keys("Enter")
		if code := r.exitCode(); code != 0 {
			t.Fatalf("exit %d after choosing the button marked Yes (%q, then %q):\n%s", code, first, second, r.screen())
		}
	})
	// A dumb terminal gets huh's line-by-line prompts: numbered options,
	// the chosen ones ticked, and the default answer in capitals.
	t.Run("TERM=dumb", func(t *testing.T) {
		t.Parallel()
		dst := filepath.Join(t.TempDir(), "out")
		r := startTmuxEnv(t, []string{"TERM=dumb"}, "convert-parquet", src, dst)
		r.waitFor("Which columns hold payloads")
		r.keys("1", "Enter")
		r.waitFor("1. ✓ jpg")
		r.keys("0", "Enter")
		r.waitFor("Proceed with this plan? [y/N]")
		r.keys("y", "Enter")
		if code := r.exitCode(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, r.screen())
		}
	})
}

// buttonsLine is the screen's line holding the Yes and No buttons.
func buttonsLine(t *testing.T, screen string) string {
	t.Helper()
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "Yes") && strings.Contains(l, "No") {
			return strings.TrimRight(l, " ")
		}
	}
	t.Fatalf("no Yes/No line on the screen:\n%s", screen)
	return ""
}

// focusedYes reports whether, in line b, the focus marker stands by Yes:
// of the two renderings, the one where the text around "Yes" differs
// from a (where the other button had the focus).
func focusedYes(a, b string) bool {
	ya, yb := strings.Index(a, "Yes"), strings.Index(b, "Yes")
	around := func(l string, i int) string { return l[max(0, i-2):min(len(l), i+5)] }
	return around(b, yb) != around(a, ya) && strings.ContainsAny(around(b, yb), "[>*")
}
