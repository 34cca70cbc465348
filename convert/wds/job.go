package wds

import (
	"context"
	"errors"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// Job converts WebDataset shards into a dataset of packs and a samples
// table.
type Job struct {
	opts Options
	plan *plan.Plan
}

var _ convert.Job = (*Job)(nil)

// NewJob returns the job converting the shards src names into dst: a shard
// file, a directory (its shards, by name: *.tar, *.tar.gz, *.tgz,
// *.tar.bz2, *.tar.xz, *.tar.zst, ... in sorted order), brace patterns
// joined with "::" (see ExpandShards), an s3:// location of any of these,
// or "-" for one shard read from opts.Stdin. The shards are those of
// opts.Source when the caller opened it (see OpenSource), else src is
// opened here. dst must be absent or empty. Nothing is read yet but the
// options and the listing of the shards.
func NewJob(ctx context.Context, src string, dst convert.Dest, opts Options) (*Job, error) {
	opts.src, opts.dst = src, dst
	if dst == nil {
		return nil, errors.New("wds: no destination given")
	}
	if err := opts.withDefaults().check(); err != nil {
		return nil, &convert.UsageError{Err: err}
	}
	if src != "-" && !opts.Source.Opened() {
		s, err := OpenSource(ctx, src, objstore.Options{})
		if err != nil {
			return nil, err
		}
		opts.Source = s
	}
	return &Job{opts: opts}, nil
}

// Plan reads the shards' headers (the first call only; see inspect) and
// describes the conversion. WebDataset has no payload selection: selected
// is ignored.
func (j *Job) Plan(ctx context.Context, _ []string, prog progress.Counter) (plan.Plan, error) {
	if j.plan != nil {
		return *j.plan, nil
	}
	p, err := inspect(ctx, j.opts, prog)
	if err != nil {
		return p, usage(err)
	}
	p.Fetched = j.opts.Source.Fetched()
	j.plan = &p
	return p, nil
}

// Run converts the shards (see convertShards) and returns the summary.
func (j *Job) Run(ctx context.Context, prog progress.Counter) (plan.Summary, error) {
	if j.plan == nil {
		return plan.Summary{}, fmt.Errorf("wds: %w", convert.ErrNotPlanned)
	}
	res, err := convertShards(ctx, j.opts, prog)
	if err != nil {
		return plan.Summary{}, usage(err)
	}
	res.summary.Fetched = j.opts.Source.Fetched()
	return res.summary, nil
}

// usage turns errors about the shard names themselves (a bad pattern, a
// directory without shards) into usage errors.
func usage(err error) error {
	if errors.Is(err, ErrBadPattern) || errors.Is(err, ErrNoShards) {
		return &convert.UsageError{Err: err, Hint: "name a shard, a directory of shards, a brace pattern such as shards/train-{000000..000099}.tar, or - for stdin"}
	}
	return err
}
