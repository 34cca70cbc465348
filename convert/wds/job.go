package wds

import (
	"context"
	"errors"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// Job is a WebDataset conversion on the converter contract: Plan runs
// Inspect, Run runs Convert.
type Job struct {
	// Options name the shards, the destination and the settings.
	Options Options
	// InspectProgress receives the header pass's progress during Plan; nil
	// for none.
	InspectProgress progress.Counter
}

var _ convert.Job = (*Job)(nil)

// Plan inspects the shards (see Inspect). WebDataset has no payload
// selection: selected is ignored.
func (j *Job) Plan(ctx context.Context, _ []string) (plan.Plan, error) {
	p, err := Inspect(ctx, j.Options, j.InspectProgress)
	return p, usage(err)
}

// Run converts the shards (see Convert) and returns the summary.
func (j *Job) Run(ctx context.Context, prog progress.Counter) (plan.Summary, error) {
	res, err := Convert(ctx, j.Options, prog)
	if err != nil {
		return plan.Summary{}, usage(err)
	}
	return res.Summary(), nil
}

// usage turns errors about the shard names themselves (a bad pattern, a
// directory without shards) into usage errors.
func usage(err error) error {
	if errors.Is(err, ErrBadPattern) || errors.Is(err, ErrNoShards) {
		return &convert.UsageError{Err: err, Hint: "name a shard, a directory of shards, a brace pattern such as shards/train-{000000..000099}.tar, or - for stdin"}
	}
	return err
}

// ShardFiles lists the shard files that src names (see Options.Src), for
// identifying a run's sources; standard input ("-") lists none.
func ShardFiles(ctx context.Context, src string) ([]string, error) {
	if src == "-" {
		return nil, nil
	}
	srcs, err := resolveSources(ctx, Options{Src: src})
	if err != nil {
		return nil, usage(err)
	}
	var out []string
	for _, s := range srcs.Shards {
		if s.Path != "" {
			out = append(out, s.Path)
		}
	}
	return out, nil
}
