package parquet

import (
	"context"
	"errors"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// Job converts parquet tables or a Hugging Face dataset.
type Job struct {
	ins *Inspection
	dst convert.Dest
	// planned is set once a plan was made (Run requires one).
	planned bool
	opts    Options
	sel     Selection
}

var (
	_ convert.Job     = (*Job)(nil)
	_ convert.Chooser = (*Job)(nil)
)

// NewJob returns the job converting src (a parquet file, a directory of
// tables, a Hugging Face dataset or save_to_disk directory, opened by the
// caller as opts.Source or, when that is not set, here: see OpenSource)
// into dst, absent or empty, with the selection opts.Columns and
// opts.Fields name. Nothing is read but the source's listing: Plan
// inspects it (footers and a sample of values; see Inspect).
func NewJob(ctx context.Context, src string, dst convert.Dest, opts Options) (*Job, error) {
	if !opts.Source.Opened() {
		s, err := openSource(ctx, src)
		if err != nil {
			return nil, err
		}
		opts.Source = s
	}
	return &Job{dst: dst, opts: opts}, nil
}

// NeedChoice returns a usage error when the user named no column and the
// source declares no media features (nil before a plan was made).
func (j *Job) NeedChoice() error {
	if j.ins == nil {
		return nil
	}
	if _, err := j.ins.Select(j.opts.Columns, j.opts.Fields); errors.Is(err, ErrNeedSelection) {
		return usage(err)
	}
	return nil
}

// Plan inspects the source, the first time it is called (see Inspect),
// selects the named entries (candidate names as the plan shows them) or,
// when selected is nil, the job's own selection, and plans it. A
// selection still to be made plans every candidate as not chosen.
func (j *Job) Plan(ctx context.Context, selected []string, _ progress.Counter) (plan.Plan, error) {
	if j.ins == nil {
		ins, err := InspectTree(ctx, j.opts.Source.Tree, j.opts.Source.File, j.opts)
		if err != nil {
			return plan.Plan{}, usage(err)
		}
		if _, err := ins.Select(j.opts.Columns, j.opts.Fields); err != nil && !errors.Is(err, ErrNeedSelection) {
			return plan.Plan{}, usage(err)
		}
		j.ins = ins
	}
	var err error
	if selected != nil {
		j.sel, err = j.ins.Select(nil, j.pathsByName(selected))
	} else {
		j.sel, err = j.ins.Select(j.opts.Columns, j.opts.Fields)
	}
	if errors.Is(err, ErrNeedSelection) {
		j.sel, err = Selection{}, nil
	}
	if err != nil {
		return plan.Plan{}, usage(err)
	}
	j.planned = true
	p := j.ins.Plan(j.sel, j.dst.Location())
	p.Fetched = j.opts.Source.Fetched()
	return p, nil
}

// Run converts the planned selection.
func (j *Job) Run(ctx context.Context, prog progress.Counter) (plan.Summary, error) {
	if !j.planned {
		return plan.Summary{}, fmt.Errorf("parquet: %w", convert.ErrNotPlanned)
	}
	res, err := Convert(ctx, j.ins, j.sel, j.dst, j.opts, prog)
	if err != nil {
		return plan.Summary{}, usage(err)
	}
	res.Summary.Fetched = j.opts.Source.Fetched()
	return res.Summary, nil
}

// pathsByName maps entry names chosen in a prompt back to candidate paths.
func (j *Job) pathsByName(names []string) [][]string {
	var out [][]string
	for _, n := range names {
		for _, c := range j.ins.Candidates {
			if c.Name() == n {
				out = append(out, c.Path)
				break
			}
		}
	}
	return out
}

// usage turns selection errors into usage errors with a hint.
func usage(err error) error {
	switch {
	case errors.Is(err, ErrNeedSelection):
		return &convert.UsageError{Err: err,
			Hint: "name the payload columns: --column NAME (top level) or --field a.b.c (nested), or run on a terminal to choose"}
	case errors.Is(err, ErrBadSelection):
		return &convert.UsageError{Err: err, Hint: "run with --dry-run to list the candidate columns"}
	}
	return err
}
