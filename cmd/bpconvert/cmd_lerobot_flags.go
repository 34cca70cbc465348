package main

import (
	"context"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lerobot"
	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	flag "github.com/spf13/pflag"
)

// lerobotFlags are convert-lerobot's flags. Both programs define them: this
// one, for help, completion and the plan of --dry-run, and
// bpconvert-lerobot (tag lerobot), which converts.
type lerobotFlags struct {
	cf        convertFlags
	images    string
	video     string
	noSplit   bool
	tolerance float64
}

func cmdLerobot(e *env, fset *flag.FlagSet) runFunc {
	o := &lerobotFlags{}
	o.cf.register(fset)
	o.cf.registerPart(fset, e)
	fset.StringVar(&o.images, "images", string(lerobot.ImagesExtract), "image features inside the tables: `MODE` extract (into packs, columns become references) or skip")
	fset.StringVar(&o.video, "video", string(lerobot.VideoCopy), "video features: `MODE` copy (into packs, per episode where possible) or skip")
	choices(fset, "images", lerobot.ImagesExtract, lerobot.ImagesSkip)
	choices(fset, "video", lerobot.VideoCopy, lerobot.VideoSkip)
	fset.BoolVar(&o.noSplit, "no-split-episodes", false, "keep every v3.0 camera file whole; episodes are addressed by [from_ns, to_ns)")
	fset.Float64Var(&o.tolerance, "tolerance-frames", lerobot.DefaultToleranceFrames, "how many frames `N` an episode's interval may differ from its length")
	fset.MarkHidden("allow-removed") // an append refuses converted episodes that are gone
	return func(ctx context.Context, pos []string) (any, error) {
		return runLerobot(ctx, e, fset, o, pos)
	}
}

// run converts the dataset at pos[0] into pos[1] with the video engine
// given, or, with none (a bpconvert without libav), plans it from its
// metadata: the camera files' keyframes are then not probed. Every LeRobot
// conversion asks before writing (tables may change).
func (o *lerobotFlags) run(ctx context.Context, e *env, fset *flag.FlagSet, pos []string, engine video.Engine) (any, error) {
	cf := &o.cf
	images, videoMode, noSplit, tolerance := &o.images, &o.video, &o.noSplit, &o.tolerance
	var err error
	if m := lerobot.ImageMode(*images); m != lerobot.ImagesExtract && m != lerobot.ImagesSkip {
		return nil, usagef("convert-lerobot: --images %q: want extract or skip", *images)
	}
	if m := lerobot.VideoMode(*videoMode); m != lerobot.VideoCopy && m != lerobot.VideoSkip {
		return nil, usagef("convert-lerobot: --video %q: want copy or skip", *videoMode)
	}
	if !(*tolerance > 0) {
		return nil, usagef("convert-lerobot: --tolerance-frames %g: want a positive number of frames", *tolerance)
	}
	src := pos[0]
	e.setOperands(fset.Name(), pos[:1], pos[1])
	// The dataset is opened (in a bucket: listed) once, here, and every
	// read of it in a bucket is counted for the plan and the summary.
	source, err := cf.openSource(ctx, src, lerobot.OpenSource)
	if err != nil {
		return nil, err
	}
	src = source.Location()
	if source.Tree.Empty() {
		return nil, &inputError{err: fmt.Errorf("convert-lerobot: %s holds no objects; a LeRobot dataset holds meta/info.json", src)}
	}
	absDst, err := cf.destination(ctx, source, pos[1])
	if err != nil {
		return nil, err
	}
	if err := o.identify(ctx, fset, source); err != nil {
		if source.Remote() {
			return nil, storeError("convert-lerobot", err)
		}
		return nil, err
	}
	job, err := lerobot.NewJob(ctx, src, absDst, lerobot.Options{
		Options:         cf.options(),
		Images:          lerobot.ImageMode(*images),
		Video:           lerobot.VideoMode(*videoMode),
		NoSplitEpisodes: *noSplit,
		ToleranceFrames: *tolerance,
		Engine:          engine,
		NoProbe:         engine == nil,
	})
	if err != nil {
		return nil, err
	}
	return e.runJob(ctx, cf, job)
}

// identify records what the run produces (convertFlags.identify) and, for
// --append into a destination holding a committed output, reads that
// output. A LeRobot dataset grows by episodes, which LeRobot writes into
// the files that hold earlier ones as often as into new files, so a
// source file the record holds that changed is not refused here as it is
// for the converters that append whole files: the converter compares the
// episodes (see convert/lerobot's append.go). The record's files still
// tell whether anything is new: none changed or added is already done.
func (o *lerobotFlags) identify(ctx context.Context, fset *flag.FlagSet, src convert.Source) error {
	cf := &o.cf
	if cf.append && cf.allowRemoved {
		return usagef("convert-lerobot: --allow-removed does not apply: an append refuses a dataset whose converted episodes changed or disappeared")
	}
	cf.ownDiff = true
	if err := cf.identify(ctx, fset, []convert.Source{src}); err != nil {
		return err
	}
	if b := cf.base; b != nil {
		b.Diff = lerobotDiff(b.Record.Sources, cf.record.Sources)
	}
	return nil
}

// lerobotDiff sorts the dataset's files now against those the committed
// record lists: New the added or changed ones, Kept the unchanged ones.
// One that disappeared is left to the converter, which refuses it when it
// held converted episodes.
func lerobotDiff(was, now []convert.SourceFile) convert.SourceDiff {
	held := make(map[string]convert.SourceFile, len(was))
	for _, f := range was {
		held[f.Path] = f
	}
	var d convert.SourceDiff
	for _, f := range now {
		if old, ok := held[f.Path]; ok && convert.SameSource(old, f) {
			d.Kept = append(d.Kept, f)
		} else {
			d.New = append(d.New, f)
		}
	}
	return d
}
