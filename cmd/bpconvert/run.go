package main

import (
	"context"
	"encoding/json"
	"errors"
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
	flag "github.com/spf13/pflag"
)

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
	// args are the command's arguments after its name, as parsed
	// (convert-lerobot hands them to bpconvert-lerobot).
	args []string
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
	if strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		msg, hint := flagBeforeCommand(args[0])
		fmt.Fprintf(stderr, "bpconvert: error: %s\nbpconvert: hint: %s\n", msg, hint)
		return exitUsage
	}
	if lookup(args[0]) == nil && !builtinCommands[args[0]] {
		fmt.Fprintf(stderr, "bpconvert: error: unknown command %q\n", args[0])
		if s := suggest(args[0]); s != "" {
			fmt.Fprintf(stderr, "bpconvert: hint: did you mean bpconvert %s? (bpconvert --help lists every command)\n", s)
		} else {
			fmt.Fprintln(stderr, "bpconvert: hint: run bpconvert --help for the list")
		}
		return exitUsage
	}
	var out outcome
	if a, ok := credentialArg(args[1:]); ok {
		out.name, out.err = args[0], e.refuseCredentials(args[0], a, args[1:])
	} else {
		var ran bool
		var err error
		out, ran, err = e.execute(ctx, args)
		if !ran {
			// help, completion or man
			e.report(ctx, stderr, err, exitCode(ctx, err))
			return exitCode(ctx, err)
		}
	}
	result, err := out.result, out.err
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
		doc = summaryDoc(out.name, result, err, code, time.Since(e.started))
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

// Type is the placeholder help shows for a size.
func (b *byteSize) Type() string { return "SIZE" }

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
