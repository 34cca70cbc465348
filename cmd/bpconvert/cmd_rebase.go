package main

import (
	"context"
	"fmt"
	"io"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/formats"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/rebase"
	flag "github.com/spf13/pflag"
)

// rebaseResult is what rebase reports (--json): the plan, and what the run
// did unless it was a dry run.
type rebaseResult struct {
	Plan *rebase.Plan `json:"plan"`
	// Written counts the tables written again, Unchanged those whose
	// references already had the new base.
	Written   int  `json:"written"`
	Unchanged int  `json:"unchanged"`
	DryRun    bool `json:"dry_run,omitempty"`
}

func cmdRebase(e *env, fset *flag.FlagSet) runFunc {
	var base refBaseFlag
	fset.Var(&base, "ref-base", "what the references will call the dataset root, `BASE` in zip://KEY::BASE/media/pack-NNNN.zip:\n"+
		". for relative to the dataset root (the converters' default), an absolute path (/data/ds),\n"+
		"a URL (s3://bucket/ds, https://host/ds) or a path starting with ./ or ../ (required)")
	dryRun := fset.Bool("dry-run", false, "print the plan and write nothing")
	return func(ctx context.Context, pos []string) (any, error) {
		if !fset.Changed("ref-base") {
			return nil, &usageError{msg: "rebase: --ref-base is required",
				hint: `give the new base: --ref-base "$PWD/DST" for readers in any directory, --ref-base . for references relative to the dataset root`}
		}
		d, err := convert.ParseDest(pos[0], "")
		if err != nil {
			return nil, err
		}
		if d.Remote() {
			return nil, &usageError{msg: fmt.Sprintf("rebase: %s: rebase works on a dataset on this machine", objstore.RedactLocation(pos[0])),
				hint: "rebase the local copy to where it will be read (--ref-base s3://BUCKET/PREFIX), then upload it"}
		}
		p, err := rebase.New(ctx, d.Location(), rebase.Options{Base: string(base), Joiners: formats.Joiners, ToolVersion: buildVersion()})
		if err != nil {
			return nil, err
		}
		if !e.json && !e.quiet {
			writeRebasePlan(e.stdout, p)
		}
		if *dryRun {
			return rebaseResult{Plan: p, DryRun: true}, nil
		}
		res, err := p.Run(ctx)
		if err != nil {
			return nil, err
		}
		e.infof("rebased %s: %d of %s written again (%s read); packs untouched",
			pos[0], res.Tables-res.Unchanged, plan.CountText(int64(res.Tables), "tables"), plan.HumanBytes(res.Bytes))
		return rebaseResult{Plan: p, Written: res.Tables - res.Unchanged, Unchanged: res.Unchanged}, nil
	}
}

// writeRebasePlan prints what a rebase will do.
func writeRebasePlan(w io.Writer, p *rebase.Plan) {
	fmt.Fprintf(w, "Rebase %s (written by %s)\n", p.Dataset, p.Command)
	fmt.Fprintf(w, "  references resolve now %s\n", rebase.Where(p.From))
	fmt.Fprintf(w, "  and will resolve %s\n", rebase.Where(p.To))
	fmt.Fprintf(w, "  tables to write again: %s, %s; %s untouched\n", plan.CountText(int64(len(p.Tables)), "tables"),
		plan.HumanBytes(p.Bytes), plan.CountText(int64(p.Shards), "pack shards"))
	for _, t := range p.Tables {
		fmt.Fprintf(w, "    %s (%s)\n", t.Path, plan.HumanBytes(t.Bytes))
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}
