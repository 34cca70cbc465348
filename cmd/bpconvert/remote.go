package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/plan"
)

// remote is a location in object storage named on the command line: the
// bucket's store and the name (the prefix) inside it, with the counts of
// what reading it fetched.
type remote struct {
	store objstore.Store
	name  string
	stats *objstore.Stats
}

// fetched is the part of a summary that says what was read from object
// storage.
type fetched = plan.Fetched

// fetchedBy returns what r fetched (nothing for a local location).
func fetchedBy(r *remote) *fetched {
	if r == nil {
		return nil
	}
	return &fetched{BytesFetched: r.stats.BytesRead(), Requests: r.stats.Requests()}
}

// openRemote opens the bucket of an s3:// location for reading. A
// malformed location is a usage error.
func openRemote(ctx context.Context, cmd, loc string) (*remote, error) {
	bucket, prefix, err := objstore.ParseS3(loc)
	if err != nil {
		return nil, &usageError{msg: fmt.Sprintf("%s: %v", cmd, err), hint: "name object storage as s3://BUCKET/PREFIX"}
	}
	stats := &objstore.Stats{}
	st, err := objstore.Open(ctx, "s3://"+bucket, objstore.Options{Stats: stats})
	if err != nil {
		return nil, storeError(cmd, err)
	}
	return &remote{store: st, name: prefix, stats: stats}, nil
}

// storeError words a failure to read object storage for the CLI, with the
// exit codes of the write side: a missing bucket or refused credentials
// exit 2, with hints (exit.go); a missing object or pack is bad input
// (exit 3); other failures exit 1.
func storeError(cmd string, err error) error {
	err = fmt.Errorf("%s: %w", cmd, err)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, objstore.ErrNoBucket), errors.Is(err, objstore.ErrDenied):
		return err
	case errors.Is(err, objstore.ErrNotExist):
		return &inputError{err: err}
	}
	return err
}
