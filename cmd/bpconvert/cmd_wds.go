package main

import (
	"context"
	"flag"
	"strings"

	"github.com/bpconvert/bpconvert/convert/wds"
	"github.com/bpconvert/bpconvert/progress"
)

func cmdWDS(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("convert-wds", flag.ContinueOnError)
	var cf convertFlags
	cf.register(fset)
	shardPrefix := fset.Bool("shard-prefix", false, "prefix every key with its shard's stem (train-000003/000123.jpg), for keys that repeat across shards")
	noTable := fset.Bool("no-table", false, "do not write samples.parquet")
	inline := fset.String("inline", "", "comma-separated fields (e.g. cls,txt,json) stored inline in samples.parquet instead of as references")
	confirm := fset.Bool("confirm", false, "ask before converting (WebDataset conversion changes no table, so it does not ask by default)")
	pos, err := e.parse(fset, args, 2, "SRC DST")
	if err != nil {
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
	job := &wds.Job{Options: wds.Options{
		Src:         pos[0],
		Dst:         absDst,
		Stdin:       e.stdin,
		ShardPrefix: *shardPrefix,
		NoTable:     *noTable,
		Inline:      fields,
		PackOptions: cf.pack(),
	}}
	// A stream can be read once: its plan says what it can without reading
	// it, and the conversion checks as it goes.
	if pos[0] != "-" || cf.dryRun {
		job.InspectProgress = e.newProgress("inspect")
	} else {
		job.InspectProgress = progress.Nop{}
	}
	return e.runJob(ctx, &cf, job, *confirm)
}
