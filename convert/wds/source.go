package wds

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"
)

// shardSuffixes are the file name endings that mark a tar shard when a
// source directory is listed, longest first so the stem strips the whole
// ending. Compression is still detected from the bytes.
var shardSuffixes = []string{
	".tar.zstd", ".tar.bz2", ".tar.zst", ".tar.gz", ".tar.xz",
	".tbz2", ".tzst", ".tar", ".tgz", ".tbz", ".txz",
}

// shardSource is one shard to read.
type shardSource struct {
	// Name is the shard as listed from the source: the path as expanded
	// or joined, or "-" for standard input.
	Name string
	// Path is the file to open; "" for standard input.
	Path string
	// Stem is the name that --shard-prefix puts before keys.
	Stem string
	// Size is the file size in bytes, or -1 for standard input.
	Size int64
	// tree and rel are the opened source's tree that holds the shard and
	// its name there (nil for standard input). A shard in object storage
	// (Path is then its s3:// location) is read through the tree: every
	// pass reads the version the tree found, or fails
	// (objstore.ErrChanged).
	tree *srctree.Tree
	rel  string
	// etag is the version of a shard in object storage that the tree
	// found.
	etag string
}

// remote reports whether the shard is in object storage.
func (s shardSource) remote() bool { return s.tree != nil && s.tree.Remote() }

// sourceList is what a source argument resolves to.
type sourceList struct {
	Shards []shardSource
	// Ignored lists files of a source directory that are not named like
	// shards (for the plan).
	Ignored []string
	// Bytes sums the shard file sizes; -1 when a shard is standard input.
	Bytes int64
}

// IsShardName reports whether a file name ends like a tar shard (one of
// .tar, .tar.gz, .tgz, .tar.bz2, .tbz, .tbz2, .tar.xz, .txz, .tar.zst,
// .tar.zstd or .tzst, in any case, after at least one character).
func IsShardName(name string) bool {
	lower := strings.ToLower(name)
	for _, s := range shardSuffixes {
		if strings.HasSuffix(lower, s) && len(lower) > len(s) {
			return true
		}
	}
	return false
}

// ShardStem returns the file name without its shard ending: train-000003
// for train-000003.tar.gz, or without its last extension for other names.
// It is what --shard-prefix puts before the keys of the shard's members.
func ShardStem(p string) string {
	base := filepath.Base(p)
	lower := strings.ToLower(base)
	for _, s := range shardSuffixes {
		if strings.HasSuffix(lower, s) && len(lower) > len(s) {
			return base[:len(base)-len(s)]
		}
	}
	if ext := filepath.Ext(base); ext != "" && len(ext) < len(base) {
		return base[:len(base)-len(ext)]
	}
	return base
}

// resolveSources lists the shards a source argument names: "-" (standard
// input), an existing file or directory, or a brace pattern list.
func resolveSources(ctx context.Context, opts Options) (sourceList, error) {
	l, err := listSources(ctx, opts)
	if err != nil {
		return l, err
	}
	if opts.Base != nil {
		l = l.newOnly(opts.Base)
	}
	if opts.Part.Whole() {
		return l, nil
	}
	return l.part(opts.Part), nil
}

