package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/srctree"
	"github.com/bpconvert/bpconvert/stage"
	flag "github.com/spf13/pflag"
)

// packRemote is pack where SRC or DST is in object storage: the files (or
// objects) are packed through the one output path the converters use, so
// shards are staged locally, uploaded as each is finished, and the manifest
// and the run record go up last; a rerun after a kill resumes from the
// shards the store holds.
func packRemote(ctx context.Context, e *env, fset *flag.FlagSet, pf *packFlags, ps *packSource, d convert.Dest, dst string) (any, error) {
	if err := ps.countFiles(ctx); err != nil {
		return nil, err
	}
	var res packResult
	var err error
	if d.Remote() || pf.append {
		var done *plan.Summary
		if res, done, err = packRecorded(ctx, e, fset, pf, ps, d, dst); done != nil || err != nil {
			if done != nil {
				return *done, nil
			}
			return nil, err
		}
	} else if res, err = packFromBucket(ctx, e, pf, ps, d); err != nil {
		return nil, err
	}
	e.infof("packed %s (%s bytes) into %s under %s", plan.CountText(res.Members, "blobs"), plan.Thousands(res.Bytes), plan.CountText(int64(res.Shards), "shards"), res.Dst)
	return res, nil
}

// packItem is one file (or object) to pack: its key, and its path on this
// machine or its name in the source's tree.
type packItem struct {
	key, path string
	size      int64
}

// packSource is what a pack reads: a directory on this machine or a prefix
// in a bucket (listed once), opened once, with what it holds once counted.
type packSource struct {
	src          string // as named
	tree         *srctree.Tree
	count, total int64
}

// openPackSource opens the directory or prefix src names. A local path that
// is not a directory is refused: a usage error, or, for a pack that walks
// its source as the converters do (recorded), bad input.
func openPackSource(ctx context.Context, src string, recorded bool) (*packSource, error) {
	t, err := srctree.Open(ctx, src, objstore.Options{})
	var pe *fs.PathError
	switch {
	case !recorded && (errors.As(err, &pe) || errors.Is(err, srctree.ErrNotDir)):
		// a local path that is missing or not a directory
		return nil, usagef("pack: %s is not a directory", src)
	case err != nil:
		return nil, &inputError{err: err}
	}
	return &packSource{src: src, tree: t}, nil
}

// countFiles counts the files the source holds, checking every key; a
// source with nothing in it is refused.
func (ps *packSource) countFiles(ctx context.Context) error {
	if err := ps.walk(ctx, func(it packItem) error { ps.count++; ps.total += it.size; return nil }); err != nil {
		return &inputError{err: err}
	}
	if ps.count == 0 && ps.tree.Remote() {
		// A prefix with nothing under it is a source that is missing, as
		// a missing directory is.
		return &inputError{err: fmt.Errorf("pack: no object is under %s: %w", ps.src, fs.ErrNotExist)}
	}
	if ps.count == 0 {
		return usagef("pack: no files under %s", ps.src)
	}
	return nil
}

// walk calls fn for every file of the source in name order, with its key,
// validated: locally every regular file (symbolically linked files
// followed, linked directories not descended, as pack always walked), in a
// bucket every object.
func (ps *packSource) walk(ctx context.Context, fn func(it packItem) error) error {
	t := ps.tree
	if t.Empty() {
		return nil // a prefix with nothing under it
	}
	return t.Walk(ctx, "", func(e srctree.Entry) error {
		if t.Remote() {
			if err := packcore.ValidateKey(e.Name); err != nil {
				return fmt.Errorf("%s: %w", t.Path(e.Name), err)
			}
			return fn(packItem{key: e.Name, path: e.Name, size: e.Size})
		}
		if e.Mode.IsDir() {
			return nil
		}
		p := t.Path(e.Name)
		info, err := os.Stat(p) // follows symlinks
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		if err := packcore.ValidateKey(e.Name); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return fn(packItem{key: e.Name, path: p, size: info.Size()})
	})
}

