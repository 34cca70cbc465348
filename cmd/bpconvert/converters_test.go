package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/formats"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestConvertersTable: the converters are the convert-* rows of the
// README's commands table and the entries of formats.All, and each of them
// is wired alike: its Format has the README's operands and summary, a
// joiner for finalize and a comparison for verify --against, it is a command of the CLI with the same summary,
// it takes every flag the converters share, and docs/converters.md has its
// section. Neither the CLI nor formats.All has a converter the table lacks.
func TestConvertersTable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(testtool.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join(testtool.RepoRoot(t), "docs", "converters.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(readme), "## Commands")
	if i < 0 {
		t.Fatal("README.md has no Commands section")
	}
	rows := regexp.MustCompile(`(?m)^(convert-[a-z]+) +(\S+ \S+) +(.+)$`).FindAllStringSubmatch(string(readme[i:]), -1)
	if len(rows) == 0 {
		t.Fatal("the README's commands table lists no converter")
	}
	cli := map[string]command{}
	for _, c := range commands() {
		if strings.HasPrefix(c.name, "convert-") {
			cli[c.name] = c
		}
	}
	listed := map[string]formats.Format{}
	for _, f := range formats.All {
		listed[f.Command] = f
	}
	shared := []string{"--dry-run", "--yes", "--restart", "--staging", "--part", "--ref-base", "--max-pack-bytes", "--max-members", "--no-manifest"}
	for _, row := range rows {
		name, args, summary := row[1], row[2], strings.TrimSpace(row[3])
		t.Run(name, func(t *testing.T) {
			c, ok := cli[name]
			if !ok {
				t.Fatalf("in the README's table, not a command of the CLI")
			}
			delete(cli, name)
			if c.args != args || c.summary != summary {
				t.Errorf("CLI %q %q, README %q %q", c.args, c.summary, args, summary)
			}
			r := bp(t, "help", name)
			for _, f := range shared {
				if !strings.Contains(r.stdout, "  "+f+" ") && !strings.Contains(r.stdout, "  "+f+"\n") {
					t.Errorf("help %s lacks %s", name, f)
				}
			}
			f, ok := listed[name]
			delete(listed, name)
			if !ok {
				t.Fatalf("in the README's table, not in formats.All")
			}
			if f.Args != args || f.Summary != summary || f.Joiner == nil || f.Against.IsZero() || f.Name == "" {
				t.Errorf("formats.All has %+v, README %q %q", f, args, summary)
			}
			if !regexp.MustCompile("(?m)^## .*: `" + name + " ").Match(docs) {
				t.Errorf("docs/converters.md has no section headed `%s ...`", name)
			}
		})
	}
	for name := range cli {
		t.Errorf("%s: a command of the CLI, missing from the README's table", name)
	}
	for name := range listed {
		t.Errorf("%s: in formats.All, missing from the README's table", name)
	}
}
