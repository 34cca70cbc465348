package main

import (
	"context"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/fetch"
	"github.com/bpconvert/bpconvert/convert/parquet"
	flag "github.com/spf13/pflag"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

// Type is the placeholder help shows when the usage names none.
func (s *stringList) Type() string { return "NAME" }

func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

func cmdParquet(e *env, fset *flag.FlagSet) runFunc {
	var cf convertFlags
	cf.register(fset)
	cf.registerPart(fset, e)
	var columns, fields stringList
	fset.Var(&columns, "column", "top-level column to extract into packs, `NAME` as written (repeatable)")
	fset.Var(&fields, "field", "nested field `FIELD` to extract, a.b.c with dots between levels (repeatable); a dot or backslash\ninside a name is written \\. or \\\\ (obs.cam\\.front is the field cam.front of obs), as plans name candidates")
	media := fset.String("hf-media", string(parquet.MediaKeep), "what a Hugging Face media struct<bytes, path> (Image, Audio, ...) becomes, `MODE` keep (the struct stays, bytes null,\n"+
		"path the reference, so datasets still reads Image()/Audio() features) or string (the reference string, Value(\"string\"));\nplain binary columns always become reference strings")
	choices(fset, "hf-media", parquet.MediaKeep, parquet.MediaString)
	keepPath := fset.Bool("keep-path", false, "keep the source path of each extracted media struct in a string field beside it, named FIELD"+parquet.PathSuffix+"\n(image"+parquet.PathSuffix+" beside image; a list beside a list), declared Value(\"string\") in the features; by default it is not kept")
	strictRemote := fset.Bool("strict-remote", false, "refuse a media value whose bytes are null and whose path is a URL (hf://, https://, s3://, ...),\nas dataset builders write them; by default such a value is kept as it is, its path unchanged, and counted")
	fetchRemote := fset.Bool("fetch-remote", false, "fetch the file of each media value whose bytes are null and whose path is a URL (https://, hf:// from HF_ENDPOINT\nwith HF_TOKEN, s3:// with the credentials of s3:// sources) and pack it like a local file, rather than keep the URL;\nbounded by "+fetch.EnvTimeout+" (default 60s an attempt) and "+fetch.EnvMaxBytes+" (default 256 MiB)")
	return func(ctx context.Context, pos []string) (any, error) {
		var err error
		var fetcher parquet.RemoteFetcher
		if *fetchRemote {
			f, err := fetch.New(fetch.Options{})
			if err != nil {
				return nil, usagef("convert-parquet: --fetch-remote: %v", err)
			}
			fetcher = f
		}
		if m := parquet.MediaMode(*media); m != parquet.MediaKeep && m != parquet.MediaString {
			return nil, usagef("convert-parquet: --hf-media %q: want keep or string", *media)
		}
		var fieldPaths [][]string
		for _, f := range fields {
			p, err := parquet.ParseFieldPath(f)
			if err != nil {
				return nil, usagef("convert-parquet: --field %q: %v", f, err)
			}
			fieldPaths = append(fieldPaths, p)
		}
		src, dst := pos[0], pos[1]
		e.setOperands(fset.Name(), pos[:1], pos[1])
		// The source (a table file, or a directory or prefix holding
		// tables, and a card, a save_to_disk directory's JSON files, other
		// files) is listed once here; every read of it in a bucket is
		// counted for the plan and the summary.
		source, err := cf.openSource(ctx, src, parquet.OpenSource)
		if err != nil {
			return nil, err
		}
		src = source.Location()
		absDst, err := cf.destination(ctx, source, dst)
		if err != nil {
			return nil, err
		}
		if err := cf.identify(ctx, fset, []convert.Source{source}); err != nil {
			if source.Remote() {
				return nil, storeError("convert-parquet", err)
			}
			return nil, err
		}
		if done, err := e.nothingNew(ctx, &cf); done != nil || err != nil {
			return done, err
		}
		// With --yes (cf.options' QuickPlan) the plan does not read the Arrow
		// files of a save_to_disk dataset in a bucket a first time.
		job, err := parquet.NewJob(ctx, src, absDst, parquet.Options{
			Columns:  columns,
			Fields:   fieldPaths,
			Options:  cf.options(),
			Media:    parquet.MediaMode(*media),
			KeepPath: *keepPath,

			StrictRemote: *strictRemote,
			Fetch:        fetcher,
		})
		if err != nil {
			return nil, err
		}
		return e.runJob(ctx, &cf, job)
	}
}
