package main

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/srctree"
)

// packLoc is a location a reading command (ls, cat, unpack) reads packs
// from, opened once: a local pack directory, shard or dataset root, or a
// location in object storage, with the counts of what reading it fetched.
type packLoc struct {
	cmd   string
	tree  *srctree.Tree
	file  string // the local file the location names, "" for a directory
	stats *objstore.Stats
}

// fetched is the part of a summary that says what was read from object
// storage.
type fetched = plan.Fetched

// fetched returns what reading l fetched (nothing for a local location).
func (l *packLoc) fetched() *fetched {
	if !l.tree.Remote() {
		return nil
	}
	return &fetched{BytesFetched: l.stats.BytesRead(), Requests: l.stats.Requests()}
}

// openPackLoc opens loc for cmd, listing nothing (srctree.OpenUnlisted): in
// a bucket, the pack reader's own requests are all that the command makes.
// A malformed location is a usage error, a setting that does not let the
// bucket be reached is worded by storeError, and a local path that cannot
// be opened is bad input.
func openPackLoc(ctx context.Context, cmd, loc string) (*packLoc, error) {
	stats := &objstore.Stats{}
	t, file, err := srctree.OpenUnlisted(ctx, loc, objstore.Options{Stats: stats})
	switch {
	case errors.Is(err, objstore.ErrBadLocation):
		return nil, &usageError{msg: fmt.Sprintf("%s: %v", cmd, err), hint: "name object storage as s3://BUCKET/PREFIX"}
	case err != nil && (errors.Is(err, objstore.ErrSetting) || ctx.Err() != nil):
		return nil, storeError(cmd, err)
	case err != nil:
		return nil, &inputError{err: fmt.Errorf("%s: %w", cmd, err)}
	}
	return &packLoc{cmd: cmd, tree: t, file: file, stats: stats}, nil
}

// path is where rel (slash-separated, relative to the location; "" for
// the location itself) is: a local path, or a key in the bucket's store.
func (l *packLoc) path(rel string) string {
	if st, prefix := l.tree.Store(); st != nil {
		return objstore.Join(prefix, rel)
	}
	return l.tree.Path(path.Join(l.file, rel))
}

// openSet opens the pack directory or shard at rel: a local one reading its
// files directly (packcore.OpenSet), one in a bucket with the pack reader's
// requests (packcore.OpenSetIn: a listing or a HEAD, then a ranged read of
// each shard's directory). A store's failure is worded by storeError, a
// local one is bad input.
func (l *packLoc) openSet(ctx context.Context, rel string, opts packcore.SetOptions) (*packcore.Set, error) {
	if st, _ := l.tree.Store(); st != nil {
		set, err := packcore.OpenSetIn(ctx, st, l.path(rel), opts)
		if err != nil {
			return nil, storeError(l.cmd, err)
		}
		return set, nil
	}
	set, err := packcore.OpenSet(l.path(rel), opts)
	if err != nil {
		return nil, &inputError{err: fmt.Errorf("%s: %w", l.cmd, err)}
	}
	return set, nil
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
