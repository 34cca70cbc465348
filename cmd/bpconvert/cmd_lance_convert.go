package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lance"
	"github.com/bpconvert/bpconvert/objstore"
	flag "github.com/spf13/pflag"
)

func cmdConvertLance(e *env, fset *flag.FlagSet) runFunc {
	var cf convertFlags
	cf.register(fset)
	cf.registerPart(fset, e)
	var columns stringList
	fset.Var(&columns, "column", "column to extract into packs, `NAME` (repeatable; default: every blob column)")
	version := fset.Uint64("dataset-version", 0, "convert dataset version `N` (default: the latest); --version N is its deprecated spelling")
	external := fset.String("external", string(lance.ExternalCopy), "external blobs: `MODE` copy (into the packs) or keep (the URI stays the cell's value)")
	choices(fset, "external", lance.ExternalCopy, lance.ExternalKeep)
	return func(ctx context.Context, pos []string) (any, error) {
		src, dst := pos[0], pos[1]
		e.setOperands(fset.Name(), pos[:1], pos[1])
		// The dataset is opened (in a bucket: listed) once, here, and every
		// read of it in a bucket is counted for the plan and the summary.
		source, err := cf.openSourceWith(ctx, src, lance.OpenSource, func(err error) error {
			return lanceStoreError(strings.TrimSuffix(src, "/"), err)
		})
		if err != nil {
			return nil, err
		}
		storeErr := func(err error) error { return err }
		if source.Remote() {
			src = source.Location()
			storeErr = func(err error) error { return lanceStoreError(src, err) }
		}
		absDst, err := cf.destination(ctx, source, dst)
		if err != nil {
			return nil, err
		}
		// An append sorts the dataset's fragments itself (the files of a
		// Lance dataset are not its rows: Lance rewrites a version hint).
		cf.ownDiff = true
		if err := cf.identify(ctx, fset, []convert.Source{source}); err != nil {
			return nil, storeErr(err)
		}
		job, err := lance.NewJob(ctx, src, absDst, lance.Options{
			Options:  cf.options(),
			Version:  *version,
			Columns:  columns,
			External: lance.External(*external),
		})
		if err != nil {
			return nil, storeErr(err)
		}
		return e.runJob(ctx, &cf, job)
	}
}

// lanceStoreError words a failure to open a Lance dataset in object
// storage: the store's failures as storeError words them, a missing
// dataset as bad input naming it.
func lanceStoreError(src string, err error) error {
	var ie *convert.InputError
	var ue *convert.UsageError
	switch {
	case errors.As(err, &ie), errors.As(err, &ue):
		return err
	case errors.Is(err, objstore.ErrNotExist) && !errors.Is(err, objstore.ErrNoBucket):
		return &inputError{err: fmt.Errorf("convert-lance: %s: no Lance dataset there (no such object or prefix)", src),
			hint: "SRC names the dataset's directory (holding _versions/ and data/), e.g. s3://BUCKET/PREFIX/NAME.lance"}
	}
	return storeError("convert-lance", err)
}