// packRecorded packs through the converters' output path, with a run
// record: into object storage, or with --append. A destination that holds
// this pack already gives done.
func packRecorded(ctx context.Context, e *env, fset *flag.FlagSet, pf *packFlags, ps *packSource, d convert.Dest, dst string) (packResult, *plan.Summary, error) {
	src := ps.src
	dst = strings.TrimSuffix(dst, "/")
	if ps.tree.Remote() && d.Remote() {
		a, b := ps.tree.Location()+"/", d.Location()+"/"
		if strings.HasPrefix(a, b) || strings.HasPrefix(b, a) {
			return packResult{}, nil, fmt.Errorf("pack: %s and %s: %w", src, dst, stage.ErrOverlap)
		}
	}
	rec, base, done, err := packTarget(ctx, e, fset, pf, ps, d, dst)
	if done != nil || err != nil {
		return packResult{}, done, err
	}
	prog := e.newProgress("pack")
	out, err := convert.Begin(ctx, d, convert.OutputOptions{
		Pack: convert.PackOptions{MaxPackBytes: int64(pf.maxPackBytes), MaxMembers: pf.maxMembers, NoManifest: pf.noManifest,
			Record: rec, Append: pf.append, AllowRemoved: pf.allowRemoved},
		Base:     base,
		PackDir:  ".",
		RefBase:  packRefBase(pf, d),
		Progress: prog,
	})
	if err != nil {
		return packResult{}, nil, err
	}
	defer out.Abort()
	prog.SetTotal(ps.count, ps.total)
	err = ps.walk(ctx, func(it packItem) error {
		if base.Holds(ps.tree.Path(it.key)) {
			return nil // packed by an earlier commit
		}
		if err := addItem(ctx, out, ps.tree, it); err != nil {
			return fmt.Errorf("pack: %s: %w", it.path, err)
		}
		prog.Add(1, it.size)
		return nil
	})
	var stats packcore.Stats
	if err == nil {
		stats, err = out.Commit()
	}
	if err != nil && ctx.Err() != nil {
		// Stopped by a signal: the shards uploaded stay for a rerun.
		out.Abort()
		return packResult{}, nil, keptInBucket(ctx, err, convert.Target{Dest: d, Record: rec}, ".")
	}
	if err != nil {
		return packResult{}, nil, err
	}
	sum := out.Summary(plan.Summary{})
	return packResult{Src: src, Dst: d.Location(), Members: sum.Blobs, Bytes: sum.Bytes, Shards: stats.Shards,
		GroupsSplit: stats.GroupsSplit, ShardFiles: stats.ShardFiles, Upload: sum.Upload, Appended: sum.Appended}, nil, nil
}

// packTarget parses a recorded pack's destination and says what it holds:
// the record of this run, the committed pack an append extends, or done
// when it holds this pack already (a different one is refused).
func packTarget(ctx context.Context, e *env, fset *flag.FlagSet, pf *packFlags, ps *packSource, d convert.Dest, dst string) (*convert.Record, *convert.Base, *plan.Summary, error) {
	files, err := convert.IdentifyPaths(ctx, []string{ps.src})
	if err != nil {
		return nil, nil, nil, &inputError{err: err}
	}
	opts := map[string]string{}
	fset.VisitAll(func(f *flag.Flag) {
		if !notRecorded[f.Name] {
			opts[f.Name] = f.Value.String()
		}
	})
	rec := &convert.Record{Tool: "bpconvert", Version: buildVersion(), Command: "pack", Options: opts, Sources: files}
	if !d.Remote() && !ps.tree.Remote() {
		if err := stage.CheckDisjoint(ps.src, d.Location()); err != nil {
			return nil, nil, nil, fmt.Errorf("pack: %w", err)
		}
	}
	base, err := packBase(ctx, pf, d, rec)
	if err != nil {
		return nil, nil, nil, err
	}
	if base != nil && len(base.Diff.New) == 0 {
		e.infof("already done: %s holds every file of this source; nothing was written", d.Location())
		return nil, nil, &plan.Summary{Status: plan.StatusAlreadyDone, Dest: d.Location()}, nil
	}
	if old, err := d.ReadRecord(ctx); err == nil && base == nil {
		if diff := rec.Diff(old); len(diff) > 0 {
			return nil, nil, nil, &usageError{msg: fmt.Sprintf("pack: %s: %v: %s", dst, convert.ErrDifferentRun, strings.Join(diff, "; ")),
				hint: "choose a new destination, or remove this one to pack again"}
		}
		e.infof("already done: %s holds the pack of this source; nothing was written", dst)
		return nil, nil, &plan.Summary{Status: plan.StatusAlreadyDone, Dest: dst}, nil
	}
	return rec, base, nil, nil
}

