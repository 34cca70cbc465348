package parquet

import (
	"context"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/fetch"
	"github.com/bpconvert/bpconvert/internal/cliflag"
	flag "github.com/spf13/pflag"
)

// Flags declares convert-parquet's own flags on fs (beside those every
// converter takes) and returns what checks them (the fetcher of
// --fetch-remote made then) and makes its job once they are parsed.
func Flags(fs *flag.FlagSet) convert.JobFlags {
	var columns, fields cliflag.Strings
	fs.Var(&columns, "column", "top-level column to extract into packs, `NAME` as written (repeatable)")
	fs.Var(&fields, "field", "nested field `FIELD` to extract, a.b.c with dots between levels (repeatable); a dot or backslash\ninside a name is written \\. or \\\\ (obs.cam\\.front is the field cam.front of obs), as plans name candidates")
	media := fs.String("hf-media", string(MediaKeep), "what a Hugging Face media struct<bytes, path> (Image, Audio, ...) becomes, `MODE` keep (the struct stays, bytes null,\n"+
		"path the reference, so datasets still reads Image()/Audio() features) or string (the reference string, Value(\"string\"));\nplain binary columns always become reference strings")
	cliflag.Choices(fs, "hf-media", MediaKeep, MediaString)
	keepPath := fs.Bool("keep-path", false, "keep the source path of each extracted media struct in a string field beside it, named FIELD"+PathSuffix+"\n(image"+PathSuffix+" beside image; a list beside a list), declared Value(\"string\") in the features; by default it is not kept")
	strictRemote := fs.Bool("strict-remote", false, "refuse a media value whose bytes are null and whose path is a URL (hf://, https://, s3://, ...),\nas dataset builders write them; by default such a value is kept as it is, its path unchanged, and counted")
	fetchRemote := fs.Bool("fetch-remote", false, "fetch the file of each media value whose bytes are null and whose path is a URL (https://, hf:// from HF_ENDPOINT\nwith HF_TOKEN, s3:// with the credentials of s3:// sources) and pack it like a local file, rather than keep the URL;\nbounded by "+fetch.EnvTimeout+" (default 60s an attempt) and "+fetch.EnvMaxBytes+" (default 256 MiB)")
	var fetcher RemoteFetcher
	var fieldPaths [][]string
	check := func(convert.PackOptions) error {
		fieldPaths = nil
		if m := MediaMode(*media); m != MediaKeep && m != MediaString {
			return &convert.UsageError{Err: fmt.Errorf("convert-parquet: --hf-media %q: want keep or string", *media)}
		}
		for _, f := range fields {
			p, err := ParseFieldPath(f)
			if err != nil {
				return &convert.UsageError{Err: fmt.Errorf("convert-parquet: --field %q: %w", f, err)}
			}
			fieldPaths = append(fieldPaths, p)
		}
		if *fetchRemote {
			f, err := fetch.New(fetch.Options{})
			if err != nil {
				return &convert.UsageError{Err: fmt.Errorf("convert-parquet: --fetch-remote: %w", err)}
			}
			fetcher = f
		}
		return nil
	}
	return convert.JobFlags{Check: check, Make: func(ctx context.Context, r convert.Request) (convert.Job, error) {
		// With --yes (Options.QuickPlan) the plan does not read the Arrow
		// files of a save_to_disk dataset in a bucket a first time.
		job, err := NewJob(ctx, r.Options.Source.Location(), r.Dest, Options{
			Columns:  columns,
			Fields:   fieldPaths,
			Options:  r.Options,
			Media:    MediaMode(*media),
			KeepPath: *keepPath,

			StrictRemote: *strictRemote,
			Fetch:        fetcher,
		})
		if err != nil {
			return nil, err
		}
		return job, nil
	}}
}
