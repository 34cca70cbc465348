package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"
)

// sourceOpener is a converter package's OpenSource: it opens SRC (through
// srctree), naming a bad local path with a *srctree.LocalError.
type sourceOpener func(ctx context.Context, src string, o objstore.Options) (convert.Source, error)

// openSource opens a converter's SRC once, with the converter's own
// opener, counting what reading it in object storage fetches, and keeps it
// for the converter's options (convertFlags.options): the converter's plan
// and summary then say what was fetched. A malformed s3:// location is a
// usage error; a bad local path (srctree.LocalError) is named with the
// command, the converter's *InputError is returned as it is, and any other
// failure (the store's) as storeError words it.
func (c *convertFlags) openSource(ctx context.Context, src string, open sourceOpener) (convert.Source, error) {
	return c.openSourceWith(ctx, src, open, func(err error) error { return storeError(c.command, err) })
}

// openSourceWith is openSource with the store's failures worded by
// storeErr.
func (c *convertFlags) openSourceWith(ctx context.Context, src string, open sourceOpener, storeErr func(error) error) (convert.Source, error) {
	s, err := open(ctx, src, objstore.Options{Stats: &objstore.Stats{}})
	var ie *convert.InputError
	var local *srctree.LocalError
	switch {
	case errors.Is(err, objstore.ErrBadLocation):
		return convert.Source{}, &usageError{msg: fmt.Sprintf("%s: %v", c.command, err), hint: "name object storage as s3://BUCKET/PREFIX"}
	case errors.As(err, &local):
		return convert.Source{}, fmt.Errorf("%s: %w", c.command, err)
	case errors.As(err, &ie):
		return convert.Source{}, err
	case err != nil:
		return convert.Source{}, storeErr(err)
	}
	s.Name = src
	c.source, c.fetchedFrom = s, s.Location()
	return s, nil
}