// newOnly keeps the shards that the committed output an append extends
// does not hold.
func (l sourceList) newOnly(b *convert.Base) sourceList {
	out := sourceList{Ignored: l.Ignored}
	for _, s := range l.Shards {
		p := s.Path
		if !s.remote() {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		if !b.Holds(p) {
			out.Shards = append(out.Shards, s)
			out.Bytes += s.Size
		}
	}
	return out
}

// part keeps the shards of one part of a split conversion (see
// convert.Part.Range): a contiguous run of shards, balanced by bytes.
func (l sourceList) part(p convert.Part) sourceList {
	sizes := make([]int64, len(l.Shards))
	for i, s := range l.Shards {
		sizes[i] = s.Size
	}
	lo, hi := p.Range(sizes)
	out := sourceList{Shards: l.Shards[lo:hi:hi]}
	for _, s := range out.Shards {
		out.Bytes += s.Size
	}
	return out
}

// listSources lists every shard of the source: standard input ("-"), or
// the shards of the opened source (see OpenSource).
func listSources(ctx context.Context, opts Options) (sourceList, error) {
	if opts.src == "-" {
		if opts.Stdin == nil {
			return sourceList{}, fmt.Errorf("wds: source is standard input but no reader was given")
		}
		name := opts.StdinName
		if name == "" {
			name = "stdin"
		}
		return sourceList{Shards: []shardSource{{Name: "-", Stem: name, Size: -1}}, Bytes: -1}, nil
	}
	opts, err := opts.opened(ctx)
	if err != nil {
		return sourceList{}, err
	}
	return shardsOf(ctx, opts.Source)
}

// opened returns o with its Source opened from its src when the caller
// did not open it (standard input is no source to open).
func (o Options) opened(ctx context.Context) (Options, error) {
	if o.src == "-" || o.Source.Opened() {
		return o, nil
	}
	s, err := openSource(ctx, o.src, objstore.Options{})
	o.Source = s
	return o, err
}

// OpenSource opens the shards src names (see NewJob; not "-", standard
// input, which is no source to open): a shard file, a directory or a
// prefix (its shards, listed now), or brace patterns joined with "::",
// each name a shard file or, in a bucket, a prefix of shards. o.Stats,
// when set, counts what reading shards in object storage fetches. The
// source is checked as it is listed: a missing shard, a directory without
// shards and a bad pattern are errors here (problems with the source are
// *InputError values; a bad pattern and no shards are usage errors).
//
// The source's Files are its shards: what identifies a run.
func OpenSource(ctx context.Context, src string, o objstore.Options) (convert.Source, error) {
	s, err := openSource(ctx, src, o)
	if err != nil {
		return convert.Source{}, usage(err)
	}
	l, err := shardsOf(ctx, s)
	if err != nil {
		return convert.Source{}, usage(err)
	}
	s.Files = make([]convert.Source, len(l.Shards))
	for i, sh := range l.Shards {
		s.Files[i] = convert.Source{Tree: sh.tree, File: sh.rel}
	}
	return s, nil
}

// OpenSources opens the SRC operands of convert-wds (see OpenSource):
// several (a shell glob's) are one list of shards, as "::" joins them;
// "-" alone is standard input, no source to open (an unopened Source
// named "-"), and may not stand beside others.
func OpenSources(ctx context.Context, srcs []string, o objstore.Options) (convert.Source, error) {
	if slices.Contains(srcs, "-") {
		if len(srcs) > 1 {
			return convert.Source{}, &convert.UsageError{Err: errors.New("convert-wds: - (standard input) must be the only source"),
				Hint: "convert a stream alone, or name the shard files"}
		}
		return convert.Source{Name: "-"}, nil
	}
	return OpenSource(ctx, strings.Join(srcs, "::"), o)
}

func openSource(ctx context.Context, src string, o objstore.Options) (convert.Source, error) {
	if src == "" || src == "-" {
		return convert.Source{}, fmt.Errorf("wds: no source given")
	}
	if !strings.ContainsAny(src, "{}") && !strings.Contains(src, "::") {
		t, file, err := srctree.OpenSource(ctx, src, o)
		if err != nil {
			return convert.Source{}, openError(src, err)
		}
		return convert.Source{Parts: []convert.Source{{Tree: t, File: file, Name: src}}, Name: src}, nil
	}
	names, err := ExpandShards(src)
	if err != nil {
		return convert.Source{}, fmt.Errorf("wds: %w", err)
	}
	if len(names) == 0 {
		return convert.Source{}, fmt.Errorf("wds: %q: %w", src, ErrNoShards)
	}
	out := convert.Source{Name: src}
	// The objects named in one prefix are looked up in one tree, found
	// by the first of them (see srctree.OpenSource).
	byDir := map[string]*srctree.Tree{}
	for _, n := range names {
		if i := strings.LastIndex(n, "/"); i > 0 {
			if t := byDir[n[:i]]; t != nil {
				if _, err := t.Stat(n[i+1:]); err == nil {
					out.Parts = append(out.Parts, convert.Source{Tree: t, File: n[i+1:], Name: n})
					continue
				}
			}
		}
		t, file, err := srctree.OpenSource(ctx, n, o)
		if err != nil {
			return convert.Source{}, openError(n, err)
		}
		if file == "" && !t.Remote() {
			return convert.Source{}, &InputError{Source: "wds", Row: -1, File: n, Offset: -1, Err: errors.New("is a directory, not a shard")}
		}
		if file != "" && t.Remote() {
			byDir[t.Location()] = t
		}
		out.Parts = append(out.Parts, convert.Source{Tree: t, File: file, Name: n})
	}
	return out, nil
}

// openError words a failure to open the shard or directory name.
func openError(name string, err error) error {
	var local *srctree.LocalError
	switch {
	case errors.As(err, &local):
		return &InputError{Source: "wds", Row: -1, File: name, Offset: -1, Err: pathCause(err)}
	case errors.Is(err, objstore.ErrBadLocation):
		return fmt.Errorf("wds: %w", err)
	}
	return &InputError{Source: "wds", Row: -1, File: name, Offset: -1, Err: err}
}

// shardsOf lists the shards of the opened source s: each part's shard
// file, or the shards directly inside its directory or prefix, sorted by
// name.
func shardsOf(ctx context.Context, s convert.Source) (sourceList, error) {
	var l sourceList
	for _, p := range s.Parts {
		var one sourceList
		var err error
		switch {
		case p.Tree.Remote():
			one, err = listRemote(ctx, p)
		case p.File == "":
			one, err = listDir(p.String())
		default:
			one, err = listFiles([]string{p.String()})
		}
		if err != nil {
			return sourceList{}, err
		}
		for i, sh := range one.Shards {
			if sh.tree == nil {
				// a local shard: the part's file, or one directly in it
				one.Shards[i].tree, one.Shards[i].rel = p.Tree, p.File
				if p.File == "" {
					one.Shards[i].rel = filepath.Base(sh.Path)
				}
			}
		}
		l.Shards = append(l.Shards, one.Shards...)
		l.Ignored = append(l.Ignored, one.Ignored...)
		l.Bytes += one.Bytes
	}
	return l, nil
}

// listRemote lists the shard of the part p of a source in object storage:
// the object it names, or the shards directly under its prefix (sorted by
// name), as its tree found them.
func listRemote(ctx context.Context, p convert.Source) (sourceList, error) {
	shard := func(e srctree.Entry) shardSource {
		loc := p.Tree.Path(e.Name)
		return shardSource{Name: loc, Path: loc, Stem: ShardStem(e.Name), Size: e.Size, tree: p.Tree, rel: e.Name, etag: e.ETag}
	}
	if p.File != "" {
		e, err := p.Tree.Stat(p.File)
		if err != nil {
			return sourceList{}, &InputError{Source: "wds", Row: -1, File: p.String(), Offset: -1, Err: err}
		}
		return sourceList{Shards: []shardSource{shard(e)}, Bytes: e.Size}, nil
	}
	var l sourceList
	err := p.Tree.Walk(ctx, "", func(e srctree.Entry) error {
		if strings.Contains(e.Name, "/") || strings.HasPrefix(e.Name, ".") {
			return nil
		}
		if !IsShardName(e.Name) {
			l.Ignored = append(l.Ignored, e.Name)
			return nil
		}
		l.Shards = append(l.Shards, shard(e))
		l.Bytes += e.Size
		return nil
	})
	if err != nil {
		return sourceList{}, &InputError{Source: "wds", Row: -1, File: p.String(), Offset: -1, Err: err}
	}
	if len(l.Shards) == 0 {
		return sourceList{}, fmt.Errorf("wds: %s: %w (looked for *.tar, *.tar.gz, *.tgz, *.tar.bz2, *.tar.xz, *.tar.zst)", p, ErrNoShards)
	}
	return l, nil
}

// listFiles checks that every named shard is a readable file.
func listFiles(names []string) (sourceList, error) {
	var l sourceList
	for _, n := range names {
		fi, err := os.Stat(n)
		if err != nil {
			return sourceList{}, &InputError{Source: "wds", Row: -1, File: n, Offset: -1, Err: pathCause(err)}
		}
		if fi.IsDir() {
			return sourceList{}, &InputError{Source: "wds", Row: -1, File: n, Offset: -1, Err: errors.New("is a directory, not a shard")}
		}
		l.Shards = append(l.Shards, shardSource{Name: n, Path: n, Stem: ShardStem(n), Size: fi.Size()})
		l.Bytes += fi.Size()
	}
	return l, nil
}

// listDir lists the shards directly inside dir, sorted by name.
func listDir(dir string) (sourceList, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return sourceList{}, fmt.Errorf("wds: %w", err)
	}
	var names, ignored []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if !IsShardName(e.Name()) {
			if e.Type().IsRegular() {
				ignored = append(ignored, e.Name())
			}
			continue
		}
		fi, err := os.Stat(p) // follows symbolic links to shards
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return sourceList{}, &InputError{Source: "wds", Row: -1, File: p, Offset: -1, Err: errors.New("broken symbolic link")}
			}
			return sourceList{}, fmt.Errorf("wds: %w", err)
		}
		if fi.Mode().IsRegular() {
			names = append(names, p)
		} else if !fi.IsDir() {
			// named like a shard but a FIFO, socket or device: refused,
			// neither read (a FIFO blocks) nor silently left out
			return sourceList{}, &InputError{Source: "wds", Row: -1, File: p, Offset: -1, Err: srcfile.CheckMode(fi.Mode())}
		}
	}
	if len(names) == 0 {
		return sourceList{}, fmt.Errorf("wds: %s: %w (looked for *.tar, *.tar.gz, *.tgz, *.tar.bz2, *.tar.xz, *.tar.zst)", dir, ErrNoShards)
	}
	sort.Strings(names)
	sort.Strings(ignored)
	l, err := listFiles(names)
	l.Ignored = ignored
	return l, err
}

// pathCause strips the operation and path from an *fs.PathError, whose path
// the caller reports already.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
