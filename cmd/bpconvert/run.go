package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/objstore"
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
		{"convert-lerobot", "SRC DST", "convert a LeRobot v2.0/v2.1/v3.0 dataset (parquet, or v3.0 stored as Lance): videos per episode and frames into packs", cmdLerobot},
		{"convert-lance", "SRC DST", "move payload columns of a Lance dataset into packs; the table stays Lance, its pages copied", cmdConvertLance},
		{"lance-inspect", "DATASET", "describe a Lance dataset: versions, schema, fragments, column encodings, first rows", cmdLanceInspect},
		{"finalize", "DST", "join the parts of a conversion split with --part I/N into DST (renames, no payload copied)", cmdFinalize},
		{"rebase", "DST", "rewrite what the tables' references call the dataset root (--ref-base), after a move or before an upload; packs untouched", cmdRebase},
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
	// getenv reads the environment (--part auto).
	getenv func(string) string
	// operands are a converter's sources and destination (setOperands).
	operands *operands
	// bars are the progress bars drawn on a terminal (newProgress).
	bars []*barCounter
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
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, started: time.Now(), getenv: os.Getenv}
	if isTerminal(stderr) {
		// Messages and plans printed while a progress bar is drawn start on
		// a line of their own.
		e.stderr = &barSafe{w: stderr, e: e}
		if isTerminal(stdout) {
			e.stdout = &barSafe{w: stdout, e: e}
		}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || (args[0] == "help" && len(args) == 1) {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	switch args[0] {
	case "--version", "-version", "-V":
		args = append([]string{"version"}, args[1:]...)
	case "help":
		// help CMD is CMD --help.
		args = []string{args[1], "--help"}
	}
	var cmd *command
	for _, c := range commands() {
		if c.name == args[0] {
			cmd = &c
			break
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "bpconvert: error: unknown command %q\n", args[0])
		if s := suggest(args[0]); s != "" {
			fmt.Fprintf(stderr, "bpconvert: hint: did you mean bpconvert %s? (bpconvert --help lists every command)\n", s)
		} else {
			fmt.Fprintln(stderr, "bpconvert: hint: run bpconvert --help for the list")
		}
		return exitUsage
	}
	var result any
	var err error
	if a, ok := credentialArg(args[1:]); ok {
		err = e.refuseCredentials(cmd.name, a, args[1:])
	} else {
		result, err = cmd.run(ctx, e, args[1:])
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	code := exitCode(ctx, err)
	if code == exitUsage || code == exitInvalid {
		err = e.explainInput(err)
		code = exitCode(ctx, err)
	}
	e.report(ctx, stderr, err, code)
	var doc []byte
	if d, ok := result.(jsonDoc); ok && err == nil {
		doc = d
	} else {
		doc = summaryDoc(cmd.name, result, err, code, time.Since(e.started))
	}
	doc = []byte(objstore.RedactLocation(string(doc)))
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

// report prints, on the process's stderr, how a command that failed or was
// interrupted ended: the error and its hint, or what an interruption kept
// or removed.
func (e *env) report(ctx context.Context, stderr io.Writer, err error, code int) {
	if err == nil {
		return
	}
	e.clearBars()
	if errors.Is(err, errAborted) {
		fmt.Fprintln(stderr, "bpconvert: aborted; nothing was written")
	} else if ke := (*keptError)(nil); code >= 128 && errors.As(err, &ke) {
		fmt.Fprintf(stderr, "bpconvert: %s; %s kept in %s for a retry\n", context.Cause(ctx), plan.CountText(int64(ke.shards), "complete shards"), ke.staging)
		fmt.Fprintf(stderr, "bpconvert: hint: %s\n", hintFor(err))
	} else if code >= 128 {
		fmt.Fprintf(stderr, "bpconvert: %s; temporary output removed, nothing was written\n", context.Cause(ctx))
	} else {
		fmt.Fprintf(stderr, "bpconvert: error: %s\n", objstore.RedactLocation(err.Error()))
		if h := hintFor(err); h != "" {
			fmt.Fprintf(stderr, "bpconvert: hint: %s\n", h)
		}
	}
}

// refuseCredentials is the error for an argument a that names an s3://
// location with credentials in it: refused before anything runs, and never
// echoed whole. The --summary-file and --json of args still apply.
func (e *env) refuseCredentials(name, a string, args []string) error {
	for i, arg := range args {
		if arg == "--summary-file" || arg == "-summary-file" {
			if i+1 < len(args) {
				e.summaryFile = args[i+1]
			}
		} else if v, ok := strings.CutPrefix(strings.TrimLeft(arg, "-"), "summary-file="); ok {
			e.summaryFile = v
		} else if arg == "--json" || arg == "-json" {
			e.json = true
		}
	}
	return &usageError{msg: fmt.Sprintf("%s: %s: %v: credentials do not belong in a location", name, objstore.RedactLocation(a), objstore.ErrBadLocation),
		hint: "give the credentials as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile (AWS_PROFILE), and name object storage as s3://BUCKET/PREFIX"}
}

// credentialArg returns an argument that names an s3:// location with
// user information (s3://KEY:SECRET@BUCKET/...), which every command
// refuses.
func credentialArg(args []string) (string, bool) {
	for _, a := range args {
		if objstore.HasUserinfo(a) {
			return a, true
		}
	}
	return "", false
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
	nameW, argW := 0, 0
	for _, c := range cmds {
		nameW, argW = max(nameW, len(c.name)), max(argW, len(c.args))
	}
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-*s %-*s  %s\n", nameW, c.name, argW, c.args, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags every command takes: --json, --quiet, --summary-file PATH.")
	fmt.Fprintln(w, "bpconvert help COMMAND (or COMMAND --help) shows a command's flags; --version the version.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit codes:")
	fmt.Fprintln(w, "  0    success")
	fmt.Fprintln(w, "  1    failure (including verify finding problems, and object storage that cannot be reached)")
	fmt.Fprintln(w, "  2    usage error, refused prompt, a destination that already exists or whose path goes\n       through a file, or object storage refusing the credentials or lacking the bucket")
	fmt.Fprintln(w, "  3    invalid input (bad key, corrupt or truncated source, duplicate key)")
	fmt.Fprintln(w, "  130  interrupted by SIGINT (Ctrl-C); a converter keeps its complete shards for the same command to resume")
	fmt.Fprintln(w, "  143  stopped by SIGTERM; a converter keeps its complete shards staged and the rerun resumes")
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
	printDefaults(e.stdout, fs)
}

// printDefaults lists a command's flags like flag.PrintDefaults, with one
// difference: a flag whose usage already names its default (sizes, written
// as people write them: "(default 4GiB)") does not get it a second time,
// and a size's default is written in the same units.
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if _, ok := f.Value.(*byteSize); ok && name == "value" {
			name = "SIZE"
		}
		line := "  -" + f.Name
		if name != "" {
			line += " " + name
		}
		if len(line) <= 4 { // a one-letter flag: usage on the same line
			line += "\t"
		} else {
			line += "\n    \t"
		}
		line += strings.ReplaceAll(usage, "\n", "\n    \t")
		if !strings.Contains(usage, "(default ") {
			if d := defaultText(f); d != "" {
				line += " (default " + d + ")"
			}
		}
		fmt.Fprintln(w, line)
	})
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
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		if d == "false" {
			return ""
		}
		return d
	}
	if d == "" || d == "0" {
		return ""
	}
	if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
		return strconv.Quote(d)
	}
	return d
}

