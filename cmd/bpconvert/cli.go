package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bpconvert/bpconvert/internal/cliflag"
	"github.com/spf13/cobra"
	flag "github.com/spf13/pflag"
)

// The command tree is built on cobra and pflag, the conventions of kubectl,
// gh and hugo: GNU --flags, shell completion, and help, the man pages and
// docs/commands.md rendered from one definition of each command (the
// command table, commands). Parsing stays the program's own where its
// contract asks for it: messages, exit codes, single-dash spellings and
// suggestions for mistyped flags.

// command is one subcommand, defined once: its table entry drives the
// parser, help, shell completion, the man pages and docs/commands.md.
type command struct {
	name string
	// args names the operands, as help shows them ("SRC DST").
	args string
	// nargs is the number of operands wanted; -1 when the command checks
	// them itself.
	nargs   int
	summary string
	// long is help's text after the summary (paragraphs; may be empty).
	long string
	// examples are shown by help, one command line each, optionally
	// preceded by "# comment" lines.
	examples []string
	hidden   bool
	// define registers the command's flags on fs, bound to the values the
	// returned function reads when it runs with the operands.
	define func(e *env, fs *flag.FlagSet) runFunc
}

// runFunc runs a command whose flags are parsed, with its operands.
type runFunc func(ctx context.Context, operands []string) (any, error)

// lookup returns the command named name, or nil.
func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return &c
		}
	}
	return nil
}

// outcome is what running the tree produced: the command that ran (or
// whose flags failed to parse), its result and error, and whether only
// help or a built-in command (completion, man) ran.
type outcome struct {
	name   string
	result any
	err    error
}

// tree builds the command tree of e: every command of the table with its
// flags, cobra's completion command and the hidden man command. Running a
// table command stores its result in out.
func (e *env) tree(ctx context.Context, out *outcome) *cobra.Command {
	root := &cobra.Command{
		Use:                "bpconvert",
		Short:              "migrate datasets into blob packs",
		SilenceErrors:      true,
		SilenceUsage:       true,
		DisableSuggestions: true, // run suggests, for commands and flags alike
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetIn(e.stdin)
	for _, c := range commands() {
		cc := e.cobraCommand(ctx, c, out)
		root.AddCommand(cc)
	}
	root.AddCommand(e.manCommand(out))
	root.InitDefaultCompletionCmd()
	if cc, _, err := root.Find([]string{"completion"}); err == nil && cc != root {
		cc.RunE = func(*cobra.Command, []string) error {
			return &usageError{msg: "completion: name a shell: bash, zsh, fish or powershell",
				hint: "bpconvert completion bash > /etc/bash_completion.d/bpconvert (see bpconvert completion bash --help)"}
		}
	}
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(cc *cobra.Command, args []string) {
		if cc == root {
			usage(e.stdout)
			return
		}
		if c := lookup(cc.Name()); c != nil && cc.Parent() == root {
			commandHelp(e.stdout, c, cc.Flags())
			return
		}
		defaultHelp(cc, args)
	})
	root.SetFlagErrorFunc(func(cc *cobra.Command, err error) error {
		if lookup(cc.Name()) != nil {
			out.name = cc.Name()
		}
		return flagError(cc.Name(), cc.Flags(), err)
	})
	return root
}

// cobraCommand is c as a cobra command whose run stores its outcome in out.
func (e *env) cobraCommand(ctx context.Context, c command, out *outcome) *cobra.Command {
	cc := &cobra.Command{
		Use:     strings.TrimSpace(c.name + " [flags] " + c.args),
		Short:   c.summary,
		Long:    c.long,
		Example: exampleText(c.examples),
		Hidden:  c.hidden,
		Args:    cobra.ArbitraryArgs,
	}
	fs := cc.Flags()
	fs.SortFlags = true
	run := c.define(e, fs)
	e.commonFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if vals := f.Annotations[cliflag.ChoicesAnnotation]; len(vals) > 0 {
			cc.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp))
		}
	})
	cc.RunE = func(_ *cobra.Command, operands []string) error {
		out.name = c.name
		if c.nargs >= 0 && len(operands) != c.nargs {
			out.err = &usageError{msg: fmt.Sprintf("%s: expected %s, got %d argument(s)", c.name, c.args, len(operands)),
				hint: "run bpconvert " + c.name + " --help"}
			return nil
		}
		if e.summaryFile != "" {
			if out.err = checkWritable(e.summaryFile); out.err != nil {
				return nil
			}
		}
		out.result, out.err = run(ctx, operands)
		return nil
	}
	return cc
}