// packRefBase is what a recorded pack's references name its directory by:
// --ref-base, else the destination's last name ("." for a bucket's root).
func packRefBase(pf *packFlags, d convert.Dest) string {
	if pf.refBase != "" {
		return pf.refBase
	}
	if !d.Remote() {
		return filepath.Base(d.Location())
	}
	_, prefix, _ := objstore.ParseS3(d.Location())
	if prefix == "" {
		return "."
	}
	return path.Base("/" + prefix)
}

// packFromBucket packs objects into a local directory: the local pack path
// with objects as the files.
func packFromBucket(ctx context.Context, e *env, pf *packFlags, ps *packSource, d convert.Dest) (packResult, error) {
	abs := d.Location()
	st, err := stage.Begin(abs)
	if err != nil {
		return packResult{}, err
	}
	defer st.Abort()
	opts := pf.options()
	opts.NoLock = true
	if opts.RefBase == "" {
		opts.RefBase = filepath.Base(abs)
	}
	w, err := packcore.Create(ctx, st.Dir, opts)
	if err != nil {
		return packResult{}, err
	}
	defer w.Abort()
	prog := e.newProgress("pack")
	prog.SetTotal(ps.count, ps.total)
	err = ps.walk(ctx, func(it packItem) error {
		if err := addItem(ctx, w, ps.tree, it); err != nil {
			return fmt.Errorf("pack: %s: %w", ps.tree.Path(it.path), err)
		}
		prog.Add(1, it.size)
		return nil
	})
	if err != nil {
		return packResult{}, err
	}
	stats, err := w.Close()
	if err != nil {
		return packResult{}, err
	}
	if err := st.Commit(); err != nil {
		return packResult{}, err
	}
	return packResult{Src: ps.src, Dst: abs, Members: stats.Members, Bytes: stats.Bytes, Shards: stats.Shards,
		GroupsSplit: stats.GroupsSplit, ShardFiles: stats.ShardFiles}, nil
}

// packBase, for pack --append into a destination holding a committed pack
// with a run record, reads it (see convertFlags.appendBase) and makes rec
// the extended pack's record; nil otherwise.
func packBase(ctx context.Context, pf *packFlags, d convert.Dest, rec *convert.Record) (*convert.Base, error) {
	if !pf.append {
		return nil, nil
	}
	t := convert.Target{Dest: d, Record: rec, Append: true}
	if _, err := t.Recover(ctx); err != nil {
		return nil, err
	}
	base, err := t.ReadBase(ctx, ".")
	if err != nil || base == nil {
		return nil, err
	}
	if _, err := base.Sources(rec.Sources, pf.allowRemoved); err != nil {
		return nil, err
	}
	base.Extend(rec)
	return base, nil
}

// fileAdder is what addItem adds to: a run's output or a pack writer.
type fileAdder interface {
	convert.Packer
	AddFile(key, path, group string) (string, error)
}

// addItem adds one file (a local path) or object (a name in t) as its key;
// an object is read front to back with read-ahead (srctree.Stream).
func addItem(ctx context.Context, w fileAdder, t *srctree.Tree, it packItem) error {
	if !t.Remote() {
		_, err := w.AddFile(it.key, it.path, "")
		return err
	}
	f, err := t.Open(ctx, it.path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := srctree.Stream(ctx, f)
	defer r.Close()
	_, err = w.Add(it.key, r, it.size, "")
	return err
}
