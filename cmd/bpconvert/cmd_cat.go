package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	flag "github.com/spf13/pflag"
)

// catResult is cat's JSON summary (written with --summary-file; stdout
// carries the blob).
type catResult struct {
	Key    string `json:"key"`
	Shard  string `json:"shard"`
	Size   int64  `json:"size"`
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	// CRCChecked is true when the whole member was read and its CRC-32
	// matched.
	CRCChecked bool `json:"crc_checked"`
	// fetched says what reading from s3:// took.
	*fetched
}

func cmdCat(e *env, fset *flag.FlagSet) runFunc {
	offset := fset.Int64("offset", 0, "start `N` bytes into the blob (a positioned read: nothing before it is read)")
	length := fset.Int64("length", -1, "write at most `N` bytes (-1: to the end)")
	return func(ctx context.Context, pos []string) (any, error) {
		if len(pos) < 1 || len(pos) > 2 {
			return nil, &usageError{msg: fmt.Sprintf("cat: expected REF|KEY [DIR], got %d argument(s)", len(pos)), hint: "run bpconvert cat --help"}
		}
		if e.json {
			return nil, &usageError{msg: "cat: --json is not available: stdout carries the blob", hint: "use --summary-file PATH for the JSON summary"}
		}
		if *offset < 0 || *length < -1 {
			return nil, usagef("cat: --offset must be 0 or more and --length -1 or more")
		}
		dir := ""
		if len(pos) == 2 {
			dir = pos[1]
		}
		set, name, loc, err := openForCat(ctx, pos[0], dir)
		if err != nil {
			return nil, err
		}
		defer set.Close()
		m, err := set.Stat(name)
		if errors.Is(err, packcore.ErrDuplicateKey) {
			return nil, &hintError{err: fmt.Errorf("cat: %w", err), hint: "bpconvert ls --json DIR lists each member with its reference, which names its shard"}
		}
		if err != nil {
			return nil, &hintError{err: fmt.Errorf("cat: %w", err), hint: "bpconvert ls DIR lists the keys"}
		}
		res := catResult{Key: m.Key, Shard: m.Shard, Size: m.Size, Offset: *offset}
		if *offset > m.Size {
			return nil, usagef("cat: --offset %d is past the end of %q (%d bytes)", *offset, m.Key, m.Size)
		}
		n := m.Size - *offset
		if *length >= 0 && *length < n {
			n = *length
		}
		var r io.ReadCloser
		if *offset == 0 && n == m.Size {
			// The whole blob: its CRC-32 is checked as it streams.
			if r, err = set.OpenChecked(name); err != nil {
				return nil, fmt.Errorf("cat: %w", err)
			}
			res.CRCChecked = true
		} else if r, err = set.OpenRange(name, *offset, n); err != nil {
			return nil, fmt.Errorf("cat: %w", err)
		}
		defer r.Close()
		w, err := io.Copy(e.stdout, &ctxReader{ctx: ctx, r: r})
		res.Bytes = w
		res.fetched = loc.fetched()
		if err != nil {
			if errors.Is(err, packcore.ErrChecksum) {
				return res, &inputError{err: fmt.Errorf("cat: %q: %w", m.Key, err)}
			}
			return res, fmt.Errorf("cat: %q: %w", m.Key, err)
		}
		return res, nil
	}
}

// openForCat opens the pack set that resolves arg. A reference's shard path
// is relative to dir (the dataset root; "" for the working directory), or
// an absolute path or s3:// location of its own (--ref-base), read there
// when dir is "" and from dir otherwise (see shardUnder); a bare key is
// looked up in dir, or in dir/media when dir is a dataset root. It returns
// the set and the name to resolve in it (the reference itself, checked
// against its shard), and the location it reads.
func openForCat(ctx context.Context, arg, dir string) (*packcore.Set, string, *packLoc, error) {
	if packcore.IsRef(arg) {
		return openRefForCat(ctx, arg, dir)
	}
	if dir == "" {
		dir = "."
	}
	loc, err := openPackLoc(ctx, "cat", dir)
	if err != nil {
		return nil, "", nil, err
	}
	rel := ""
	if !loc.tree.Remote() && loc.file == "" {
		if shards, err := packcore.ListShards(loc.path("")); err == nil && len(shards) == 0 {
			rel = convert.MediaDir // a dataset root
		}
	}
	set, err := loc.openSet(ctx, rel, packcore.SetOptions{})
	if errors.Is(err, objstore.ErrNotExist) && loc.tree.Remote() && !strings.HasSuffix(loc.path(""), ".zip") {
		// no shards there: a dataset root
		set, err = loc.openSet(ctx, convert.MediaDir, packcore.SetOptions{})
	}
	if err != nil {
		return nil, "", nil, err
	}
	return set, arg, loc, nil
}

