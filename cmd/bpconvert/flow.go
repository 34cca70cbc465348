package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/huh"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	flag "github.com/spf13/pflag"
)

// convertFlags are the flags every converter takes: the pack settings that
// convert.PackOptions carries (--ref-base among them: what references call
// the dataset root), --dry-run and --yes.
type convertFlags struct {
	maxPackBytes byteSize
	maxMembers   int
	noManifest   bool
	refBase      refBaseFlag
	dryRun       bool
	yes          bool
	explain      bool
	restart      bool
	staging      string
	// append and allowRemoved are --append and --allow-removed; base is
	// the committed output an append extends, once read (appendBase).
	append, allowRemoved bool
	base                 *convert.Base
	// growth is how the converter's --append tells what is new (see
	// convert.Growth): by whole source files, sorted here (a changed one
	// refused); inside files too (the added or changed files handed over);
	// or in the converter's own units, not by files at all.
	growth convert.Growth
	// part is --part I/N, for the converters that take it (registerPart).
	part partFlag
	// record says what the run produces (nil when a source cannot be
	// identified, such as standard input); see identify.
	record *convert.Record
	// dest is the destination, parsed once by destination.
	dest convert.Dest
	// command is the converter's name, for messages (set by register).
	command string
	// flags are the converter's flags, for the command line that repeats
	// an interactive choice (set by register).
	flags *flag.FlagSet
	// source is the run's source, opened once (see openSource) and handed
	// to the converter in its options: the converter's plan and summary
	// say what reading it fetched from object storage. fetchedFrom names
	// it in the line that says so.
	source      convert.Source
	fetchedFrom string
}

func (c *convertFlags) register(fs *flag.FlagSet) {
	c.command = fs.Name()
	c.flags = fs
	registerPackLimits(fs, &c.maxPackBytes, &c.maxMembers, &c.noManifest, convert.DefaultMaxMembers)
	fs.Var(&c.refBase, convert.RefBaseOption, convert.RefBaseHelp)
	fs.BoolVar(&c.dryRun, "dry-run", false, "print the plan and exit without writing anything")
	fs.BoolVar(&c.yes, "yes", false, "accept the plan without asking (scripted runs)")
	fs.BoolVar(&c.explain, "explain", false, "show the plan's explanations (how keys, samples, readers and shard limits work), once per topic")
	fs.BoolVar(&c.restart, "restart", false, "discard the staged work of an interrupted run instead of resuming it, and with --part\nreplace a finished part made from sources or options that have changed since")
	fs.BoolVar(&c.append, "append", false, "convert only the sources that DST's committed output does not hold yet, into new shards, and commit\nthem as a new version of it (an absent DST is converted whole); a changed source is refused")
	fs.BoolVar(&c.allowRemoved, "allow-removed", false, "with --append: keep the rows of sources the output holds that are gone from the source now")
	fs.StringVar(&c.staging, "staging", "", "local directory `DIR` that stages the shards of a run into s3:// before each is uploaded (default: the system's temporary directory)")
}

// registerPart adds --part, for converters that can split their work;
// --part auto reads the part from e's environment.
func (c *convertFlags) registerPart(fs *flag.FlagSet, e *env) {
	c.part.getenv = e.getenv
	fs.Var(&c.part, convert.PartOption, "convert only part I of N (I/N, such as 2/8) of the work, for bpconvert finalize DST to join;\n"+
		"auto (or auto/N) takes I, and N, from the index a batch engine gives each task:\n"+strings.Join(convert.IndexVariables(), ", "))
}

// partFlag is a --part value.
type partFlag struct {
	convert.Part
	// from says where the part came from (see convert.ResolvePart).
	from   string
	getenv func(string) string
}

// Type is the placeholder help shows for a part.
func (p *partFlag) Type() string { return "I/N" }

// Set parses I/N, auto or auto/N.
func (p *partFlag) Set(s string) error {
	getenv := p.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	v, from, err := convert.ResolvePart(s, getenv)
	if err != nil {
		return err
	}
	p.Part, p.from = v, from
	return nil
}

// pack returns the pack settings the flags name, with the run's record.
func (c *convertFlags) pack() convert.PackOptions {
	return convert.PackOptions{MaxPackBytes: int64(c.maxPackBytes), MaxMembers: c.maxMembers, NoManifest: c.noManifest,
		Record: c.record, Restart: c.restart, Part: c.part.Part, RefBase: string(c.refBase), Append: c.append, AllowRemoved: c.allowRemoved}
}

