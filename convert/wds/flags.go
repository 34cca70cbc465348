package wds

import (
	"context"
	"errors"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	flag "github.com/spf13/pflag"
)

// Flags declares convert-wds's own flags on fs (beside those every
// converter takes) and returns what makes its job once they are parsed.
func Flags(fs *flag.FlagSet) convert.JobFlags {
	shardPrefix := fs.Bool("shard-prefix", false, "prefix every key with its shard's stem (train-000003/000123.jpg), for keys that repeat across shards")
	noTable := fs.Bool("no-table", false, "do not write samples.parquet")
	inline := fs.String("inline", "", "comma-separated fields `FIELDS` (e.g. cls,txt,json) stored inline in samples.parquet instead of as references")
	return convert.JobFlags{Make: func(ctx context.Context, r convert.Request) (convert.Job, error) {
		src := r.Options.Source.String()
		if src == "-" && !r.Options.Part.Whole() {
			return nil, &convert.UsageError{Err: errors.New("convert-wds: --part splits shard files; standard input cannot be split"),
				Hint: "convert a stream whole, or name the shard files"}
		}
		var fields []string
		for _, f := range strings.Split(*inline, ",") {
			if f = strings.TrimSpace(f); f != "" {
				fields = append(fields, strings.ToLower(f))
			}
		}
		// A stream can be read once: its plan says what it can without
		// reading it, and the conversion checks as it goes.
		job, err := NewJob(ctx, src, r.Dest, Options{
			Options:     r.Options,
			Stdin:       r.Stdin,
			ShardPrefix: *shardPrefix,
			NoTable:     *noTable,
			Inline:      fields,
		})
		if err != nil {
			return nil, err
		}
		return job, nil
	}}
}
