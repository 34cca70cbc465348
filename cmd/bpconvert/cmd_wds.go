package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/bpconvert/bpconvert/convert/wds"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

func cmdWDS(ctx context.Context, e *env, args []string) (any, error) {
	const posArgs = "SRC DST"
	fset := flag.NewFlagSet("convert-wds", flag.ContinueOnError)
	var cf convertFlags
	cf.register(fset)
	shardPrefix := fset.Bool("shard-prefix", false, "prefix every key with its shard's stem (train-000003/000123.jpg), for keys that repeat across shards")
	noTable := fset.Bool("no-table", false, "do not write samples.parquet")
	inline := fset.String("inline", "", "comma-separated fields (e.g. cls,txt,json) stored inline in samples.parquet instead of as references")
	confirm := fset.Bool("confirm", false, "ask before converting (WebDataset conversion changes no table, so it does not ask by default)")
	e.commonFlags(fset)
	pos, err := parseFlags(fset, args, 2, posArgs)
	if err != nil {
		if err == flag.ErrHelp {
			flagHelp(e, fset, posArgs)
		}
		return nil, err
	}
	if err := cf.checkRefBase("convert-wds"); err != nil {
		return nil, err
	}
	// SRC may be a pattern or "-": only the destination itself is checked.
	absDst, err := destination("", pos[1])
	if err != nil {
		return nil, err
	}
	var fields []string
	for _, f := range strings.Split(*inline, ",") {
		if f = strings.TrimSpace(f); f != "" {
			fields = append(fields, strings.ToLower(f))
		}
	}
	opts := wds.Options{
		Src:          pos[0],
		Dst:          absDst,
		Stdin:        e.stdin,
		ShardPrefix:  *shardPrefix,
		NoTable:      *noTable,
		Inline:       fields,
		MaxPackBytes: int64(cf.maxPackBytes),
		MaxMembers:   cf.maxMembers,
	}
	conv := conversion{
		flags:   &cf,
		confirm: *confirm,
		plan: func(ctx context.Context, _ []string) (plan.Plan, error) {
			if pos[0] == "-" && !cf.dryRun {
				// A stream can be read once: the plan says what it can
				// without reading it, and the conversion checks as it goes.
				return wds.Inspect(ctx, opts, progress.Nop{})
			}
			p, err := wds.Inspect(ctx, opts, e.newProgress("inspect"))
			if err != nil && len(p.Entries) > 0 && !e.quiet {
				plan.RenderText(e.stderr, p) // the plan lists every problem found
				fmt.Fprintln(e.stderr)
			}
			return p, wdsError(err)
		},
		execute: func(ctx context.Context, p plan.Plan, prog progress.Counter) (plan.Summary, error) {
			res, err := wds.Convert(ctx, opts, prog)
			if err != nil {
				return plan.Summary{}, wdsError(err)
			}
			return res.Summary(), nil
		},
	}
	return e.runConversion(ctx, conv)
}

// wdsError maps convert/wds errors to exit codes: bad shards are invalid
// input (3), bad patterns and missing shards usage errors (2).
func wdsError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, wds.ErrInvalidInput):
		return &inputError{err: err, hint: wds.Hint(err)}
	case errors.Is(err, wds.ErrBadPattern), errors.Is(err, wds.ErrNoShards):
		return &usageError{msg: err.Error(), hint: "name a shard, a directory of shards, a brace pattern such as shards/train-{000000..000099}.tar, or - for stdin"}
	}
	return err
}
