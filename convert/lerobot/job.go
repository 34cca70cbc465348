package lerobot

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/srctree"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// Job is a LeRobot conversion on the converter contract: Plan inspects the
// dataset (Inspect) and describes the result, Run converts it (Convert).
type Job struct {
	// Src is the dataset directory or its s3:// location; Dst the
	// destination, absent or empty.
	Src, Dst string
	// Tree, when set, is Src opened (srctree.Open), by a caller that
	// counts what reading it fetches; otherwise Plan opens Src.
	Tree *srctree.Tree
	// Options are the conversion's settings; a dataset with video features
	// needs Options.Engine.
	Options Options

	ins *Inspection
}

var _ convert.Job = (*Job)(nil)

// Plan inspects the dataset, the first time it is called, and describes
// the conversion. It writes nothing. A LeRobot plan has no selectable
// entries (the options choose what is converted), so selected is ignored.
func (j *Job) Plan(ctx context.Context, _ []string) (plan.Plan, error) {
	dst := j.Dst
	if !objstore.IsRemote(dst) {
		var err error
		if dst, err = filepath.Abs(j.Dst); err != nil {
			return plan.Plan{}, err
		}
	}
	if j.ins == nil {
		var ins *Inspection
		var err error
		if j.Tree != nil {
			ins, err = InspectTree(ctx, j.Tree, j.Options)
		} else {
			ins, err = Inspect(ctx, j.Src, j.Options)
		}
		if err != nil {
			return plan.Plan{}, err
		}
		j.ins = ins
	}
	return j.ins.Plan(dst), nil
}

// Run converts the dataset as planned, reporting progress to prog, and
// returns the summary (Result.Summary).
func (j *Job) Run(ctx context.Context, prog progress.Counter) (plan.Summary, error) {
	if j.ins == nil {
		return plan.Summary{}, errors.New("lerobot: Run called before Plan")
	}
	res, err := Convert(ctx, j.ins, j.Dst, prog)
	if err != nil {
		return plan.Summary{}, err
	}
	return res.Summary, nil
}

// Inspection returns what Plan found, or nil before Plan succeeded.
func (j *Job) Inspection() *Inspection { return j.ins }
