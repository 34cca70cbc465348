package lance

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/lancefmt/lancestore"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/srctree"
)

// TableDir is the rewritten dataset, relative to DST.
const TableDir = "table.lance"

// MetaKey is the schema metadata key under which the rewritten dataset
// records what was extracted (JSON, see Record).
const MetaKey = "bpconvert"

// External says what happens to blob v2 values stored outside the dataset.
type External string

// External modes.
const (
	// ExternalCopy packs the external file's bytes like any other blob.
	ExternalCopy External = "copy"
	// ExternalKeep leaves the URI string as the cell's value.
	ExternalKeep External = "keep"
)

// Options configure a Lance conversion.
type Options struct {
	// Options are the settings every converter takes. ToolVersion is
	// recorded in the rewritten dataset's metadata; QuickPlan skips the
	// evidence pass (which reads every value of a plain binary column),
	// so the column is read once, by the conversion, which checks every
	// value as it goes.
	convert.Options
	// Version selects the source version; 0 the latest.
	Version uint64
	// Columns names the columns to extract; none selects every blob
	// column.
	Columns []string
	// External is what happens to external blobs (default ExternalCopy).
	External External
}

// OpenSource opens the dataset directory src names (a local directory, or
// a prefix in a bucket listed now, its reads counted in o.Stats when set;
// see srctree.OpenSource) as a converter's source (see
// convert.Options.Source). A local path that cannot be opened gives a
// *srctree.LocalError; nothing at src in a bucket is an *InputError (no
// Lance dataset there); a store's other failures (a missing bucket,
// refused credentials) are its own.
func OpenSource(ctx context.Context, src string, o objstore.Options) (convert.Source, error) {
	t, file, err := srctree.OpenSource(ctx, src, o)
	var local *srctree.LocalError
	if err != nil && !errors.As(err, &local) {
		return convert.Source{}, bucketError("", strings.TrimSuffix(src, "/"), err)
	}
	if err != nil {
		return convert.Source{}, err
	}
	return convert.Source{Tree: t, File: file}, nil
}

// bucketError words a failure to read the dataset src in object storage:
// an *InputError or *UsageError says what is wrong as it is; nothing there
// (not a missing bucket) is bad input naming src; the store's other
// failures are named with command, when it is not "" (the caller names
// them otherwise).
func bucketError(command, src string, err error) error {
	var ie *convert.InputError
	var ue *convert.UsageError
	switch {
	case errors.As(err, &ie), errors.As(err, &ue):
		return err
	case errors.Is(err, objstore.ErrNotExist) && !errors.Is(err, objstore.ErrNoBucket):
		e := convert.Invalid("convert-lance", src, errors.New("no Lance dataset there (no such object or prefix)"))
		e.Hint = "SRC names the dataset's directory (holding _versions/ and data/), e.g. s3://BUCKET/PREFIX/NAME.lance"
		return e
	case command != "":
		return fmt.Errorf("%s: %w", command, err)
	}
	return err
}

// openDataset opens the dataset of the source s at the version o names
// (see lancestore.OpenTree). lancefmt reads a local dataset by its path:
// its messages name it as it was given.
func openDataset(ctx context.Context, s convert.Source, o lancefmt.OpenOptions) (*lancefmt.Dataset, error) {
	if !s.Remote() && s.Name != "" {
		return lancefmt.Open(ctx, s.Name, o)
	}
	return lancestore.OpenTree(ctx, s.Tree, s.File, o)
}

// candidate is a column that may hold payloads.
type candidate struct {
	field *lancefmt.Field
	kind  string // "binary column", "large_binary column", "blob v1 column", "blob v2 column"
	blob  int    // blob version, 0 for plain binary
	ev    *columnEvidence
}