// openRefForCat is openForCat for a reference: in a bucket it opens the one
// shard the reference names (a HEAD and one read of its tail); locally, the
// shard's pack directory.
func openRefForCat(ctx context.Context, arg, dir string) (*packcore.Set, string, *packLoc, error) {
	key, shardPath, err := packcore.ParseRef(arg)
	if err != nil {
		return nil, "", nil, usagef("cat: %v", err)
	}
	_, _, isURL := packcore.SplitURL(shardPath)
	var loc *packLoc
	at, rel := dir, shardPath
	switch {
	case dir != "" && (isURL || path.IsAbs(shardPath)):
		// Named by where the dataset was meant to be read from: read
		// from the copy given, by the end of the shard's path.
		loc, err = openPackLoc(ctx, "cat", dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil, &inputError{err: fmt.Errorf("cat: no shard under %s ends the path %s", dir, shardPath)}
		}
		if err != nil {
			return nil, "", nil, err
		}
		if rel, err = shardUnder(loc, shardPath, dir); err != nil {
			return nil, "", nil, err
		}
		arg = packcore.FormatRef(key, rel)
	case isURL && !inBucket(shardPath):
		return nil, "", nil, &usageError{msg: fmt.Sprintf("cat: %s: reading %s is not supported", arg, shardPath),
			hint: "give a copy of the dataset as DIR (bpconvert cat REF DIR): the reference is read from it by its shard's path's last directories"}
	case isURL:
		at, rel = shardPath, ""
	case dir == "" && filepath.IsAbs(filepath.FromSlash(shardPath)):
		at, rel = filepath.Dir(filepath.FromSlash(shardPath)), path.Base(shardPath)
	case dir == "":
		at = "."
	}
	if loc == nil {
		loc, err = openPackLoc(ctx, "cat", at)
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil, &hintError{err: fmt.Errorf("cat: %s: shard %s: %w", arg, shardPath, pe), hint: refHint}
		}
		if err != nil {
			return nil, "", nil, err
		}
	}
	if st, _ := loc.tree.Store(); st != nil {
		// One shard, opened alone: a HEAD and one read of its tail.
		name := loc.path(rel)
		set, err := packcore.OpenSetIn(ctx, st, name, packcore.SetOptions{RefBase: "."})
		if err != nil {
			return nil, "", nil, storeError("cat", fmt.Errorf("%s: %w", arg, err))
		}
		if path.Base(name) != path.Base(shardPath) || !strings.HasSuffix(name, ".zip") || len(set.Shards()) != 1 {
			set.Close()
			where := loc.tree.Location()
			if rel != "" {
				where = loc.tree.Path(rel)
			}
			return nil, "", nil, &inputError{err: fmt.Errorf("cat: %s: %s is not a shard", arg, where)}
		}
		return set, arg, loc, nil
	}
	local := loc.path(rel)
	if _, err := os.Stat(local); err != nil {
		return nil, "", nil, &hintError{err: fmt.Errorf("cat: %s: shard %s: %w", arg, shardPath, err), hint: refHint}
	}
	set, err := packcore.OpenSet(filepath.Dir(local), packcore.SetOptions{RefBase: "."})
	if err != nil {
		return nil, "", nil, &inputError{err: fmt.Errorf("cat: %w", err)}
	}
	return set, arg, loc, nil
}

// refHint is the hint for a reference whose shard is not where it says.
const refHint = "a reference's shard path is relative to the dataset root: give the root as DIR, or run cat from it"

// shardUnder finds, under the location loc (a local directory or an s3://
// location, named dir), the shard that an absolute or URL shard path
// names: the shortest end of the path (the shard's name, then its pack
// directory and name, and so on) that is a file there. It returns that
// end, relative to loc.
func shardUnder(loc *packLoc, shardPath, dir string) (string, error) {
	rest := shardPath
	if _, r, ok := packcore.SplitURL(shardPath); ok {
		rest = r
	}
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	for k := 1; k <= len(segs); k++ {
		rel := strings.Join(segs[len(segs)-k:], "/")
		if _, err := loc.tree.Stat(path.Join(loc.file, rel)); err == nil {
			return rel, nil
		}
	}
	return "", &inputError{err: fmt.Errorf("cat: no shard under %s ends the path %s", dir, shardPath)}
}

// ctxReader stops a copy when ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
