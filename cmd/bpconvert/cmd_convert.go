package main

import (
	"context"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/formats"
	flag "github.com/spf13/pflag"
)

// cmdConvert defines the command of the converter f: the flags every
// converter takes, then f's own (f.Flags). Every converter runs the same
// way: its flags' values checked, SRC opened once with f's opener, DST
// parsed and checked, the run identified (resume, already done, --append's
// base), the job made from f's flags, then planned, confirmed and run
// (runJob).
func cmdConvert(f formats.Format) func(e *env, fset *flag.FlagSet) runFunc {
	return func(e *env, fset *flag.FlagSet) runFunc {
		var cf convertFlags
		cf.register(fset)
		cf.registerPart(fset, e)
		cf.growth = f.Growth
		own := f.Flags(fset)
		return func(ctx context.Context, pos []string) (any, error) {
			if len(pos) < 2 {
				return nil, &usageError{msg: fmt.Sprintf("%s: expected SRC... DST, got %d argument(s)", f.Command, len(pos)), hint: "run bpconvert " + f.Command + " --help"}
			}
			srcs, dst := pos[:len(pos)-1], pos[len(pos)-1]
			if own.Check != nil {
				if err := own.Check(cf.pack()); err != nil {
					return nil, err
				}
			}
			if f.Companion != "" {
				if handled, err := e.companion(f.Command, f.Companion, cf.dryRun); handled {
					return nil, err
				}
			}
			e.setOperands(fset.Name(), srcs, dst)
			// The source is opened (in a bucket: listed) once, here, and
			// every read of it in a bucket is counted for the plan and the
			// summary.
			source, err := cf.openSource(ctx, srcs, f)
			if err != nil {
				return nil, err
			}
			d, err := cf.destination(ctx, source, dst)
			if err != nil {
				return nil, err
			}
			if err := cf.identify(ctx, fset, source); err != nil {
				if source.Remote() {
					return nil, storeError(f.Command, err)
				}
				return nil, err
			}
			if done, err := e.nothingNew(ctx, &cf); done != nil || err != nil {
				return done, err
			}
			job, err := own.Make(ctx, convert.Request{Dest: d, Options: cf.options(), Stdin: e.stdin})
			if err != nil {
				return nil, err
			}
			// The plan, then a confirmation on a terminal; off a terminal
			// --yes is required.
			return e.runJob(ctx, &cf, job)
		}
	}
}