// suggest returns the command closest to a mistyped name (at most two
// edits away, or a unique prefix), or "".
func suggest(name string) string {
	best, bestD := "", 3
	var prefixed []string
	for _, c := range commands() {
		if d := editDistance(strings.ToLower(name), c.name); d < bestD {
			best, bestD = c.name, d
		}
		if len(name) >= 2 && strings.HasPrefix(c.name, name) {
			prefixed = append(prefixed, c.name)
		}
	}
	if best == "" && len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// byteSize is a flag value accepting sizes as people write them: binary
// units (4GiB, 512MiB, 1.5GiB, and K/M/G/T meaning KiB/MiB/GiB/TiB),
// decimal units (1.5GB, 100MB), or a plain number of bytes. Units are not
// case-sensitive. String gives the exact number of bytes (it is what a
// run's record keeps).
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

// human writes the size in the largest binary unit that divides it
// exactly ("4GiB"), else in bytes.
func (b byteSize) human() string {
	n := int64(b)
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// sizeUnits are the units parseSize accepts, longest first.
var sizeUnits = []struct {
	suffix string
	mult   float64
}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1}}

func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	bad := fmt.Errorf("invalid size %q (want a positive size such as 4GiB, 512MiB, 1.5GB or 1000000)", s)
	if t == "" || strings.ContainsAny(t, "eEx_+-") || strings.HasPrefix(t, ".") {
		return 0, bad
	}
	if !strings.Contains(t, ".") {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n <= 0 || float64(n) > float64(1<<62)/mult {
			return 0, bad
		}
		return n * int64(mult), nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 || f*mult > 1<<62 {
		return 0, bad
	}
	// A fraction of a byte is refused; float rounding is not.
	n := int64(math.Round(f * mult))
	if n <= 0 || math.Abs(float64(n)-f*mult) > 1e-3 {
		return 0, bad
	}
	return n, nil
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