// options are the settings every converter takes, from the flags. The plan
// is quick (convert.Options.QuickPlan) when no one confirms it: --yes
// without --dry-run.
func (c *convertFlags) options() convert.Options {
	return convert.Options{PackOptions: c.pack(), ToolVersion: buildVersion(), QuickPlan: c.yes && !c.dryRun, Base: c.base, Source: c.source}
}

// refBaseFlag is a converter's --ref-base, checked as it is parsed (see
// convert.CheckRefBase).
type refBaseFlag string

func (r *refBaseFlag) String() string { return string(*r) }

// Type is the placeholder help shows for a reference base.
func (r *refBaseFlag) Type() string { return "BASE" }

func (r *refBaseFlag) Set(s string) error {
	v, err := convert.CheckRefBase(s)
	if err != nil {
		return err
	}
	*r = refBaseFlag(v)
	return nil
}

// withShardNote adds the explanation of the shard limits (the member cap
// and why it matters to readers) to a plan that writes packs: a note when
// --max-members or --max-pack-bytes changed them, as that concerns this run.
func (c *convertFlags) withShardNote(p plan.Plan) plan.Plan {
	if len(p.Layout) > 0 {
		if pk := c.pack(); pk.Members() != convert.DefaultMaxMembers || (pk.MaxPackBytes > 0 && pk.MaxPackBytes != packcore.DefaultMaxPackBytes) {
			p.Notes = append(p.Notes, c.pack().ShardNote())
		} else {
			p.Explain("shards", c.pack().ShardNote())
		}
		if n := c.pack().RefNote(); n != "" {
			p.Notes = append(p.Notes, n)
		}
	}
	return p
}

// render writes p as text, with its explanations under --explain.
func (c *convertFlags) render(w io.Writer, p plan.Plan) error {
	return plan.RenderTextWith(w, p, plan.TextOptions{Explain: c.explain})
}

// notRecorded are flags that do not change what a run writes.
var notRecorded = map[string]bool{"json": true, "quiet": true, "summary-file": true, "yes": true, "dry-run": true, "explain": true, "restart": true, "staging": true,
	"append": true, "allow-removed": true}

// identify records what the run produces: the command, every flag that
// shapes the output (defaults included) and the identity of every source
// file, so that a retry of a finished run is recognised (exit 0, already
// done) and a rerun after a kill resumes. src is the opened source; one
// not opened (standard input) cannot be identified, and the run has no
// record.
func (c *convertFlags) identify(ctx context.Context, fs *flag.FlagSet, src convert.Source) error {
	if !src.Opened() {
		return c.appendBase(ctx, "")
	}
	files, err := convert.Identify(ctx, []convert.Source{src})
	if err != nil {
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	opts := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if !notRecorded[f.Name] {
			opts[f.Name] = f.Value.String()
		}
	})
	c.record = &convert.Record{Tool: "bpconvert", Version: buildVersion(), Command: fs.Name(), Options: opts, Sources: files}
	return c.appendBase(ctx, "")
}

// appendBase, for --append, refuses what cannot be appended (an
// --allow-removed without --append, a source that cannot be identified)
// and reads the committed output the run extends (see
// convert.Target.AppendBase), keeping it for the converter's options.
// packDir is the run's pack directory ("" for the default).
func (c *convertFlags) appendBase(ctx context.Context, packDir string) error {
	if c.allowRemoved && !c.append {
		return usagef("%s: --allow-removed goes with --append", c.command)
	}
	if !c.append || c.dest == nil {
		return nil
	}
	if c.record == nil {
		return usagef("%s: --append needs sources it can identify: standard input cannot tell what is new", c.command)
	}
	base, err := c.target().AppendBase(ctx, packDir, c.growth, c.allowRemoved, c.dryRun)
	c.base = base
	return err
}

// destination parses a converter's DST, once (convert.ParseDest), and
// checks before anything is planned that the run may write there (see
// convert.Target.Check): src is the source it must be disjoint from (a
// zero Source for none).
func (c *convertFlags) destination(ctx context.Context, src convert.Source, dst string) (convert.Dest, error) {
	d, err := convert.ParseDest(dst, c.staging)
	if err != nil {
		return nil, err
	}
	if err := checkDestParent(c.command, d, dst); err != nil {
		return nil, err
	}
	c.dest = d
	return d, c.target().Check(ctx, src)
}

// target is the run's destination side: where, which part, what it
// records and whether to restart.
func (c *convertFlags) target() convert.Target {
	return convert.Target{Dest: c.dest, Part: c.part.Part, Record: c.record, Restart: c.restart, Append: c.append, Base: c.base}
}

