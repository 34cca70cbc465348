package parquet

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/srctree"
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

// NewJob inspects src (a parquet file, a directory of tables, a Hugging
// Face dataset or save_to_disk directory; see Inspect: footers and a
// sample of values) and returns the job converting it into dst, absent or
// empty, with the selection opts.Columns and opts.Fields name.
func NewJob(ctx context.Context, src string, dst convert.Dest, opts Options) (*Job, error) {
	var ins *Inspection
	var err error
	if opts.Tree != nil {
		var file string
		if file, err = treeFile(opts.Tree, src); err == nil {
			ins, err = InspectTree(ctx, opts.Tree, file, opts)
		}
	} else {
		ins, err = Inspect(ctx, src, opts)
	}
	if err != nil {
		return nil, usage(err)
	}
	j := &Job{ins: ins, dst: dst, opts: opts}
	if _, err := ins.Select(opts.Columns, opts.Fields); err != nil && !errors.Is(err, ErrNeedSelection) {
		return nil, usage(err)
	}
	return j, nil
}

// NeedChoice returns a usage error when the user named no column and the
// source declares no media features.
func (j *Job) NeedChoice() error {
	if _, err := j.ins.Select(j.opts.Columns, j.opts.Fields); errors.Is(err, ErrNeedSelection) {
		return usage(err)
	}
	return nil
}

// Plan selects the named entries (candidate names as the plan shows them)
// or, when selected is nil, the job's own selection, and plans it. A
// selection still to be made plans every candidate as not chosen.
func (j *Job) Plan(_ context.Context, selected []string, _ progress.Counter) (plan.Plan, error) {
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
	return j.ins.Plan(j.sel, j.dst.Location()), nil
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

// treeFile returns the file of tree (opened by srctree.OpenSource) that
// src names: "" when src is the tree's root, the name of the file the
// tree was opened for when src is that file.
func treeFile(tree *srctree.Tree, src string) (string, error) {
	if src == tree.Location() {
		return "", nil
	}
	if file := path.Base(filepath.ToSlash(src)); tree.Path(file) == src {
		return file, nil
	}
	return "", fmt.Errorf("parquet: %s is not the source the tree of %s was opened for", src, tree.Location())
}
