package main

import (
	"context"
	"flag"
	"strings"

	"github.com/bpconvert/bpconvert/convert/parquet"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

func cmdParquet(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("convert-parquet", flag.ContinueOnError)
	var cf convertFlags
	cf.register(fset)
	cf.registerPart(fset, e)
	var columns, fields stringList
	fset.Var(&columns, "column", "top-level column to extract into packs, `NAME` as written (repeatable)")
	fset.Var(&fields, "field", "nested field to extract, `a.b.c` with dots between levels (repeatable); a dot or backslash\ninside a name is written \\. or \\\\ (obs.cam\\.front is the field cam.front of obs), as plans name candidates")
	media := fset.String("hf-media", string(parquet.MediaKeep), "what a Hugging Face media struct<bytes, path> (Image, Audio, ...) becomes, `MODE` keep (the struct stays, bytes null,\n"+
		"path the reference, so datasets still reads Image()/Audio() features) or string (the reference string, Value(\"string\"));\nplain binary columns always become reference strings")
	keepPath := fset.Bool("keep-path", false, "keep the source path of each extracted media struct in a string field beside it, named FIELD"+parquet.PathSuffix+"\n(image"+parquet.PathSuffix+" beside image; a list beside a list), declared Value(\"string\") in the features; by default it is not kept")
	pos, err := e.parse(fset, args, 2, "SRC DST")
	if err != nil {
		return nil, err
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
	if err := localSource("convert-parquet", src); err != nil {
		return nil, err
	}
	absDst, err := cf.destination(ctx, src, dst)
	if err != nil {
		return nil, err
	}
	if err := cf.identify(ctx, fset, []string{src}); err != nil {
		return nil, err
	}
	job, err := parquet.NewJob(ctx, src, absDst, parquet.Options{
		Columns:  columns,
		Fields:   fieldPaths,
		Options:  cf.options(),
		Media:    parquet.MediaMode(*media),
		KeepPath: *keepPath,
	})
	if err != nil {
		return nil, err
	}
	return e.runJob(ctx, &cf, job)
}
