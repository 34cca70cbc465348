//go:build lerobot

package main

import (
	"context"
	"errors"
	"flag"

	"github.com/bpconvert/bpconvert/convert/lerobot"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

func cmdLerobot(ctx context.Context, e *env, args []string) (any, error) {
	const posArgs = "SRC DST"
	fset := flag.NewFlagSet("convert-lerobot", flag.ContinueOnError)
	var cf convertFlags
	cf.register(fset)
	images := fset.String("images", string(lerobot.ImagesExtract), "image features inside the tables: extract (into packs, columns become references) or skip")
	videoMode := fset.String("video", string(lerobot.VideoCopy), "video features: copy (into packs, per episode where possible) or skip")
	noSplit := fset.Bool("no-split-episodes", false, "keep every v3.0 camera file whole; episodes are addressed by [from_ns, to_ns)")
	tolerance := fset.Float64("tolerance-frames", lerobot.DefaultToleranceFrames, "how many frames an episode's interval may differ from its length")
	e.commonFlags(fset)
	pos, err := parseFlags(fset, args, 2, posArgs)
	if err != nil {
		if err == flag.ErrHelp {
			flagHelp(e, fset, posArgs)
		}
		return nil, err
	}
	if m := lerobot.ImageMode(*images); m != lerobot.ImagesExtract && m != lerobot.ImagesSkip {
		return nil, usagef("convert-lerobot: --images %q: want extract or skip", *images)
	}
	if m := lerobot.VideoMode(*videoMode); m != lerobot.VideoCopy && m != lerobot.VideoSkip {
		return nil, usagef("convert-lerobot: --video %q: want copy or skip", *videoMode)
	}
	if !(*tolerance > 0) {
		return nil, usagef("convert-lerobot: --tolerance-frames %g: want a positive number of frames", *tolerance)
	}
	if err := cf.checkRefBase("convert-lerobot"); err != nil {
		return nil, err
	}
	src, dst := pos[0], pos[1]
	absDst, err := destination(src, dst)
	if err != nil {
		return nil, err
	}
	opts := lerobot.Options{
		Images:          lerobot.ImageMode(*images),
		Video:           lerobot.VideoMode(*videoMode),
		NoSplitEpisodes: *noSplit,
		ToleranceFrames: *tolerance,
		MaxPackBytes:    int64(cf.maxPackBytes),
		MaxMembers:      cf.maxMembers,
		NoManifest:      cf.noManifest,
		Version:         buildVersion(),
	}
	var ins *lerobot.Inspection
	return e.runConversion(ctx, conversion{
		flags:   &cf,
		confirm: true,
		plan: func(ctx context.Context, _ []string) (plan.Plan, error) {
			var err error
			if ins, err = lerobot.Inspect(ctx, src, opts); err != nil {
				return plan.Plan{}, lerobotError(err)
			}
			return ins.Plan(absDst), nil
		},
		execute: func(ctx context.Context, p plan.Plan, prog progress.Counter) (plan.Summary, error) {
			ins.Options.Progress = prog
			res, err := lerobot.Convert(ctx, ins, absDst)
			if err != nil {
				return plan.Summary{}, lerobotError(err)
			}
			return plan.Summary{
				Format: "LeRobot",
				Source: ins.Dataset.Root,
				Dest:   absDst,
				Blobs:  res.Pack.Members,
				Bytes:  res.Pack.Bytes,
				Shards: int64(res.Pack.Shards),
				Counts: plan.Counts{
					{Name: "videos", N: int64(res.Videos)},
					{Name: "episode containers", N: int64(res.Cut)},
					{Name: "index entries", N: int64(res.IndexEntries)},
					{Name: "extracted frames", N: res.Frames},
					{Name: "rewritten tables", N: int64(res.Tables)},
					{Name: "copied files", N: int64(res.Copied)},
				},
				Warnings: append([]string{}, ins.Warnings...),
			}, nil
		},
	})
}

// lerobotError maps convert/lerobot errors to the CLI's exit codes: bad
// datasets are 3, a selection that skips everything or overlapping paths 2.
func lerobotError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lerobot.ErrNothingToConvert):
		return &usageError{msg: err.Error(), hint: "drop --images skip or --video skip"}
	case errors.Is(err, lerobot.ErrInvalidInput):
		return &inputError{err: err}
	}
	return err
}
