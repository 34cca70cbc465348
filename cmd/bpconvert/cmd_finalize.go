package main

import (
	"context"
	"flag"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/formats"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
)

func cmdFinalize(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("finalize", flag.ContinueOnError)
	staging := fset.String("staging", "", "local directory for joining the tables of an s3:// destination (default: the system's temporary directory); no payload is staged")
	pos, err := e.parse(fset, args, 1, "DST")
	if err != nil {
		return nil, err
	}
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
