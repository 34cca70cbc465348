package dsverify

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/srctree"
)

// A dataset of packs and no table is what `bpconvert pack`, blobpack
// 0.2.0's `pack` and blobpack 0.2.0's `convert-wds` write. Their keys say
// where each payload came from, so such packs are compared with their
// source by name:
//
//   - a directory (local or an s3:// prefix): every regular file, symlinked
//     files followed, has the key of its path relative to the directory;
//   - WebDataset shards: every file member has the key of its name, or
//     SHARD/NAME where the keys were prefixed with the shard's stem
//     (--shard-prefix; told from the packs: the first member's key).
//
// Every source file must be a member with the same bytes, and every member
// must come from the source: a member no source file names is reported.

// againstPacks compares the packs of a dataset that holds no table with
// src.
func (v *Check) againstPacks(src string) error {
	if len(v.packDirs) != 1 {
		return fmt.Errorf("--against: the dataset holds %d pack directories (%s) and no table; compare one pack directory at a time", len(v.packDirs), strings.Join(v.packDirs, ", "))
	}
	dir := v.packDirs[0]
	e := v.set(dir)
	if e.err != nil {
		return fmt.Errorf("--against: pack directory %s: %w", dir, e.err)
	}
	isDir, err := v.isSourceDir(src)
	if err != nil {
		return fmt.Errorf("--against %s: %w", src, err)
	}
	seen := map[string]struct{}{}
	var a *Against
	if isDir && !v.holdsTarsOnly(src, e.set) {
		a = &Against{Source: src, Format: "directory (packed by name)"}
		v.rep.Against = a
		err = v.walkSource(src, func(key string, open func() (io.ReadCloser, error)) error {
			seen[key] = struct{}{}
			r, err := open()
			if err != nil {
				return err
			}
			defer r.Close()
			n, reason, err := sameBytes(r, e.set, key)
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			if reason != "" {
				reason = fmt.Sprintf("file %q: pack member %q: %s", key, key, reason)
			}
			v.compared(a, n, reason, Problem{Table: src, Row: -1})
			return nil
		})
		if err != nil {
			return fmt.Errorf("--against %s: %w", src, err)
		}
	} else {
		files, err := v.sourceShards(src)
		if err != nil {
			return fmt.Errorf("--against %s: %w", src, err)
		}
		prefix, err := v.detectShardPrefix(files[0], e.set)
		if err != nil {
			return fmt.Errorf("--against %s: %w", src, err)
		}
		if err := v.againstShards(src, files, Shards{PackBase: dir, Prefixed: prefix}, seen); err != nil {
			return err
		}
		a = v.rep.Against
		a.Format = "webdataset (packed by member name)"
	}
	if len(seen) == 0 {
		return fmt.Errorf("--against %s: no files to compare", src)
	}
	// Members no source file names: the first is reported, with their
	// count.
	extra, first := 0, ""
	for m := range e.set.Members() {
		if _, ok := seen[m.Key]; !ok {
			if extra == 0 {
				first = m.Key
			}
			extra++
		}
	}
	if extra > 0 {
		a.Mismatches++
		where := v.root
		if dir != "." {
			where = v.out.join(dir)
		}
		v.problem(Problem{Row: -1, Reason: fmt.Sprintf("pack member %q: no file of the source has its name (%d of the %d members of %s have none)", first, extra, e.set.Len(), where)})
	}
	return nil
}

// isSourceDir reports whether src is a directory: a local one, or an s3://
// location that is no object (a prefix).
func (v *Check) isSourceDir(src string) (bool, error) {
	p, file, err := v.source()
	switch {
	case err != nil:
		if errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(src, "{:") {
			return false, nil // a shard pattern
		}
		return false, err
	case file != "":
		return false, nil
	case p.t.Remote() && (strings.ContainsAny(strings.TrimPrefix(src, "s3://"), "{:") || isTarName(src)):
		return false, nil // a shard pattern, or shards named
	}
	return true, nil
}

// holdsTarsOnly reports whether the directory src holds tar shards whose
// members, not the tars themselves, are in set: the directory is a
// WebDataset then, not a packed tree.
func (v *Check) holdsTarsOnly(src string, set *packcore.Set) bool {
	tars, other := false, false
	_ = v.walkSource(src, func(key string, _ func() (io.ReadCloser, error)) error {
		if set.Has(key) || !isTarName(key) || strings.Contains(key, "/") {
			other = true
			return errStopWalk
		}
		tars = true
		return nil
	})
	return tars && !other
}

var errStopWalk = errors.New("stop")

// walkSource calls fn for every file of the directory src in byte order of
// the keys (local: regular files, symlinked files followed and symlinked
// directories not descended, as pack reads a tree; s3://: every object
// under the prefix), with its key and a way to read it.
func (v *Check) walkSource(src string, fn func(key string, open func() (io.ReadCloser, error)) error) error {
	p, _, err := v.source()
	if err != nil {
		return err
	}
	err = p.t.Walk(v.ctx, "", func(e srctree.Entry) error {
		if e.Mode.IsDir() || e.Name == "." {
			return nil
		}
		if !e.Mode.IsRegular() {
			// a link: to a file (followed), to a directory (not entered)
			if _, err := p.t.Stat(e.Name); err != nil && !errors.Is(err, srcfile.ErrOutside) {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, srcfile.ErrNotRegular) {
					return nil
				}
				return err
			}
		}
		f := p.file(e.Name)
		return fn(e.Name, func() (io.ReadCloser, error) { return f.stream(v.ctx) })
	})
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}

// detectShardPrefix tells whether the packs name the members of the shard
// first (the first of the source) by their name (false) or by SHARD/NAME
// (true), from its first file member.
func (v *Check) detectShardPrefix(f treeFile, set *packcore.Set) (bool, error) {
	first := f.name
	seq, err := f.stream(v.ctx)
	if err != nil {
		return false, err
	}
	defer seq.Close()
	r, comp, release, err := openTar(bufio.NewReaderSize(seq, 1<<16))
	if err != nil {
		return false, fmt.Errorf("%s: corrupt %s stream: %w", first, comp, err)
	}
	defer release()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("%s: %w", first, err)
		}
		if h.Typeflag != tar.TypeReg && h.Typeflag != '\x00' {
			continue
		}
		rel := memberPath(h.Name)
		return !set.Has(rel) && set.Has(tarStem(first)+"/"+rel), nil
	}
}