// next says in p.Next what a real run would do with a destination that is
// not empty, for a dry run (see convert.Target.Next); it returns the
// refusal of a destination a real run would refuse.
func (c *convertFlags) next(ctx context.Context, p *plan.Plan) error {
	if c.dest == nil {
		return nil
	}
	next, err := c.target().Next(ctx)
	if next != "" {
		p.Next = next
	}
	return err
}

// alreadyDone reports whether the destination holds this run's finished
// output (see convert.Target.Done); a dry run does not ask.
func (c *convertFlags) alreadyDone(ctx context.Context, format string) (*plan.Summary, error) {
	if c.dest == nil || c.dryRun {
		return nil, nil
	}
	return c.target().Done(ctx, format)
}

// kept returns err as a *keptError when the run was interrupted by a
// signal that keeps staged work (convert.ErrKeepStaged) and its staging
// directory holds complete shards, or, for a run into object storage
// stopped by any signal, when the bucket holds its shards (keptInBucket);
// else err.
func (c *convertFlags) kept(ctx context.Context, err error) error {
	if c.dest == nil {
		return err
	}
	if c.dest.Remote() {
		if ctx.Err() == nil {
			return err
		}
		return keptInBucket(ctx, err, c.target(), "")
	}
	if !errors.Is(context.Cause(ctx), convert.ErrKeepStaged) {
		return err
	}
	k, kerr := c.target().Kept(ctx, "")
	if kerr != nil || k.Shards == 0 {
		return err
	}
	return &keptError{err: err, staging: k.Staging, shards: k.Shards}
}

// keptInBucket is kept for a run into object storage stopped by a signal:
// whatever the signal, the complete shards it uploaded stay in the bucket
// with its pending record, for a rerun of the same command to resume (and
// SIGTERM keeps those staged but not uploaded). The error says how many a
// rerun reuses and where; err is returned as it is when the bucket holds
// nothing of the run. packDir is the run's pack directory ("" for
// convert.MediaDir).
func keptInBucket(ctx context.Context, err error, t convert.Target, packDir string) error {
	loc := t.Dest.Location()
	if !t.Part.Whole() {
		d, perr := t.Dest.Part(t.Part)
		if perr != nil {
			return err
		}
		loc = d.Location()
	}
	// The run's context is cancelled; the look at the bucket is bounded.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	k, kerr := t.Kept(lctx, packDir)
	if kerr != nil || !k.Pending {
		return err
	}
	where := loc
	if k.Staged > 0 {
		where += fmt.Sprintf(" (%d of them staged in %s, not uploaded yet)", k.Staged, k.Staging)
	}
	if k.After > 0 {
		where += fmt.Sprintf(" (%s there follow a shard that was not uploaded and will be written again)", plan.CountText(int64(k.After), "more shards"))
	}
	hint := fmt.Sprintf("rerun the same command to resume from the shards kept in %s; add --restart to discard them (a different conversion into %s is refused until then)", loc, loc)
	return &hintError{err: &keptError{err: err, staging: where, shards: k.Shards}, hint: hint}
}

// failedPlan is the result of a run whose plan found problems: the error
// document (--json, --summary-file) carries the plan under "plan".
type failedPlan struct {
	Plan json.RawMessage `json:"plan"`
}

// errAborted is a declined or aborted prompt: exit 1, nothing written.
var errAborted = errors.New("aborted; nothing was written")

// jsonDoc is a result printed verbatim as the command's JSON document.
type jsonDoc []byte

// interactive reports whether prompts may be shown: stdin and stderr are
// both terminals. Prompts never open /dev/tty on their own.
func (e *env) interactive() bool {
	return isTerminal(e.stdin) && isTerminal(e.stderr)
}

// runJob computes a converter job's plan, shows it, obtains a selection
// (jobs that implement convert.Chooser) and a confirmation (unless --yes)
// where needed, and runs it.
func (e *env) runJob(ctx context.Context, cf *convertFlags, job convert.Job) (any, error) {
	if !cf.part.Whole() && cf.part.from != "--part "+cf.part.String() {
		e.infof("part %s, from %s", cf.part, cf.part.from)
	}
	sum, err := e.runJobPart(ctx, cf, job)
	if s, ok := sum.(plan.Summary); ok && !cf.part.Whole() {
		s.Part, s.PartFrom = cf.part.String(), cf.part.from
		sum = s
	}
	if err == nil {
		sum = e.sayFetched(cf, sum)
	}
	return sum, err
}

