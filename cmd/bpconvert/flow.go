package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/charmbracelet/huh"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/stage"
)

// convertFlags are the flags every converter takes.
type convertFlags struct {
	packFlags
	dryRun bool
	yes    bool
}

func (c *convertFlags) register(fs *flag.FlagSet) {
	c.packFlags.register(fs)
	fs.BoolVar(&c.dryRun, "dry-run", false, "print the plan and exit without writing anything")
	fs.BoolVar(&c.yes, "yes", false, "accept the plan without asking (scripted runs)")
}

// checkRefBase refuses a --ref-base other than media: converters write
// their packs at DST/media, and tables reference them from the dataset root.
func (c *convertFlags) checkRefBase(cmd string) error {
	if c.refBase == "" || packcore.CleanRefBase(c.refBase) == mediaDir {
		return nil
	}
	return &usageError{msg: fmt.Sprintf("%s: --ref-base %q is not supported", cmd, c.refBase),
		hint: "converted datasets reference their packs as " + mediaDir + "/pack-NNNN.zip, relative to the dataset root"}
}

// destination resolves a converter's DST to an absolute path and checks,
// before anything is planned, that it is absent or empty and (when src is
// not "") disjoint from the source.
func destination(src, dst string) (string, error) {
	abs, err := filepath.Abs(dst)
	if err != nil {
		return "", err
	}
	if src != "" {
		if err := stage.CheckDisjoint(src, abs); err != nil {
			return "", err
		}
	}
	return abs, stage.CheckDest(abs)
}

// mediaDir is where converters put packs, relative to DST.
const mediaDir = "media"

// errAborted is a declined or aborted prompt: exit 1, nothing written.
var errAborted = errors.New("aborted; nothing was written")

// conversion is what a converter command hands to runConversion: how to
// compute its plan, whether the user must choose entries or confirm, and how
// to execute the plan.
type conversion struct {
	flags *convertFlags
	// plan computes the plan. selected is nil for the selection made on the
	// command line (or the converter's default), else the names the user
	// chose in the prompt. Computing a plan writes nothing.
	plan func(ctx context.Context, selected []string) (plan.Plan, error)
	// mustChoose is set when the user named no payload entries and the
	// converter has no safe default: a terminal gets a multi-select of the
	// plan's selectable entries; elsewhere chooseError is returned.
	mustChoose  bool
	chooseError error
	// confirm asks before executing (unless --yes). Converters that change
	// no table (WebDataset) run without asking unless the user asks for it.
	confirm bool
	// execute carries out the plan, reporting progress; the flow fills in
	// the summary's status, exit code and duration.
	execute func(ctx context.Context, p plan.Plan, prog progress.Counter) (plan.Summary, error)
}

// jsonDoc is a result printed verbatim as the command's JSON document.
type jsonDoc []byte

// interactive reports whether prompts may be shown: stdin and stderr are
// both terminals. Prompts never open /dev/tty on their own.
func (e *env) interactive() bool {
	return isTerminal(e.stdin) && isTerminal(e.stderr)
}

// runConversion computes the plan, shows it, obtains a selection and a
// confirmation where needed, and executes it.
func (e *env) runConversion(ctx context.Context, c conversion) (any, error) {
	p, err := c.plan(ctx, nil)
	if err != nil {
		return nil, err
	}
	if c.flags.dryRun {
		if e.json {
			var b bytes.Buffer
			if err := plan.RenderJSON(&b, p); err != nil {
				return nil, err
			}
			return jsonDoc(bytes.TrimRight(b.Bytes(), "\n")), nil
		}
		return nil, plan.RenderText(e.stdout, p)
	}
	planOut := e.stdout
	if e.json {
		planOut = e.stderr // stdout carries only the final summary
	}
	if !e.quiet || !c.flags.yes {
		if err := plan.RenderText(planOut, p); err != nil {
			return nil, err
		}
		fmt.Fprintln(planOut)
	}
	if c.mustChoose {
		if c.flags.yes || !e.interactive() {
			return nil, c.chooseError
		}
		chosen, err := e.choose(ctx, p)
		if err != nil {
			return nil, err
		}
		if p, err = c.plan(ctx, chosen); err != nil {
			return nil, err
		}
		if err := plan.RenderText(planOut, p); err != nil {
			return nil, err
		}
		fmt.Fprintln(planOut)
	}
	if c.confirm && !c.flags.yes {
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
	sum, err := c.execute(ctx, p, prog)
	if err != nil {
		return nil, err
	}
	// A summary returned without an error is a finished run.
	sum.Status, sum.ExitCode, sum.Duration = plan.StatusOK, exitOK, time.Since(start)
	if !e.quiet {
		plan.RenderSummaryText(e.stderr, sum)
	}
	return sum, nil
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
	in, _ := e.stdin.(io.Reader)
	err := f.WithInput(in).WithOutput(e.stderr).WithShowHelp(true).RunWithContext(ctx)
	if errors.Is(err, huh.ErrUserAborted) {
		return errAborted
	}
	return err
}
