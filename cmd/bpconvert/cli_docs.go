package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cpuguy83/go-md2man/v2/md2man"
	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
)

// The reference in docs/commands.md and the man pages are rendered from the
// command table and its flags, as help is: one definition, three views.

// Markers around the generated part of docs/commands.md.
const (
	referenceBegin = "<!-- BEGIN command reference: written by `make docs-gen` from the command definitions in cmd/bpconvert; edit those, not this section -->"
	referenceEnd   = "<!-- END command reference -->"
)

// manCommand is the hidden `bpconvert man DIR`, which writes the section-1
// man pages (bpconvert.1 and bpconvert-COMMAND.1) into DIR for packaging.
func (e *env) manCommand(out *outcome) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "write the section-1 man pages into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			out.name, out.err = "man", writeManPages(args[0])
			return nil
		},
	}
}

// docCommand is one command with its flags, as the generated docs show it.
type docCommand struct {
	*command
	flags *flag.FlagSet
}

// docCommands returns the visible commands with their flags, defined as a
// run would define them.
func docCommands() []docCommand {
	var out outcome
	e := &env{getenv: func(string) string { return "" }}
	root := e.tree(context.Background(), &out)
	var docs []docCommand
	for _, c := range commands() {
		if c.hidden {
			continue
		}
		sub, _, err := root.Find([]string{c.name})
		if err != nil {
			panic(err) // every table command is in the tree
		}
		docs = append(docs, docCommand{command: &c, flags: sub.Flags()})
	}
	return docs
}

// flagList writes fs's flags as a markdown list.
func flagList(b *strings.Builder, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if f.Hidden {
			return
		}
		name, text := flagText(f)
		fmt.Fprintf(b, "- `%s`: %s\n", name, strings.Join(strings.Fields(text), " "))
	})
}

// referenceMarkdown is the command reference of docs/commands.md, between
// and including its markers.
func referenceMarkdown() string {
	var b strings.Builder
	b.WriteString(referenceBegin + "\n\n## Command reference\n\n")
	b.WriteString("Every command takes `--json`, `--quiet` and `--summary-file PATH`; single-dash spellings\n" +
		"(`-json`) work too. `bpconvert help COMMAND` prints the same text as this section.\n")
	for _, c := range docCommands() {
		fmt.Fprintf(&b, "\n### `%s`\n\n`%s`\n\n%s.\n", c.name, usageLine(c.command), capitalize(c.summary))
		if c.long != "" {
			fmt.Fprintf(&b, "\n%s\n", strings.Join(strings.Fields(c.long), " "))
		}
		if len(c.examples) > 0 {
			fmt.Fprintf(&b, "\n```text\n%s\n```\n", strings.Join(c.examples, "\n"))
		}
		b.WriteString("\n")
		flagList(&b, c.flags)
	}
	b.WriteString("\n### Shell completion\n\n```text\n" +
		"bpconvert completion bash > /etc/bash_completion.d/bpconvert\n" +
		"bpconvert completion zsh > \"${fpath[1]}/_bpconvert\"\n" +
		"bpconvert completion fish > ~/.config/fish/completions/bpconvert.fish\n" +
		"bpconvert completion powershell > bpconvert.ps1\n```\n")
	b.WriteString("\n### Environment\n\n")
	for _, v := range environment() {
		fmt.Fprintf(&b, "- `%s`: %s\n", strings.ReplaceAll(v.name, ", ", "`, `"), v.text)
	}
	b.WriteString("\n" + referenceEnd + "\n")
	return b.String()
}

// capitalize upper-cases s's first letter.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// withReference returns doc (docs/commands.md) with its generated section
// replaced by ref, or ref appended when doc has none.
func withReference(doc, ref string) string {
	i := strings.Index(doc, referenceBegin)
	j := strings.Index(doc, referenceEnd)
	if i < 0 || j < i {
		return strings.TrimRight(doc, "\n") + "\n\n" + ref
	}
	return doc[:i] + ref + strings.TrimLeft(doc[j+len(referenceEnd):], "\n")
}

// manPages returns the man pages, by file name: bpconvert.1 and one
// bpconvert-COMMAND.1 per command.
func manPages() map[string][]byte {
	pages := map[string][]byte{}
	var b strings.Builder
	b.WriteString("% BPCONVERT(1) bpconvert | User Commands\n\n# NAME\n\nbpconvert - migrate datasets into blob packs\n\n")
	b.WriteString("# SYNOPSIS\n\n**bpconvert** *COMMAND* [*flags*] *ARGS*\n\n")
	b.WriteString("# DESCRIPTION\n\nbpconvert migrates datasets into blob packs: directories of STORED zip shards whose members tables reference as zip://KEY::DIR/pack-NNNN.zip.\n\n")
	b.WriteString("# COMMANDS\n\n")
	docs := docCommands()
	for _, c := range docs {
		fmt.Fprintf(&b, "**%s** %s\n: %s; see **bpconvert-%s**(1)\n\n", c.name, c.args, c.summary, c.name)
	}
	manTail(&b)
	pages["bpconvert.1"] = md2man.Render([]byte(b.String()))
	for _, c := range docs {
		b.Reset()
		upper := strings.ToUpper(c.name)
		fmt.Fprintf(&b, "%% BPCONVERT-%s(1) bpconvert | User Commands\n\n# NAME\n\nbpconvert-%s - %s\n\n", upper, c.name, c.summary)
		fmt.Fprintf(&b, "# SYNOPSIS\n\n**bpconvert %s** [*flags*] %s\n\n", c.name, c.args)
		if c.long != "" {
			fmt.Fprintf(&b, "# DESCRIPTION\n\n%s\n\n", strings.Join(strings.Fields(c.long), " "))
		}
		b.WriteString("# OPTIONS\n\n")
		c.flags.VisitAll(func(f *flag.Flag) {
			if f.Hidden {
				return
			}
			name, text := flagText(f)
			fmt.Fprintf(&b, "**%s**\n: %s\n\n", name, strings.Join(strings.Fields(text), " "))
		})
		if len(c.examples) > 0 {
			b.WriteString("# EXAMPLES\n\n")
			for _, ex := range c.examples {
				fmt.Fprintf(&b, "    %s\n", strings.ReplaceAll(ex, "\n", "\n    "))
			}
			b.WriteString("\n")
		}
		manTail(&b)
		b.WriteString("# SEE ALSO\n\n**bpconvert**(1)\n")
		pages["bpconvert-"+c.name+".1"] = md2man.Render([]byte(b.String()))
	}
	return pages
}

// manTail writes the ENVIRONMENT and EXIT STATUS sections of a man page.
func manTail(b *strings.Builder) {
	b.WriteString("# ENVIRONMENT\n\n")
	for _, v := range environment() {
		fmt.Fprintf(b, "**%s**\n: %s\n\n", v.name, v.text)
	}
	b.WriteString("# EXIT STATUS\n\n")
	for _, x := range exitCodes {
		fmt.Fprintf(b, "**%d**\n: %s\n\n", x.code, strings.Join(strings.Fields(x.text), " "))
	}
}

// writeManPages writes the man pages into dir, which must exist.
func writeManPages(dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return &usageError{msg: fmt.Sprintf("man: %s: not a directory", dir), hint: "create the directory first"}
	}
	for name, page := range manPages() {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), page, 0o644); err != nil {
			return fmt.Errorf("man: %w", err)
		}
	}
	return nil
}
