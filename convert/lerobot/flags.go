package lerobot

import (
	"context"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/internal/cliflag"
	flag "github.com/spf13/pflag"
)

// CompanionProgram is the program that converts LeRobot datasets for a
// bpconvert built without a video engine: the same command-line program
// built with the "lerobot" tag, which links libav (through go-astiav) for
// packet-level video work. Keeping libav out of bpconvert itself keeps
// every other command free of libav's start-up cost (about 60 MiB of
// resident memory and 0.3 s for its shared libraries).
const CompanionProgram = "bpconvert-lerobot"

// Companion names the program that converts for a build whose video
// engine is engine: CompanionProgram when there is none, "" when this
// build converts itself.
func Companion(engine video.Engine) string {
	if engine != nil {
		return ""
	}
	return CompanionProgram
}

// Flags returns the declaration of convert-lerobot's own flags for a
// build whose video engine is engine: it declares them on fs (beside those
// every converter takes) and returns what makes the job once they are
// parsed. With no engine the job plans from the dataset's metadata (the
// camera files' keyframes not probed; see Options.NoProbe) and cannot run.
// --allow-removed does not apply: an append refuses converted episodes
// that changed or are gone.
func Flags(engine video.Engine) func(fs *flag.FlagSet) convert.JobFlags {
	return func(fs *flag.FlagSet) convert.JobFlags {
		images := fs.String("images", string(ImagesExtract), "image features inside the tables: `MODE` extract (into packs, columns become references) or skip")
		videoMode := fs.String("video", string(VideoCopy), "video features: `MODE` copy (into packs, per episode where possible) or skip")
		cliflag.Choices(fs, "images", ImagesExtract, ImagesSkip)
		cliflag.Choices(fs, "video", VideoCopy, VideoSkip)
		noSplit := fs.Bool("no-split-episodes", false, "keep every v3.0 camera file whole; episodes are addressed by [from_ns, to_ns)")
		tolerance := fs.Float64("tolerance-frames", DefaultToleranceFrames, "how many frames `N` an episode's interval may differ from its length")
		fs.MarkHidden("allow-removed")
		check := func(o convert.PackOptions) error {
			if m := ImageMode(*images); m != ImagesExtract && m != ImagesSkip {
				return usagef("convert-lerobot: --images %q: want extract or skip", *images)
			}
			if m := VideoMode(*videoMode); m != VideoCopy && m != VideoSkip {
				return usagef("convert-lerobot: --video %q: want copy or skip", *videoMode)
			}
			if !(*tolerance > 0) {
				return usagef("convert-lerobot: --tolerance-frames %g: want a positive number of frames", *tolerance)
			}
			if o.Append && o.AllowRemoved {
				return usagef("convert-lerobot: --allow-removed does not apply: an append refuses a dataset whose converted episodes changed or disappeared")
			}
			return nil
		}
		return convert.JobFlags{Check: check, Make: func(ctx context.Context, r convert.Request) (convert.Job, error) {
			job, err := NewJob(ctx, r.Options.Source.Location(), r.Dest, Options{
				Options:         r.Options,
				Images:          ImageMode(*images),
				Video:           VideoMode(*videoMode),
				NoSplitEpisodes: *noSplit,
				ToleranceFrames: *tolerance,
				Engine:          engine,
				NoProbe:         engine == nil,
			})
			if err != nil {
				return nil, err
			}
			return job, nil
		}}
	}
}

// usagef is a *convert.UsageError whose message format and a make.
func usagef(format string, a ...any) error {
	return &convert.UsageError{Err: fmt.Errorf(format, a...)}
}
