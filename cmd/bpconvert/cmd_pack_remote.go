package main

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
	flag "github.com/spf13/pflag"
)

// packRemote is pack where SRC or DST is in object storage: the files (or
// objects) are packed through the one output path the converters use, so
// shards are staged locally, uploaded as each is finished, and the manifest
// and the run record go up last; a rerun after a kill resumes from the
// shards the store holds.
func packRemote(ctx context.Context, e *env, fset *flag.FlagSet, pf *packFlags, src, dst, staging string) (any, error) {
	if !objstore.IsRemote(dst) && staging != "" {
		return nil, usagef("pack: --staging is for destinations in object storage (s3://)")
	}
	// The files to pack: a local directory walked as pack walks it, or
	// every object under a prefix, in name order.
	type item struct {
		key, path string
		size      int64
	}
	var walk func(fn func(it item) error) error
	var srcStore objstore.Store
	if objstore.IsRemote(src) {
		st, err := objstore.Open(ctx, src, objstore.Options{})
		if err != nil {
			return nil, err
		}
		srcStore = st
		walk = func(fn func(it item) error) error {
			return st.List(ctx, "", func(in objstore.Info) error {
				if err := packcore.ValidateKey(in.Name); err != nil {
					return fmt.Errorf("%s/%s: %w", src, in.Name, err)
				}
				return fn(item{key: in.Name, path: in.Name, size: in.Size})
			})
		}
	} else {
		walk = func(fn func(it item) error) error {
			return walkFiles(ctx, src, func(key, p string, size int64) error { return fn(item{key, p, size}) })
		}
	}
	var count, total int64
	if err := walk(func(it item) error { count++; total += it.size; return nil }); err != nil {
		return nil, &inputError{err: err}
	}
	if count == 0 && srcStore != nil {
		// A prefix with nothing under it is a source that is missing, as
		// a missing directory is.
		return nil, &inputError{err: fmt.Errorf("pack: no object is under %s: %w", src, fs.ErrNotExist)}
	}
	if count == 0 {
		return nil, usagef("pack: no files under %s", src)
	}
	var out *convert.Output
	var stats packcore.Stats
	var upload *plan.Upload
	var appended *plan.Appended
	if objstore.IsRemote(dst) || pf.append {
		dst = strings.TrimSuffix(dst, "/")
		if objstore.IsRemote(src) && objstore.IsRemote(dst) {
			a, b := strings.TrimSuffix(src, "/")+"/", dst+"/"
			if strings.HasPrefix(a, b) || strings.HasPrefix(b, a) {
				return nil, fmt.Errorf("pack: %s and %s: %w", src, dst, stage.ErrOverlap)
			}
		}
		files, err := convert.Identify(ctx, []string{src})
		if err != nil {
			return nil, &inputError{err: err}
		}
		opts := map[string]string{}
		fset.VisitAll(func(f *flag.Flag) {
			if !notRecorded[f.Name] {
				opts[f.Name] = f.Value.String()
			}
		})
		rec := &convert.Record{Tool: "bpconvert", Version: buildVersion(), Command: "pack", Options: opts, Sources: files}
		d, err := convert.ParseDest(dst, staging)
		if err != nil {
			return nil, err
		}
		if !d.Remote() && !objstore.IsRemote(src) {
			if err := stage.CheckDisjoint(src, d.Location()); err != nil {
				return nil, fmt.Errorf("pack: %w", err)
			}
		}
		base, err := packBase(ctx, pf, d, rec)
		if err != nil {
			return nil, err
		}
		if base != nil && len(base.Diff.New) == 0 {
			e.infof("already done: %s holds every file of this source; nothing was written", d.Location())
			return plan.Summary{Status: plan.StatusAlreadyDone, Dest: d.Location()}, nil
		}
		if old, err := d.ReadRecord(ctx); err == nil && base == nil {
			if diff := rec.Diff(old); len(diff) > 0 {
				return nil, &usageError{msg: fmt.Sprintf("pack: %s: %v: %s", dst, convert.ErrDifferentRun, strings.Join(diff, "; ")),
					hint: "choose a new destination, or remove this one to pack again"}
			}
			e.infof("already done: %s holds the pack of this source; nothing was written", dst)
			return plan.Summary{Status: plan.StatusAlreadyDone, Dest: dst}, nil
		}
		refBase := pf.refBase
		if refBase == "" && d.Remote() {
			_, prefix, _ := objstore.ParseS3(dst)
			refBase = path.Base("/" + prefix)
			if prefix == "" {
				refBase = "."
			}
		} else if refBase == "" {
			refBase = filepath.Base(d.Location())
		}
		prog := e.newProgress("pack")
		out, err = convert.Begin(ctx, d, convert.OutputOptions{
			Pack: convert.PackOptions{MaxPackBytes: int64(pf.maxPackBytes), MaxMembers: pf.maxMembers, NoManifest: pf.noManifest,
				Record: rec, Append: pf.append, AllowRemoved: pf.allowRemoved},
			Base:     base,
			PackDir:  ".",
			RefBase:  refBase,
			Progress: prog,
		})
		if err != nil {
			return nil, err
		}
		defer out.Abort()
		prog.SetTotal(count, total)
		err = walk(func(it item) error {
			if base.Holds(sourcePath(src, it.path, srcStore != nil)) {
				return nil // packed by an earlier commit
			}
			if err := addItem(ctx, out, srcStore, it.key, it.path, it.size); err != nil {
				return fmt.Errorf("pack: %s: %w", it.path, err)
			}
			prog.Add(1, it.size)
			return nil
		})
		if err == nil {
			stats, err = out.Commit()
		}
		if err != nil && ctx.Err() != nil {
			// Stopped by a signal: the shards uploaded stay for a rerun.
			out.Abort()
			return nil, keptInBucket(ctx, err, convert.Target{Dest: d, Record: rec}, ".")
		}
		if err != nil {
			return nil, err
		}
		sum := out.Summary(plan.Summary{})
		upload, appended = sum.Upload, sum.Appended
		stats.Members, stats.Bytes = sum.Blobs, sum.Bytes
		dst = d.Location()
	} else {
		// From object storage to a local directory: the local pack path
		// with objects as the files.
		abs, _ := filepath.Abs(dst)
		st, err := stage.Begin(abs)
		if err != nil {
			return nil, err
		}
		defer st.Abort()
		opts := pf.options()
		opts.NoLock = true
		if opts.RefBase == "" {
			opts.RefBase = filepath.Base(abs)
		}
		w, err := packcore.Create(ctx, st.Dir, opts)
		if err != nil {
			return nil, err
		}
		defer w.Abort()
		prog := e.newProgress("pack")
		prog.SetTotal(count, total)
		err = walk(func(it item) error {
			if err := addItem(ctx, w, srcStore, it.key, it.path, it.size); err != nil {
				return fmt.Errorf("pack: %s/%s: %w", src, it.path, err)
			}
			prog.Add(1, it.size)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if stats, err = w.Close(); err != nil {
			return nil, err
		}
		if err := st.Commit(); err != nil {
			return nil, err
		}
		dst = abs
	}
	e.infof("packed %s (%s bytes) into %s under %s", plan.CountText(stats.Members, "blobs"), plan.Thousands(stats.Bytes), plan.CountText(int64(stats.Shards), "shards"), dst)
	return packResult{Src: src, Dst: dst, Members: stats.Members, Bytes: stats.Bytes, Shards: stats.Shards,
		GroupsSplit: stats.GroupsSplit, ShardFiles: stats.ShardFiles, Upload: upload, Appended: appended}, nil
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

// sourcePath is the path of a pack source's file as its run record names
// it (see convert.Identify): absolute for a local file, the s3:// location
// of an object.
func sourcePath(src, p string, remote bool) string {
	if remote {
		return strings.TrimSuffix(src, "/") + "/" + p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// fileAdder is what addItem adds to: a run's output or a pack writer.
type fileAdder interface {
	convert.Packer
	AddFile(key, path, group string) (string, error)
}

// addItem adds one file (a local path) or object (a name in src) as key.
func addItem(ctx context.Context, w fileAdder, src objstore.Store, key, name string, size int64) error {
	if src == nil {
		_, err := w.AddFile(key, name, "")
		return err
	}
	obj, err := src.Open(ctx, name)
	if err != nil {
		return err
	}
	defer obj.Close()
	r := objstore.NewSeqReader(ctx, obj, objstore.SeqOptions{})
	defer r.Close()
	_, err = w.Add(key, r, size, "")
	return err
}
