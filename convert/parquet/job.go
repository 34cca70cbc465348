package parquet

import (
	"context"
	"errors"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/srctree"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// Job is a parquet conversion on the converter contract.
type Job struct {
	// Inspection is the inspected source.
	Inspection *Inspection
	// Dst is the destination directory.
	Dst string
	// Columns and Fields are the selection named by the user: top-level
	// column names and nested field paths. Both empty select the Hugging
	// Face media columns, when the source declares any.
	Columns []string
	Fields  [][]string
	// Options are the conversion options (Progress is set by Run).
	Options Options

	sel Selection
}

var (
	_ convert.Job     = (*Job)(nil)
	_ convert.Chooser = (*Job)(nil)
)

// NewJob inspects src (see Inspect) and returns the job converting it into
// dst with the named selection.
func NewJob(ctx context.Context, src, dst string, columns []string, fields [][]string, opts Options) (*Job, error) {
	ins, err := Inspect(ctx, src, opts)
	if err != nil {
		return nil, usage(err)
	}
	return newJob(ins, dst, columns, fields, opts)
}

// NewTreeJob is NewJob for a source opened as a tree (see InspectTree): a
// source in a bucket whose reads the caller counts.
func NewTreeJob(ctx context.Context, tree *srctree.Tree, file, dst string, columns []string, fields [][]string, opts Options) (*Job, error) {
	ins, err := InspectTree(ctx, tree, file, opts)
	if err != nil {
		return nil, usage(err)
	}
	return newJob(ins, dst, columns, fields, opts)
}

func newJob(ins *Inspection, dst string, columns []string, fields [][]string, opts Options) (*Job, error) {
	j := &Job{Inspection: ins, Dst: dst, Columns: columns, Fields: fields, Options: opts}
	if _, err := ins.Select(columns, fields); err != nil && !errors.Is(err, ErrNeedSelection) {
		return nil, usage(err)
	}
	return j, nil
}

// NeedChoice returns a usage error when the user named no column and the
// source declares no media features.
func (j *Job) NeedChoice() error {
	if _, err := j.Inspection.Select(j.Columns, j.Fields); errors.Is(err, ErrNeedSelection) {
		return usage(err)
	}
	return nil
}

// Plan selects the named entries (candidate names as the plan shows them)
// or, when selected is nil, the job's own selection, and plans it. A
// selection still to be made plans every candidate as not chosen.
func (j *Job) Plan(_ context.Context, selected []string) (plan.Plan, error) {
	var err error
	if selected != nil {
		j.sel, err = j.Inspection.Select(nil, j.pathsByName(selected))
	} else {
		j.sel, err = j.Inspection.Select(j.Columns, j.Fields)
	}
	if errors.Is(err, ErrNeedSelection) {
		j.sel, err = Selection{}, nil
	}
	if err != nil {
		return plan.Plan{}, usage(err)
	}
	return j.Inspection.Plan(j.sel, j.Dst), nil
}

// Run converts the planned selection.
func (j *Job) Run(ctx context.Context, prog progress.Counter) (plan.Summary, error) {
	o := j.Options
	o.Progress = prog
	res, err := Convert(ctx, j.Inspection, j.sel, j.Dst, o)
	if err != nil {
		return plan.Summary{}, usage(err)
	}
	return plan.Summary{
		Format: j.Inspection.Format(),
		Source: j.Inspection.Root,
		Dest:   j.Dst,
		Blobs:  res.Pack.Members,
		Bytes:  res.Pack.Bytes,
		Shards: int64(res.Pack.Shards),
		Counts: plan.Counts{
			{Name: "rewritten tables", N: int64(res.Rewritten)},
			{Name: "copied tables", N: int64(res.Copied)},
			{Name: "copied files", N: int64(res.Files)},
			{Name: "rows", N: res.Rows},
		},
		Warnings: append(append([]string{}, j.Inspection.Warnings...), convert.GroupWarnings(res.Pack.GroupsSplit)...),
		Upload:   res.Upload,
	}, nil
}

// pathsByName maps entry names chosen in a prompt back to candidate paths.
func (j *Job) pathsByName(names []string) [][]string {
	var out [][]string
	for _, n := range names {
		for _, c := range j.Inspection.Candidates {
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
