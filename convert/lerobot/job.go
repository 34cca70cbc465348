package lerobot

import (
	"context"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// Job converts a LeRobot dataset.
type Job struct {
	src  string
	dst  convert.Dest
	opts Options
	ins  *Inspection
}

var _ convert.Job = (*Job)(nil)

// NewJob returns the job converting the dataset at src (a directory, or
// its s3:// location) into dst, absent or empty: the dataset opts.Source
// holds when the caller opened it (see OpenSource), else the one Plan
// opens at src. A dataset with video features needs opts.Engine. Nothing
// is read yet but the options.
func NewJob(_ context.Context, src string, dst convert.Dest, opts Options) (*Job, error) {
	if _, err := opts.withDefaults(); err != nil {
		return nil, err
	}
	return &Job{src: src, dst: dst, opts: opts}, nil
}

// Plan inspects the dataset, the first time it is called, and describes
// the conversion. It writes nothing. A LeRobot plan has no selectable
// entries (the options choose what is converted), so selected is ignored;
// the inspection reports no progress.
func (j *Job) Plan(ctx context.Context, _ []string, _ progress.Counter) (plan.Plan, error) {
	if j.ins == nil {
		if !j.opts.Source.Opened() {
			t, err := openTree(ctx, j.src, objstore.Options{})
			if err != nil {
				return plan.Plan{}, err
			}
			j.opts.Source = convert.Source{Tree: t}
		}
		if j.opts.Source.File != "" {
			return plan.Plan{}, notDir(j.opts.Source.String())
		}
		ins, err := InspectTree(ctx, j.opts.Source.Tree, j.opts)
		if err != nil {
			return plan.Plan{}, err
		}
		j.ins = ins
	}
	p := j.ins.Plan(j.dst.Location())
	p.Fetched = j.opts.Source.Fetched()
	return p, nil
}

// Run converts the dataset as planned, reporting progress to prog, and
// returns the summary.
func (j *Job) Run(ctx context.Context, prog progress.Counter) (plan.Summary, error) {
	if j.ins == nil {
		return plan.Summary{}, fmt.Errorf("lerobot: %w", convert.ErrNotPlanned)
	}
	res, err := Convert(ctx, j.ins, j.dst, prog)
	if err != nil {
		return plan.Summary{}, err
	}
	res.Summary.Fetched = j.opts.Source.Fetched()
	return res.Summary, nil
}

// Inspection returns what Plan found, or nil before Plan succeeded.
func (j *Job) Inspection() *Inspection { return j.ins }
