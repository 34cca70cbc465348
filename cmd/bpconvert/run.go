package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/plan"
)

// command is one subcommand. Converters add themselves to commands.
type command struct {
	name    string
	args    string
	summary string
	run     func(ctx context.Context, e *env, args []string) (any, error)
}

// commands lists every subcommand in help order.
func commands() []command {
	return []command{
		{"pack", "SRC DST", "pack every file under SRC into a new pack directory DST", cmdPack},
		{"verify", "DATASET", "check packs, CRCs, manifests and every table reference; --against SRC compares payloads", cmdVerify},
		{"ls", "DIR|SHARD", "list members: size, shard, key", cmdLs},
		{"cat", "REF|KEY [DIR]", "write one blob to stdout (CRC-checked; --offset/--length for a part)", cmdCat},
		{"unpack", "DIR DST", "extract every member into a new directory DST", cmdUnpack},
		{"manifest", "DIR", "write pack.manifest.json for a pack written without one", cmdManifest},
		{"version", "", "print the version", cmdVersion},
		{"convert-wds", "SRC DST", "convert WebDataset tar shards into packs and a samples.parquet table", cmdWDS},
		{"convert-parquet", "SRC DST", "move payload columns of parquet tables into packs, columns become references", cmdParquet},
		{"convert-lerobot", "SRC DST", "convert a LeRobot v2.0/v2.1/v3.0 dataset: videos per episode and frames into packs", cmdLerobot},
		{"convert-lance", "SRC DST", "move payload columns of a Lance dataset into packs; the table stays Lance, its pages copied", cmdConvertLance},
		{"lance-inspect", "DATASET", "describe a Lance dataset: versions, schema, fragments, column encodings, first rows", cmdLanceInspect},
		{"finalize", "DST", "join the parts of a conversion split with --part I/N into DST (renames, no payload copied)", cmdFinalize},
		// Converters register here.
	}
}

// env is what a command may touch: its streams and the output options that
// every command shares.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	json           bool
	quiet          bool
	summaryFile    string
	started        time.Time
}

// infof prints a message for people on stderr unless --quiet.
func (e *env) infof(format string, a ...any) {
	if !e.quiet {
		fmt.Fprintf(e.stderr, format+"\n", a...)
	}
}

// commonFlags registers the flags every command accepts.
func (e *env) commonFlags(fs *flag.FlagSet) {
	fs.BoolVar(&e.json, "json", false, "print one JSON document (the summary) on stdout, on one line, last")
	fs.BoolVar(&e.quiet, "quiet", false, "print no progress or messages, only errors")
	fs.StringVar(&e.summaryFile, "summary-file", "", "also write the JSON summary to `PATH`, on success and on failure")
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, started: time.Now()}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" {
		args = []string{"version"}
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == args[0] {
			cmd = &c
			break
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "bpconvert: error: unknown command %q\nbpconvert: hint: run bpconvert --help for the list\n", args[0])
		return exitUsage
	}
	result, err := cmd.run(ctx, e, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	code := exitCode(ctx, err)
	if errors.Is(err, errAborted) {
		fmt.Fprintln(stderr, "bpconvert: aborted; nothing was written")
	} else if err != nil && code >= 128 {
		fmt.Fprintf(stderr, "bpconvert: interrupted (%s); temporary output removed, nothing was written\n", context.Cause(ctx))
	} else if err != nil {
		fmt.Fprintf(stderr, "bpconvert: error: %s\n", err)
		if h := hintFor(err); h != "" {
			fmt.Fprintf(stderr, "bpconvert: hint: %s\n", h)
		}
	}
	var doc []byte
	if d, ok := result.(jsonDoc); ok && err == nil {
		doc = d
	} else {
		doc = summaryDoc(cmd.name, result, err, code, time.Since(e.started))
	}
	if e.summaryFile != "" {
		// Checked before any work (see parse); should it fail now, the run's
		// outcome stands: a finished conversion stays finished, and a retry
		// finds it already done.
		if werr := atomicfile.WriteFile(e.summaryFile, append(doc, '\n'), 0o644); werr != nil {
			fmt.Fprintf(stderr, "bpconvert: error: writing summary file: %v\n", werr)
		}
	}
	if e.json {
		stdout.Write(append(doc, '\n'))
	}
	return code
}