// sayFetched says in a line on stderr what reading a source in object
// storage fetched, as the converter's summary says it (or, for a dry run,
// as the source's counts say it now).
func (e *env) sayFetched(cf *convertFlags, res any) any {
	f := cf.source.Fetched()
	if s, ok := res.(plan.Summary); ok && s.Fetched != nil {
		f = s.Fetched
	}
	if f != nil {
		e.infof("read %s in %s from %s", plan.HumanBytes(f.BytesFetched), plan.CountText(f.Requests, "requests"), cf.fetchedFrom)
	}
	return res
}

// runJobPart is runJob less the part's note in the summary.
func (e *env) runJobPart(ctx context.Context, cf *convertFlags, job convert.Job) (any, error) {
	if done, err := cf.alreadyDone(ctx, ""); done != nil || err != nil {
		if done != nil {
			// What opening the source fetched (its listing).
			done.Fetched = cf.source.Fetched()
		}
		if done != nil && !e.quiet {
			plan.RenderSummaryText(e.stderr, *done)
		}
		if done == nil {
			return nil, err
		}
		return *done, nil
	}
	p, err := job.Plan(ctx, nil, e.newProgress("inspect"))
	p = cf.withShardNote(p)
	cf.withAppend(&p)
	if w := spaceWarning(cf, p); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
	if err != nil {
		if len(p.Entries) > 0 && !e.quiet {
			cf.render(e.stderr, p) // the plan lists every problem found
			fmt.Fprintln(e.stderr)
		}
		if len(p.Entries) > 0 && (e.json || e.summaryFile != "") {
			// The error document carries the plan that explains it.
			var b bytes.Buffer
			if rerr := plan.RenderJSON(&b, p); rerr == nil {
				return failedPlan{Plan: json.RawMessage(bytes.TrimSpace(b.Bytes()))}, err
			}
		}
		return nil, err
	}
	if cf.dryRun {
		return e.dryRun(ctx, cf, p)
	}
	planOut := e.stdout
	if e.json {
		planOut = e.stderr // stdout carries only the final summary
	}
	if !e.quiet || !cf.yes {
		if err := cf.render(planOut, p); err != nil {
			return nil, err
		}
		fmt.Fprintln(planOut)
	}
	if ch, ok := job.(convert.Chooser); ok {
		if chooseErr := ch.NeedChoice(); chooseErr != nil {
			if cf.yes || !e.interactive() {
				return nil, chooseErr
			}
			chosen, err := e.choose(ctx, p)
			if err != nil {
				return nil, err
			}
			if p, err = job.Plan(ctx, chosen, progress.Nop{}); err != nil {
				return nil, err
			}
			p = cf.withShardNote(p)
			if err := cf.render(planOut, p); err != nil {
				return nil, err
			}
			fmt.Fprintln(planOut)
			if line := cf.scripted(e.operands, chosen); line != "" {
				fmt.Fprintf(e.stderr, "bpconvert: the same choice without prompts:\n  %s\n", line)
			}
		}
	}
	if !cf.yes {
		if !e.interactive() {
			return nil, &usageError{msg: "refusing to prompt: stdin is not a terminal",
				hint: "pass --yes to accept the plan without asking, or --dry-run to only print it"}
		}
		if err := e.confirm(ctx); err != nil {
			return nil, err
		}
	}
	prog := e.newProgress("convert")
	start := time.Now()
	sum, err := job.Run(ctx, prog)
	if err != nil {
		return nil, diskFull(cf.kept(ctx, err), cf)
	}
	// A summary returned without an error is a finished run, or one whose
	// commit was found done (already_done).
	if sum.Status != plan.StatusAlreadyDone {
		sum.Status = plan.StatusOK
	}
	sum.ExitCode, sum.Duration = exitOK, time.Since(start)
	if !e.quiet {
		plan.RenderSummaryText(e.stderr, sum)
	}
	return sum, nil
}

// nothingNew is, for an append that finds no new or changed source file,
// the already_done summary (see alreadyDone), before the converter's job
// is made; nil otherwise, and for a converter that sorts what is new in
// its own units (convert.GrowsOwn).
func (e *env) nothingNew(ctx context.Context, cf *convertFlags) (any, error) {
	if cf.base == nil || len(cf.base.Diff.New) > 0 || cf.growth == convert.GrowsOwn {
		return nil, nil
	}
	done, err := cf.target().Done(ctx, "")
	if done == nil || err != nil {
		return nil, err
	}
	if !e.quiet {
		plan.RenderSummaryText(e.stderr, *done)
	}
	return *done, nil
}

