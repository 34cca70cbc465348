package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/wds"
	"github.com/bpconvert/bpconvert/objstore"
	flag "github.com/spf13/pflag"
)

func cmdWDS(e *env, fset *flag.FlagSet) runFunc {
	var cf convertFlags
	cf.register(fset)
	cf.registerPart(fset, e)
	shardPrefix := fset.Bool("shard-prefix", false, "prefix every key with its shard's stem (train-000003/000123.jpg), for keys that repeat across shards")
	noTable := fset.Bool("no-table", false, "do not write samples.parquet")
	inline := fset.String("inline", "", "comma-separated fields `FIELDS` (e.g. cls,txt,json) stored inline in samples.parquet instead of as references")
	return func(ctx context.Context, pos []string) (any, error) {
		var err error
		if len(pos) < 2 {
			return nil, &usageError{msg: fmt.Sprintf("convert-wds: expected SRC... DST, got %d argument(s)", len(pos)), hint: "run bpconvert convert-wds --help"}
		}
		// Several sources (a shell glob) are joined as several patterns are.
		src := strings.Join(pos[:len(pos)-1], "::")
		if len(pos) > 2 && slices.Contains(pos[:len(pos)-1], "-") {
			return nil, usagef("convert-wds: - (standard input) must be the only source")
		}
		if src == "-" && !cf.part.Whole() {
			return nil, usagef("convert-wds: --part splits shard files; standard input cannot be split")
		}
		e.setOperands(fset.Name(), pos[:len(pos)-1], pos[len(pos)-1])
		// The shards are listed once, here (standard input is read as it
		// comes), and every read of them in a bucket is counted for the
		// plan and the summary.
		var source convert.Source
		if src != "-" {
			if source, err = wds.OpenSource(ctx, src, objstore.Options{Stats: &objstore.Stats{}}); err != nil {
				return nil, err
			}
			cf.source, cf.fetchedFrom = source, src
		}
		// SRC may be a pattern or "-": the destination is checked against
		// the directories it names.
		absDst, err := cf.destination(ctx, wds.Dirs(source), pos[len(pos)-1])
		if err != nil {
			return nil, err
		}
		if src != "-" {
			shards, err := wds.ShardSources(ctx, source)
			if err != nil {
				return nil, err
			}
			if err := cf.identify(ctx, fset, shards); err != nil {
				return nil, err
			}
		}
		var fields []string
		for _, f := range strings.Split(*inline, ",") {
			if f = strings.TrimSpace(f); f != "" {
				fields = append(fields, strings.ToLower(f))
			}
		}
		job, err := wds.NewJob(ctx, src, absDst, wds.Options{
			Options:     cf.options(),
			Stdin:       e.stdin,
			ShardPrefix: *shardPrefix,
			NoTable:     *noTable,
			Inline:      fields,
		})
		if err != nil {
			return nil, err
		}
		// Like every converter: the plan, then a confirmation on a terminal;
		// off a terminal --yes is required. (A stream can be read once: its
		// plan says what it can without reading it, and the conversion checks
		// as it goes.)
		return e.runJob(ctx, &cf, job)
	}
}
