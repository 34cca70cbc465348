package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/fetch"
	"github.com/bpconvert/bpconvert/objstore"
	flag "github.com/spf13/pflag"
)

// usage is the program's help: what it does, its commands, the flags every
// command takes, the environment it reads and its exit codes.
func usage(w io.Writer) {
	fmt.Fprintln(w, "bpconvert migrates datasets into blob packs: directories of STORED zip shards")
	fmt.Fprintln(w, "whose members tables reference as zip://KEY::DIR/pack-NNNN.zip.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: bpconvert COMMAND [flags] ARGS   (bpconvert COMMAND --help for its flags)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	var cmds []command
	for _, c := range commands() {
		if !c.hidden {
			cmds = append(cmds, c)
		}
	}
	nameW, argW := 0, 0
	for _, c := range cmds {
		nameW, argW = max(nameW, len(c.name)), max(argW, len(c.args))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s %-*s  %s\n", nameW, c.name, argW, c.args, c.summary)
	}
	fmt.Fprintf(w, "  %-*s %-*s  %s\n", nameW, "completion", argW, "SHELL", "print the completion script of bash, zsh, fish or powershell")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags every command takes: --json, --quiet, --summary-file PATH.")
	fmt.Fprintln(w, "bpconvert help COMMAND (or COMMAND --help) shows a command's flags; --version the version.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Environment:")
	for _, v := range environment() {
		fmt.Fprintf(w, "  %s\n      %s\n", v.name, v.text)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit codes:")
	for _, x := range exitCodes {
		fmt.Fprintf(w, "  %-4d %s\n", x.code, strings.ReplaceAll(x.text, "\n", "\n       "))
	}
}

// exitCodes are the exit codes, as help and the docs list them.
var exitCodes = []struct {
	code int
	text string
}{
	{exitOK, "success"},
	{exitFailure, "failure (including verify finding problems, and object storage that cannot be reached)"},
	{exitUsage, "usage error, refused prompt, a destination that already exists or whose path goes\nthrough a file, or object storage refusing the credentials or lacking the bucket"},
	{exitInvalid, "invalid input (bad key, corrupt or truncated source, duplicate key)"},
	{exitInterrupted, "interrupted by SIGINT (Ctrl-C); a converter keeps its complete shards for the same command to resume"},
	{143, "stopped by SIGTERM; a converter keeps its complete shards staged and the rerun resumes"},
}

// envVar is an environment variable the program reads, as help lists it.
type envVar struct{ name, text string }

// environment lists the variables bpconvert reads (through the AWS SDK for
// the AWS_ ones), as help, the man page and docs/commands.md show them.
func environment() []envVar {
	return []envVar{
		{"AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN", "credentials for s3:// locations (never put them in the location)"},
		{"AWS_PROFILE", "a profile of the shared config and credentials files (~/.aws/config, ~/.aws/credentials)"},
		{"AWS_REGION", "the region of the buckets"},
		{"AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL", "an S3-compatible server (addressed path-style: http://host/bucket/key)"},
		{"AWS_MAX_ATTEMPTS", "attempts per object storage request before the run fails (exit 1)"},
		{objstore.EnvTimeout, "bound on waiting for the first or next byte of an object storage answer (45s, 2m, or seconds)"},
		{objstore.EnvConnectTimeout, "bound on connecting to object storage (same forms)"},
		{strings.Join(convert.IndexVariables(), ", "), "the task index --part auto reads (batch engines set one of them)"},
		{"AWS_BATCH_JOB_ARRAY_SIZE, BATCH_TASK_COUNT, CLOUD_RUN_TASK_COUNT, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN", "the task count (and Slurm's first task ID) beside the index, for --part auto"},
		{fetch.EnvTimeout + ", " + fetch.EnvMaxBytes, "bounds of convert-parquet --fetch-remote: time per attempt (default 60s) and size per file (default 256 MiB)"},
		{"HF_ENDPOINT, HF_TOKEN", "the Hugging Face Hub that convert-parquet --fetch-remote reads hf:// paths from, and its token"},
		{"NO_COLOR", "set (to anything) for prompts without colour; the focused answer is then bracketed: [ Yes ]"},
		{"TERM", "dumb gives line-by-line prompts: numbered options, the chosen ones ticked, the default answer in capitals"},
	}
}

// commandHelp is the help of command c, whose flags are fs: its usage
// line, summary, text, examples and flags.
func commandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", usageLine(c), c.summary)
	if c.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.long, "\n"))
	}
	if len(c.examples) > 0 {
		fmt.Fprintf(w, "\nExamples:\n%s\n", exampleText(c.examples))
	}
	fmt.Fprintln(w, "\nFlags:")
	fs.VisitAll(func(f *flag.Flag) {
		if f.Hidden {
			return
		}
		name, text := flagText(f)
		fmt.Fprintf(w, "  %s\n      %s\n", name, strings.ReplaceAll(text, "\n", "\n      "))
	})
}

// usageLine is "bpconvert NAME [flags] ARGS".
func usageLine(c *command) string {
	return strings.TrimSpace("bpconvert " + c.name + " [flags] " + c.args)
}

// flagText is a flag as help lists it: "--name PLACEHOLDER" (with -h for
// --help), and its text, ending with its default when that is not a zero
// value and the text does not already say it.
func flagText(f *flag.Flag) (string, string) {
	name := "--" + f.Name
	if f.Shorthand != "" {
		name = "-" + f.Shorthand + ", " + name
	}
	if p := placeholder(f); p != "" {
		name += " " + p
	}
	_, text := flag.UnquoteUsage(f)
	if !strings.Contains(text, "(default ") {
		if d := defaultText(f); d != "" {
			text += " (default " + d + ")"
		}
	}
	return name, text
}

// placeholder names what a flag takes, in capitals (SIZE, I/N, PATH): the
// back-quoted word of its usage, or its value's type; "" for a switch.
func placeholder(f *flag.Flag) string {
	if f.NoOptDefVal != "" {
		return ""
	}
	name, _ := flag.UnquoteUsage(f)
	switch name {
	case "int", "uint", "int32", "uint32":
		return "N"
	case "float", "float32":
		return "X"
	case "string":
		return "TEXT"
	}
	return name
}

// defaultText is a flag's default as help shows it: "" for a zero value
// (nothing is shown), sizes in binary units, strings quoted.
func defaultText(f *flag.Flag) string {
	if v, ok := f.Value.(*byteSize); ok {
		if *v == 0 {
			return ""
		}
		return v.human()
	}
	d := f.DefValue
	switch f.Value.Type() {
	case "bool":
		if d == "false" {
			return ""
		}
		return d
	case "string":
		if d == "" {
			return ""
		}
		return strconv.Quote(d)
	}
	if d == "" || d == "0" || d == "[]" {
		return ""
	}
	return d
}