// Job converts one version of one Lance dataset.
type Job struct {
	src   string
	dst   convert.Dest
	opts  Options
	ds    *lancefmt.Dataset
	cands []*candidate
	sel   []*candidate
	rw    *lancefmt.RewritePlan
	// planned is set once a plan was made (Run requires one).
	planned bool
	// base is the committed output an append extends (nil for an
	// ordinary run), app what the append does.
	base committedFiles
	app  *appendState
}

var (
	_ convert.Job     = (*Job)(nil)
	_ convert.Chooser = (*Job)(nil)
)

// NewJob opens the dataset at src, a local directory or s3://BUCKET/PREFIX
// (the version opts name), and checks the named columns. The dataset is
// read through opts.Source when the caller opened it (see OpenSource;
// src then names it in messages and the plan), else opened here. Nothing
// is read beyond the listing of _versions and the manifest.
func NewJob(ctx context.Context, src string, dst convert.Dest, opts Options) (*Job, error) {
	if opts.External == "" {
		opts.External = ExternalCopy
	}
	if opts.External != ExternalCopy && opts.External != ExternalKeep {
		return nil, &convert.UsageError{Err: fmt.Errorf("lance: --external %q: want copy or keep", opts.External)}
	}
	if !opts.Source.Opened() {
		s, err := OpenSource(ctx, src, objstore.Options{})
		var local *srctree.LocalError
		if errors.As(err, &local) {
			return nil, convert.Invalid("lance", "", err)
		}
		if err != nil {
			return nil, err
		}
		s.Name = src
		opts.Source = s
	}
	ds, err := openDataset(ctx, opts.Source, lancefmt.OpenOptions{Version: opts.Version})
	if err != nil {
		if storeFailed(err) {
			return nil, err
		}
		ie := (&Job{src: src}).located(err)
		var fe *lancefmt.UnsupportedFeaturesError
		switch {
		case errors.Is(err, lancefmt.ErrVersionNotFound):
			ie.Hint = "run bpconvert lance-inspect on the dataset to list its versions"
		case errors.As(err, &fe) && fe.Readable != 0:
			ie.Hint = fmt.Sprintf("pass --dataset-version %d to convert that version (the changes after it are left out)", fe.Readable)
		}
		return nil, ie
	}
	j := &Job{src: src, dst: dst, opts: opts, ds: ds}
	if opts.Base != nil {
		j.base = opts.Base
	}
	for _, f := range ds.Schema().Fields {
		c := &candidate{field: f, blob: f.BlobVersion()}
		switch {
		case c.blob == 1:
			c.kind = "blob v1 column"
		case c.blob == 2:
			c.kind = "blob v2 column"
		case f.LogicalType == "binary" || f.LogicalType == "large_binary":
			c.kind = f.LogicalType + " column"
		default:
			continue
		}
		j.cands = append(j.cands, c)
	}
	for _, name := range opts.Columns {
		if j.candidate(name) == nil {
			return nil, j.unknown(name)
		}
	}
	if j.base != nil {
		if err := j.prepareAppend(ctx); err != nil {
			return nil, j.storeFirst(err)
		}
	}
	return j, nil
}

// candidate returns the candidate column named name, or nil.
func (j *Job) candidate(name string) *candidate {
	for _, c := range j.cands {
		if c.field.Name == name {
			return c
		}
	}
	return nil
}

// candidateList names the candidates with their kinds.
func (j *Job) candidateList() string {
	if len(j.cands) == 0 {
		return "none (no binary, large_binary or blob column)"
	}
	var parts []string
	for _, c := range j.cands {
		parts = append(parts, fmt.Sprintf("%s (%s)", c.field.Name, strings.TrimSuffix(c.kind, " column")))
	}
	return strings.Join(parts, ", ")
}

func (j *Job) unknown(name string) error {
	why := "is not a column"
	if j.ds.Schema().Field(name) != nil {
		why = "is not a binary, large_binary or blob column"
	}
	return &convert.UsageError{Err: fmt.Errorf("lance: --column %q %s; candidates: %s", name, why, j.candidateList()),
		Hint: "run with --dry-run to see every candidate with its evidence"}
}

