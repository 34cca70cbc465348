package main

import (
	"context"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/formats"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	flag "github.com/spf13/pflag"
)

func cmdFinalize(e *env, fset *flag.FlagSet) runFunc {
	staging := fset.String("staging", "", "local directory `DIR` for joining the tables of an s3:// destination (default: the system's temporary directory); no payload is staged")
	return func(ctx context.Context, pos []string) (any, error) {
		stats := &objstore.Stats{}
		dst, err := convert.ParseDest(pos[0], "")
		if err != nil {
			return nil, err
		}
		res, err := convert.Finalize(ctx, dst, convert.FinalizeOptions{Joiners: formats.Joiners, Stats: stats, Staging: *staging})
		if err != nil {
			return nil, err
		}
		sum := plan.Summary{Status: plan.StatusOK, Format: res.Command, Dest: pos[0], Blobs: res.Members, Bytes: res.Bytes, Shards: int64(res.Shards),
			Counts: plan.Counts{{Name: "parts", N: int64(res.Parts)}}}
		if dst.Remote() {
			// Shards are copied inside the store: only tables and manifests
			// pass through this machine.
			sum.Upload = &plan.Upload{Requests: stats.Requests(), Bytes: stats.BytesWritten()}
		}
		if res.AlreadyDone {
			sum.Status = plan.StatusAlreadyDone
			sum.Counts = nil
			e.infof("%s already holds the joined output; nothing to do", pos[0])
		} else {
			e.infof("joined %s into %s: %s, %s in %s", plan.CountText(int64(res.Parts), "parts"), pos[0],
				plan.CountText(res.Members, "members"), plan.HumanBytes(res.Bytes), plan.CountText(int64(res.Shards), "shards"))
		}
		return sum, nil
	}
}
