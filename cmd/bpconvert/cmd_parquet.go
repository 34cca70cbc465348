package main

import (
	"context"
	"errors"
	"flag"
	"runtime/debug"
	"strings"

	"github.com/bpconvert/bpconvert/convert/parquet"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

func cmdParquet(ctx context.Context, e *env, args []string) (any, error) {
	const posArgs = "SRC DST"
	fset := flag.NewFlagSet("convert-parquet", flag.ContinueOnError)
	var cf convertFlags
	cf.register(fset)
	var columns, fields stringList
	fset.Var(&columns, "column", "top-level column to extract into packs, `NAME` as written (repeatable)")
	fset.Var(&fields, "field", "nested field to extract, `a.b.c` with dots between levels (repeatable)")
	e.commonFlags(fset)
	pos, err := parseFlags(fset, args, 2, posArgs)
	if err != nil {
		if err == flag.ErrHelp {
			flagHelp(e, fset, posArgs)
		}
		return nil, err
	}
	if err := cf.checkRefBase("convert-parquet"); err != nil {
		return nil, err
	}
	var fieldPaths [][]string
	for _, f := range fields {
		fieldPaths = append(fieldPaths, strings.Split(f, "."))
	}
	src, dst := pos[0], pos[1]
	absDst, err := destination(src, dst)
	if err != nil {
		return nil, err
	}

	opts := parquet.Options{
		MaxPackBytes: int64(cf.maxPackBytes),
		MaxMembers:   cf.maxMembers,
		NoManifest:   cf.noManifest,
		Version:      buildVersion(),
	}
	ins, err := parquet.Inspect(ctx, src, opts)
	if err != nil {
		return nil, parquetError(err)
	}
	_, selErr := ins.Select(columns, fieldPaths)
	var sel parquet.Selection
	conv := conversion{
		flags:   &cf,
		confirm: true,
		plan: func(ctx context.Context, chosen []string) (plan.Plan, error) {
			var err error
			if chosen != nil {
				sel, err = ins.Select(nil, pathsByName(ins, chosen))
			} else {
				sel, err = ins.Select(columns, fieldPaths)
			}
			if errors.Is(err, parquet.ErrNeedSelection) {
				sel, err = parquet.Selection{}, nil // the plan shows every candidate, none chosen
			}
			if err != nil {
				return plan.Plan{}, parquetError(err)
			}
			return ins.Plan(sel, absDst), nil
		},
		execute: func(ctx context.Context, p plan.Plan, prog progress.Counter) (plan.Summary, error) {
			o := opts
			o.Progress = prog
			res, err := parquet.Convert(ctx, ins, sel, absDst, o)
			if err != nil {
				return plan.Summary{}, parquetError(err)
			}
			return plan.Summary{
				Format: "Parquet",
				Source: ins.Root,
				Dest:   absDst,
				Blobs:  res.Pack.Members,
				Bytes:  res.Pack.Bytes,
				Shards: int64(res.Pack.Shards),
				Counts: plan.Counts{
					{Name: "rewritten tables", N: int64(res.Rewritten)},
					{Name: "copied tables", N: int64(res.Copied)},
					{Name: "copied files", N: int64(res.Files)},
					{Name: "rows", N: res.Rows},
				},
				Warnings: append([]string{}, ins.Warnings...),
			}, nil
		},
	}
	if errors.Is(selErr, parquet.ErrNeedSelection) {
		// No column named and no Hugging Face media declared: a terminal
		// gets the lead's multi-select (flow.go); elsewhere exit 2.
		conv.mustChoose = true
		conv.chooseError = parquetError(selErr)
	} else if selErr != nil {
		return nil, parquetError(selErr)
	}
	return e.runConversion(ctx, conv)
}

// pathsByName maps entry names chosen in the prompt back to candidate paths.
func pathsByName(ins *parquet.Inspection, names []string) [][]string {
	var out [][]string
	for _, n := range names {
		for _, c := range ins.Candidates {
			if c.Name() == n {
				out = append(out, c.Path)
				break
			}
		}
	}
	return out
}

// parquetError maps convert/parquet errors to the CLI's exit codes: bad
// selections and overlapping paths are usage errors (2), bad input is 3.
func parquetError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, parquet.ErrNeedSelection):
		return &usageError{msg: err.Error(),
			hint: "name the payload columns: --column NAME (top level) or --field a.b.c (nested), or run on a terminal to choose"}
	case errors.Is(err, parquet.ErrBadSelection):
		return &usageError{msg: err.Error(), hint: "run with --dry-run to list the candidate columns"}
	case errors.Is(err, parquet.ErrInvalidInput):
		return &inputError{err: err}
	}
	return err
}

// buildVersion is the module version recorded in rewritten tables.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