// exampleText is examples as cobra and help show them, indented.
func exampleText(examples []string) string {
	var b strings.Builder
	for _, ex := range examples {
		for _, line := range strings.Split(ex, "\n") {
			b.WriteString("  " + line + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// flagError is the usage error for a flag of command name that failed to
// parse. A mistyped flag gets a suggestion: the closest flag of fs, else
// the closest flag of other commands, naming them.
func flagError(name string, fs *flag.FlagSet, err error) error {
	msg := err.Error()
	hint := "run bpconvert " + name + " --help for its flags"
	if bad, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := closest(bad, flagNames(fs)); s != "" {
			hint = fmt.Sprintf("did you mean --%s? (bpconvert %s --help lists its flags)", s, name)
		} else if s, owners := otherFlag(name, bad); s != "" {
			hint = fmt.Sprintf("--%s is a flag of %s, not of %s (bpconvert %s --help lists its flags)", s, strings.Join(owners, " and "), name, name)
		}
	}
	return &usageError{msg: name + ": " + msg, hint: hint}
}

// flagNames lists the visible flags of fs.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	return names
}

// otherFlag returns the flag of the commands other than name closest to
// the mistyped bad, and the commands that take it.
func otherFlag(name, bad string) (string, []string) {
	e := &env{getenv: func(string) string { return "" }}
	byFlag := map[string][]string{}
	var all []string
	for _, c := range commands() {
		if c.name == name || c.hidden {
			continue
		}
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.define(e, fs)
		e.commonFlags(fs)
		for _, f := range flagNames(fs) {
			if byFlag[f] == nil {
				all = append(all, f)
			}
			byFlag[f] = append(byFlag[f], c.name)
		}
	}
	s := closest(bad, all)
	return s, byFlag[s]
}

// deprecatedFlags are old spellings of flags, by the flag they now name;
// they keep working, with a warning.
var deprecatedFlags = map[string]string{"version": "dataset-version"}

// normalizeArgs rewrites the arguments of a command whose flags are fs as
// pflag reads them: a single-dash long flag (-json, -max-pack-bytes=4G,
// as Go's flag package took them) gets its second dash, and a deprecated
// spelling becomes the flag it names, with a warning in warn. Operands,
// flag values and everything after "--" are left alone.
func normalizeArgs(fs *flag.FlagSet, args []string, warn func(string)) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && !isNumber(a[1:]) {
			a = "-" + a
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") {
			out = append(out, a)
			continue
		}
		if to, ok := deprecatedFlags[name]; ok && fs.Lookup(to) != nil && fs.Lookup(name) == nil {
			if !hasValue && i+1 < len(args) {
				value = args[i+1]
			}
			if !isNumber(value) {
				return nil, &usageError{msg: fmt.Sprintf("%s: --%s %q: --%s is the dataset version, a number; it is now spelled --%s N", fs.Name(), name, value, name, to),
					hint: "bpconvert --version prints the program's version"}
			}
			warn(fmt.Sprintf("bpconvert: warning: --%s N is deprecated; use --%s N", name, to))
			name = to
			a = "--" + to
			if hasValue {
				a += "=" + value
			}
		}
		out = append(out, a)
		if f := fs.Lookup(name); f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			// the flag's value, whatever it looks like
			i++
			out = append(out, args[i])
		}
	}
	return out, nil
}

// isNumber reports whether s is a (possibly negative) decimal number.
func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// closest returns the name of names nearest to a mistyped one (at most
// two edits away, or a unique prefix of at least two letters), or "".
func closest(name string, names []string) string {
	best, bestD := "", 3
	var prefixed []string
	for _, n := range names {
		if d := editDistance(strings.ToLower(name), n); d < bestD {
			best, bestD = n, d
		}
		if len(name) >= 2 && strings.HasPrefix(n, name) {
			prefixed = append(prefixed, n)
		}
	}
	if best == "" && len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// suggest returns the command closest to a mistyped name, or "".
func suggest(name string) string {
	var names []string
	for _, c := range commands() {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return closest(name, names)
}

// builtinCommands are the commands cobra adds to the table's: help,
// shell completion (and the requests its scripts make), and the man pages.
var builtinCommands = map[string]bool{"help": true, "completion": true, cobra.ShellCompRequestCmd: true, cobra.ShellCompNoDescRequestCmd: true, "man": true}

// execute runs args (the command's name first) through e's command tree.
// It returns the outcome and whether a table command was run or failed to
// parse (false for help, completion and man).
func (e *env) execute(ctx context.Context, args []string) (outcome, bool, error) {
	var out outcome
	root := e.tree(ctx, &out)
	if c := lookup(args[0]); c != nil {
		sub, _, err := root.Find(args[:1])
		if err != nil {
			return out, false, err
		}
		rest, err := normalizeArgs(sub.Flags(), args[1:], func(s string) { fmt.Fprintln(e.stderr, s) })
		if err != nil {
			out.name, out.err = c.name, err
			return out, true, nil
		}
		args = append(args[:1:1], rest...)
		e.args = rest
	}
	root.SetArgs(args)
	_, err := root.ExecuteC()
	if out.name != "" {
		if err != nil && out.err == nil {
			out.err = err
		}
		return out, true, nil
	}
	if err != nil {
		var ue *usageError
		if !errors.As(err, &ue) {
			err = &usageError{msg: err.Error(), hint: "run bpconvert --help"}
		}
	}
	return out, false, err
}

// flagBeforeCommand is the error and hint for a flag given where the
// command belongs (bpconvert --colum ...): the commands that take it, or
// the flag meant.
func flagBeforeCommand(arg string) (string, string) {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	msg := fmt.Sprintf("%s: a flag where the command belongs (bpconvert COMMAND [flags] ARGS)", arg)
	s, owners := otherFlag("", name)
	of := "a flag of " + strings.Join(owners, ", ")
	if len(owners) > 4 {
		of, owners = "a flag of every command", []string{"COMMAND"}
	}
	switch {
	case s == "":
		return msg, "run bpconvert --help for the commands, and bpconvert COMMAND --help for their flags"
	case s == name:
		return msg, fmt.Sprintf("--%s is %s: bpconvert %s --%s ...", s, of, owners[0], s)
	}
	return msg, fmt.Sprintf("did you mean --%s? %s: bpconvert %s --%s ...", s, of, owners[0], s)
}
