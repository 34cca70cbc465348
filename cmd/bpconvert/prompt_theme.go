package main

import (
	"io"

	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// promptTheme is the prompts' look on the terminal w: huh's own, except
// where w shows no colour (NO_COLOR set, or a terminal without colours).
// There the focused button of a Yes/No question, which colour alone marks
// in huh's themes, is marked in text too ([ Yes ]  No), so the choice
// Enter takes stays visible. Selects mark their cursor (>) and chosen
// options (✓) in text already.
func promptTheme(w io.Writer) *huh.Theme {
	t := huh.ThemeCharm()
	if lipgloss.NewRenderer(w).ColorProfile() != termenv.Ascii {
		return t
	}
	focused := lipgloss.NewStyle().MarginRight(1).Transform(func(s string) string { return "[ " + s + " ]" })
	blurred := lipgloss.NewStyle().MarginRight(1).Transform(func(s string) string { return "  " + s + "  " })
	for _, s := range []*huh.FieldStyles{&t.Focused, &t.Blurred} {
		s.FocusedButton, s.BlurredButton, s.Next = focused, blurred, focused
	}
	return t
}
