package testtool

import (
	"os"
	"strings"
	"testing"
)

// DocBlock is one fenced code block of a Markdown file.
type DocBlock struct {
	// Line is the line number of the opening fence (1-based).
	Line int
	// Lang is the fence's info string ("sh", "python", "" for none).
	Lang string
	// Text is the block's content, ending in a newline.
	Text string
}

// DocBlocks returns the fenced code blocks of the Markdown file at path,
// in order, from the section whose heading line is section (for example
// "## Convert, verify, read") to the next heading of the same or a higher
// level; section "" takes the whole file. It fails t when the file or the
// section is missing, or when a fence is left open.
func DocBlocks(t testing.TB, path, section string) []DocBlock {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	in := section == ""
	level := strings.IndexFunc(section, func(r rune) bool { return r != '#' })
	found := in
	var out []DocBlock
	var cur *DocBlock
	for i, l := range lines {
		if cur != nil {
			if strings.TrimSpace(l) == "```" {
				out = append(out, *cur)
				cur = nil
				continue
			}
			cur.Text += l + "\n"
			continue
		}
		if strings.HasPrefix(l, "#") && section != "" {
			lv := strings.IndexFunc(l, func(r rune) bool { return r != '#' })
			switch {
			case strings.TrimSpace(l) == section:
				in, found = true, true
				continue
			case in && lv > 0 && lv <= level:
				in = false
			}
		}
		if in && strings.HasPrefix(l, "```") {
			cur = &DocBlock{Line: i + 1, Lang: strings.TrimSpace(strings.TrimPrefix(l, "```"))}
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a code block is not closed", path, cur.Line)
	}
	if !found {
		t.Fatalf("%s: no section %q", path, section)
	}
	return out
}
