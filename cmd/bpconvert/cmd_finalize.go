package main

import (
	"context"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lance"
	"github.com/bpconvert/bpconvert/convert/lerobot"
	"github.com/bpconvert/bpconvert/convert/parquet"
	"github.com/bpconvert/bpconvert/convert/wds"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
	flag "github.com/spf13/pflag"
)

// tableJoiners names, per converter command, how the tables that the
// parts of a split conversion write are joined (each converter's Joiner);
// a command missing here does not take --part.
func tableJoiners(command string) (func(rel string) convert.TableJoiner, bool) {
	j, ok := map[string]func(string) convert.TableJoiner{
		"convert-wds":     wds.Joiner,
		"convert-parquet": parquet.Joiner,
		"convert-lerobot": lerobot.Joiner,
		"convert-lance":   lance.Joiner,
	}[command]
	return j, ok
}

func cmdFinalize(e *env, fset *flag.FlagSet) runFunc {
	staging := fset.String("staging", "", "local directory `DIR` for joining the tables of an s3:// destination (default: the system's temporary directory); no payload is staged")
	return func(ctx context.Context, pos []string) (any, error) {
		stats := &objstore.Stats{}
		res, err := convert.Finalize(ctx, pos[0], convert.FinalizeOptions{Joiners: tableJoiners, Stats: stats, Staging: *staging})
		if err != nil {
			return nil, err
		}
		sum := plan.Summary{Status: plan.StatusOK, Format: res.Command, Dest: pos[0], Blobs: res.Members, Bytes: res.Bytes, Shards: int64(res.Shards),
			Counts: plan.Counts{{Name: "parts", N: int64(res.Parts)}}}
		if objstore.IsRemote(pos[0]) {
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
