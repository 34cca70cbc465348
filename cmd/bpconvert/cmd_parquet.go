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
	fset.Var(&fields, "field", "nested field to extract, `a.b.c` with dots between levels (repeatable)")
	pos, err := e.parse(fset, args, 2, "SRC DST")
	if err != nil {
		return nil, err
	}
	var fieldPaths [][]string
	for _, f := range fields {
		fieldPaths = append(fieldPaths, strings.Split(f, "."))
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
	job, err := parquet.NewJob(ctx, src, absDst, columns, fieldPaths, parquet.Options{
		PackOptions: cf.pack(),
		Version:     buildVersion(),
	})
	if err != nil {
		return nil, err
	}
	return e.runJob(ctx, &cf, job, true)
}
