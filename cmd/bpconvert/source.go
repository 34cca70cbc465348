package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/formats"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"
)

// openSource opens a converter's SRC operands once, with the converter's
// own opener (f.Open, or f.OpenMany for several), counting what reading
// them in object storage fetches, and keeps the source for the converter's
// options (convertFlags.options): the converter's plan and summary then say
// what was fetched. A malformed s3:// location is a usage error; a bad
// local path (srctree.LocalError) is named with the command, the
// converter's *InputError and *UsageError are returned as they are, and
// any other failure (the store's) as storeError words it. Standard input
// is an unopened source.
func (c *convertFlags) openSource(ctx context.Context, srcs []string, f formats.Format) (convert.Source, error) {
	o := objstore.Options{Stats: &objstore.Stats{}}
	var s convert.Source
	var err error
	if f.OpenMany != nil {
		s, err = f.OpenMany(ctx, srcs, o)
	} else {
		s, err = f.Open(ctx, srcs[0], o)
		if err == nil {
			s.Name = srcs[0]
		}
	}
	var ie *convert.InputError
	var ue *convert.UsageError
	var local *srctree.LocalError
	switch {
	case errors.Is(err, objstore.ErrBadLocation):
		return convert.Source{}, &usageError{msg: fmt.Sprintf("%s: %v", c.command, err), hint: "name object storage as s3://BUCKET/PREFIX"}
	case errors.As(err, &local):
		return convert.Source{}, fmt.Errorf("%s: %w", c.command, err)
	case errors.As(err, &ie), errors.As(err, &ue):
		return convert.Source{}, err
	case err != nil:
		return convert.Source{}, storeError(c.command, err)
	}
	c.source, c.fetchedFrom = s, s.Location()
	if c.fetchedFrom == "" {
		c.fetchedFrom = s.String()
	}
	return s, nil
}