// NeedChoice returns a usage error when no column was named and the dataset
// has no blob column: plain binary columns may hold hashes or embeddings,
// so they are extracted only when named.
func (j *Job) NeedChoice() error {
	if len(j.opts.Columns) > 0 {
		return nil
	}
	for _, c := range j.cands {
		if c.blob > 0 {
			return nil
		}
	}
	return &convert.UsageError{
		Err:  fmt.Errorf("lance: no payload column selected and the dataset has no blob column; candidates: %s", j.candidateList()),
		Hint: "name the payload columns with --column NAME (repeatable), or run on a terminal to choose",
	}
}

// choose sets the selection: names, when not nil, else the named columns,
// else every blob column.
func (j *Job) choose(names []string) error {
	if names == nil {
		names = j.opts.Columns
		if len(names) == 0 {
			for _, c := range j.cands {
				if c.blob > 0 {
					names = append(names, c.field.Name)
				}
			}
		}
	}
	j.sel = nil
	for _, n := range names {
		c := j.candidate(n)
		if c == nil {
			return j.unknown(n)
		}
		if !j.selected(c) {
			j.sel = append(j.sel, c)
		}
	}
	if j.base != nil {
		return nil // planAppend plans the rewrite of the new fragments
	}
	rw, err := j.ds.PlanRewrite(j.selNames())
	if err != nil {
		return j.located(err)
	}
	j.rw = rw
	return nil
}

// selNames names the selected columns.
func (j *Job) selNames() []string {
	var cols []string
	for _, c := range j.sel {
		cols = append(cols, c.field.Name)
	}
	return cols
}

// chooseAppend plans, once the columns are chosen, the rewrite of the
// new fragments of an append.
func (j *Job) chooseAppend() error {
	if err := j.checkOptions(); err != nil {
		return err
	}
	rw, err := j.ds.PlanRewriteFragments(j.selNames(), j.app.newIDs())
	if err != nil {
		return j.located(err)
	}
	j.rw = rw
	return nil
}

// prepareAppend sorts the fragments of the version against the committed
// output an append extends (from manifests alone) and gives the output
// the diff in fragments (see appendState.fragmentDiff), before the run
// asks whether anything is new.
func (j *Job) prepareAppend(ctx context.Context) error {
	app, err := j.planAppend(ctx, j.base)
	if err != nil {
		return err
	}
	j.app = app
	if b := j.opts.Base; b != nil {
		b.Diff = app.fragmentDiff(j.src)
	}
	return nil
}

func (j *Job) selected(c *candidate) bool {
	for _, s := range j.sel {
		if s == c {
			return true
		}
	}
	return false
}

// Plan computes the plan for the selection (see convert.Job).
func (j *Job) Plan(ctx context.Context, selected []string, _ progress.Counter) (plan.Plan, error) {
	p, err := j.planFor(ctx, selected)
	if err == nil {
		p.Fetched = j.opts.Source.Fetched()
	}
	return p, j.storeFirst(err)
}

func (j *Job) planFor(ctx context.Context, selected []string) (plan.Plan, error) {
	if err := j.choose(selected); err != nil {
		return plan.Plan{}, err
	}
	if j.app != nil {
		if err := j.chooseAppend(); err != nil {
			return plan.Plan{}, err
		}
	}
	for _, c := range j.cands {
		if c.ev == nil && j.opts.QuickPlan {
			// Not read: the plan says so rather than count zeros.
			c.ev = &columnEvidence{ev: plan.Evidence{Values: int64(j.scanRows()), NotSampled: true}}
		}
		if c.ev == nil {
			ev, err := j.evidence(ctx, c)
			if err != nil {
				return plan.Plan{}, err
			}
			c.ev = ev
		}
	}
	j.planned = true
	return j.plan(), nil
}