// summaryDoc renders a command's result as one JSON object with the fields
// every summary has: command, ok, exit_code, seconds, and error on failure.
func summaryDoc(name string, result any, err error, code int, took time.Duration) []byte {
	m := map[string]any{}
	if result != nil {
		if b, merr := json.Marshal(result); merr == nil {
			json.Unmarshal(b, &m)
		}
	}
	m["command"] = name
	m["ok"] = err == nil
	m["exit_code"] = code
	m["seconds"] = float64(took.Milliseconds()) / 1000
	switch {
	case err == nil && m["status"] == string(plan.StatusAlreadyDone):
		// a retry of a finished run: nothing was done, and that is success
	case err == nil:
		m["status"] = "ok"
	case code >= 128:
		m["status"] = "interrupted"
	case errors.Is(err, errAborted):
		m["status"] = "aborted"
	default:
		m["status"] = "failed"
	}
	if err != nil {
		m["error"] = err.Error()
		if h := hintFor(err); h != "" {
			m["hint"] = h
		}
	}
	b, _ := json.Marshal(m)
	return b
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "bpconvert migrates datasets into blob packs: directories of STORED zip shards")
	fmt.Fprintln(w, "whose members tables reference as zip://KEY::DIR/pack-NNNN.zip.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: bpconvert COMMAND [flags] ARGS   (bpconvert COMMAND --help for its flags)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	cmds := commands()
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-16s %-10s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags every command takes: --json, --quiet, --summary-file PATH.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit codes:")
	fmt.Fprintln(w, "  0    success")
	fmt.Fprintln(w, "  1    failure (including verify finding problems)")
	fmt.Fprintln(w, "  2    usage error, refused prompt, or a destination that already exists")
	fmt.Fprintln(w, "  3    invalid input (bad key, corrupt or truncated source, duplicate key)")
	fmt.Fprintln(w, "  130  interrupted by SIGINT (143 for SIGTERM); temporary output is removed")
}

// parseFlags parses flags that may appear before, between or after the
// positional arguments, and checks the positional count.
func parseFlags(fs *flag.FlagSet, args []string, nargs int, names string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			pos = append(pos, rest[1:]...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if nargs >= 0 && len(pos) != nargs {
		return nil, &usageError{msg: fmt.Sprintf("%s: expected %s, got %d argument(s)", fs.Name(), names, len(pos)),
			hint: "run bpconvert " + fs.Name() + " --help"}
	}
	return pos, nil
}

// parse registers the flags every command takes on fs, parses args (see
// parseFlags) and, when --help was asked, prints the command's flags and
// returns flag.ErrHelp.
func (e *env) parse(fs *flag.FlagSet, args []string, nargs int, names string) ([]string, error) {
	e.commonFlags(fs)
	pos, err := parseFlags(fs, args, nargs, names)
	if errors.Is(err, flag.ErrHelp) {
		flagHelp(e, fs, names)
	}
	if err == nil && e.summaryFile != "" {
		err = checkWritable(e.summaryFile)
	}
	return pos, err
}

// checkWritable checks, before any work, that a file can be written at path:
// its directory exists and accepts a new file.
func checkWritable(path string) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return &usageError{msg: fmt.Sprintf("--summary-file %s: %v", path, err),
			hint: "the summary file's directory must exist and be writable; it is checked before the run so a finished run never fails on it"}
	}
	f.Abort()
	return nil
}

// flagHelp prints a command's flags when asked with --help.
func flagHelp(e *env, fs *flag.FlagSet, args string) {
	fmt.Fprintf(e.stdout, "Usage: bpconvert %s [flags] %s\n\nFlags:\n", fs.Name(), args)
	fs.SetOutput(e.stdout)
	fs.PrintDefaults()
}

// byteSize is a flag value accepting sizes like 4GiB, 512MiB, 100MB or 1000.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size %q (want a positive number of bytes, e.g. 4GiB, 512MiB, 1000000)", s)
	}
	return n * mult, nil
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
