package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestConvertersTable: the converters are the convert-* rows of the
// README's commands table, and each of them is wired alike: it is a
// command of the CLI with the same summary, it takes every flag the
// converters share, finalize knows its joiner, and docs/converters.md has
// its section. The CLI has no converter the table lacks.
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
			if _, ok := tableJoiners(name); !ok {
				t.Errorf("finalize has no joiner for %s", name)
			}
			if !regexp.MustCompile("(?m)^## .*: `" + name + " ").Match(docs) {
				t.Errorf("docs/converters.md has no section headed `%s ...`", name)
			}
		})
	}
	for name := range cli {
		t.Errorf("%s: a command of the CLI, missing from the README's table", name)
	}
}
