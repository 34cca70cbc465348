package main

import (
	"context"
	"flag"

	"github.com/bpconvert/bpconvert/convert/lance"
)

func cmdConvertLance(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("convert-lance", flag.ContinueOnError)
	var cf convertFlags
	cf.register(fset)
	cf.registerPart(fset, e)
	var columns stringList
	fset.Var(&columns, "column", "column to extract into packs, `NAME` (repeatable; default: every blob column)")
	version := fset.Uint64("version", 0, "convert dataset version `N` (default: the latest)")
	external := fset.String("external", string(lance.ExternalCopy), "external blobs: copy (into the packs) or keep (the URI stays the cell's value)")
	pos, err := e.parse(fset, args, 2, "SRC.lance DST")
	if err != nil {
		return nil, err
	}
	src, dst := pos[0], pos[1]
	if err := localSource("convert-lance", src); err != nil {
		return nil, err
	}
	absDst, err := cf.destination(ctx, src, dst)
	if err != nil {
		return nil, err
	}
	if err := cf.identify(ctx, fset, []string{src}); err != nil {
		return nil, err
	}
	job, err := lance.NewJob(ctx, src, absDst, lance.Options{
		Options:  cf.options(),
		Version:  *version,
		Columns:  columns,
		External: lance.External(*external),
	})
	if err != nil {
		return nil, err
	}
	return e.runJob(ctx, &cf, job)
}
