package main

import (
	"context"

	"github.com/bpconvert/bpconvert/convert/lerobot"
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

// lerobotHelp is convert-lerobot's help text after its summary.
const lerobotHelp = "The conversion runs in bpconvert-lerobot, the companion program built with libav (make build\n" +
	"puts it beside bpconvert); --dry-run plans from the dataset's metadata without it."

func cmdLerobot(e *env, fset *flag.FlagSet) runFunc {
	o := &lerobotFlags{}
	o.cf.register(fset)
	o.cf.registerPart(fset, e)
	fset.StringVar(&o.images, "images", string(lerobot.ImagesExtract), "image features inside the tables: `MODE` extract (into packs, columns become references) or skip")
	fset.StringVar(&o.video, "video", string(lerobot.VideoCopy), "video features: `MODE` copy (into packs, per episode where possible) or skip")
	fset.BoolVar(&o.noSplit, "no-split-episodes", false, "keep every v3.0 camera file whole; episodes are addressed by [from_ns, to_ns)")
	fset.Float64Var(&o.tolerance, "tolerance-frames", lerobot.DefaultToleranceFrames, "how many frames `N` an episode's interval may differ from its length")
	return func(ctx context.Context, pos []string) (any, error) {
		return runLerobot(ctx, e, fset, o, pos)
	}
}