// withAppend says in the plan of an append what it converts and what the
// committed output holds already, counted in source files, unless the
// converter said it in its own units (fragments, episodes).
func (c *convertFlags) withAppend(p *plan.Plan) {
	b := c.base
	if b == nil || p.Append != nil {
		return
	}
	p.Append = &plan.AppendPlan{Unit: "source files", New: len(b.Diff.New), NewBytes: convert.Bytes(b.Diff.New),
		Skipped: len(b.Diff.Kept), SkippedBytes: convert.Bytes(b.Diff.Kept), Removed: len(b.Diff.Removed), BaseShards: len(b.Shards)}
}

// scripted is the command line that makes the choice of names without a
// terminal: the flags given, the operands, each name as --column (--field
// for a nested field of convert-parquet) and --yes.
func (c *convertFlags) scripted(ops *operands, names []string) string {
	if c.flags == nil || ops == nil {
		return ""
	}
	args := []string{"bpconvert", c.command}
	c.flags.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "column", "field", "yes":
			return
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if f.Value.String() == "true" {
				args = append(args, "--"+f.Name)
			}
			return
		}
		args = append(args, "--"+f.Name, f.Value.String())
	})
	args = append(args, ops.srcs...)
	args = append(args, ops.dst)
	for _, n := range names {
		if c.command == "convert-parquet" && strings.ContainsAny(n, ".\\") {
			args = append(args, "--field", n)
		} else {
			args = append(args, "--column", n)
		}
	}
	args = append(args, "--yes")
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that need no quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// dryRun prints the plan p of a --dry-run, with what a real run would do
// with the destination as it is (see convertFlags.next); it fails as a real
// run would when that run would refuse the destination.
func (e *env) dryRun(ctx context.Context, cf *convertFlags, p plan.Plan) (any, error) {
	refused := cf.next(ctx, &p)
	if e.json {
		if refused != nil {
			p.Fetched = nil // the refusal's plan says nothing of it
		}
		var b bytes.Buffer
		if err := plan.RenderJSON(&b, p); err != nil {
			return nil, err
		}
		if refused != nil {
			return failedPlan{Plan: json.RawMessage(bytes.TrimSpace(b.Bytes()))}, refused
		}
		return jsonDoc(bytes.TrimRight(b.Bytes(), "\n")), nil
	}
	if err := cf.render(e.stdout, p); err != nil {
		return nil, err
	}
	return nil, refused
}

// choose shows a multi-select of the plan's selectable entries, each with
// its evidence, and returns the chosen names.
func (e *env) choose(ctx context.Context, p plan.Plan) ([]string, error) {
	var opts []huh.Option[string]
	for _, en := range p.Entries {
		if !en.Selectable {
			continue
		}
		label := en.Name + "  (" + en.Kind + ")"
		if en.Evidence != nil {
			label += "  " + plan.EvidenceText(*en.Evidence)
		}
		opts = append(opts, huh.NewOption(label, en.Name).Selected(en.Action == plan.ActionExtract))
	}
	if len(opts) == 0 {
		return nil, errors.New("nothing to choose: the source has no payload candidates")
	}
	var chosen []string
	field := huh.NewMultiSelect[string]().
		Title("Which columns hold payloads to extract into packs?").
		Description("space toggles, enter accepts").
		Options(opts...).
		Value(&chosen).
		Validate(func(s []string) error {
			if len(s) == 0 {
				return errors.New("choose at least one column (ctrl+c aborts)")
			}
			return nil
		})
	if err := e.runForm(ctx, huh.NewForm(huh.NewGroup(field))); err != nil {
		return nil, err
	}
	return chosen, nil
}

// confirm asks whether to proceed with the plan shown.
func (e *env) confirm(ctx context.Context) error {
	ok := false
	field := huh.NewConfirm().Title("Proceed with this plan?").Affirmative("Yes").Negative("No").Value(&ok)
	if err := e.runForm(ctx, huh.NewForm(huh.NewGroup(field))); err != nil {
		return err
	}
	if !ok {
		return errAborted
	}
	return nil
}

// runForm runs a huh form on the command's own terminal streams; a user
// abort becomes errAborted.
func (e *env) runForm(ctx context.Context, f *huh.Form) error {
	err := f.WithInput(e.stdin).WithOutput(terminal(e.stderr)).WithShowHelp(true).WithTheme(promptTheme(terminal(e.stderr))).RunWithContext(ctx)
	if errors.Is(err, huh.ErrUserAborted) {
		return errAborted
	}
	return err
}
