package wds

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
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
	// store and key name a shard in object storage (Path is then its
	// s3:// location).
	store objstore.Store
	key   string
	// etag is the listed version of a shard in object storage: every
	// pass reads that version, or fails (objstore.ErrChanged).
	etag string
}

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
		if s.store == nil {
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

// listSources lists every shard that opts.src names.
func listSources(ctx context.Context, opts Options) (sourceList, error) {
	src := opts.src
	if src == "" {
		return sourceList{}, fmt.Errorf("wds: no source given")
	}
	if src == "-" {
		if opts.Stdin == nil {
			return sourceList{}, fmt.Errorf("wds: source is standard input but no reader was given")
		}
		name := opts.StdinName
		if name == "" {
			name = "stdin"
		}
		return sourceList{Shards: []shardSource{{Name: "-", Stem: name, Size: -1}}, Bytes: -1}, nil
	}
	if objstore.IsRemote(src) {
		return listRemote(ctx, src, opts.Stats)
	}
	fi, err := os.Stat(src)
	if err == nil {
		if fi.IsDir() {
			return listDir(src)
		}
		return listFiles([]string{src})
	}
	if !strings.ContainsAny(src, "{}") && !strings.Contains(src, "::") {
		return sourceList{}, &InputError{Source: "wds", Row: -1, File: src, Offset: -1, Err: pathCause(err)}
	}
	names, perr := ExpandShards(src)
	if perr != nil {
		return sourceList{}, fmt.Errorf("wds: %w", perr)
	}
	if len(names) == 0 {
		return sourceList{}, fmt.Errorf("wds: %q: %w", src, ErrNoShards)
	}
	return listFiles(names)
}

// listRemote lists the shards in object storage that src names: one
// object, the shards directly under a prefix (sorted by name), or a brace
// pattern of objects.
func listRemote(ctx context.Context, src string, stats *objstore.Stats) (sourceList, error) {
	bucket, key, err := objstore.ParseS3(src)
	if err != nil && !strings.ContainsAny(src, "{}") {
		return sourceList{}, fmt.Errorf("wds: %w", err)
	}
	if strings.ContainsAny(src, "{}") || strings.Contains(src, "::") {
		names, perr := ExpandShards(src)
		if perr != nil {
			return sourceList{}, fmt.Errorf("wds: %w", perr)
		}
		var l sourceList
		for _, n := range names {
			one, err := listRemote(ctx, n, stats)
			if err != nil {
				return sourceList{}, err
			}
			l.Shards = append(l.Shards, one.Shards...)
			l.Bytes += one.Bytes
		}
		return l, nil
	}
	st, err := objstore.Open(ctx, "s3://"+bucket, objstore.Options{Stats: stats})
	if err != nil {
		return sourceList{}, fmt.Errorf("wds: %w", err)
	}
	shard := func(key string, size int64, etag string) shardSource {
		loc := "s3://" + bucket + "/" + key
		return shardSource{Name: loc, Path: loc, Stem: ShardStem(key), Size: size, store: st, key: key, etag: etag}
	}
	if key != "" && !strings.HasSuffix(src, "/") {
		if in, err := st.Stat(ctx, key); err == nil {
			return sourceList{Shards: []shardSource{shard(key, in.Size, in.ETag)}, Bytes: in.Size}, nil
		} else if !errors.Is(err, objstore.ErrNotExist) || errors.Is(err, objstore.ErrNoBucket) {
			return sourceList{}, &InputError{Source: "wds", Row: -1, File: src, Offset: -1, Err: err}
		}
	}
	prefix := key
	if prefix != "" {
		prefix += "/"
	}
	var l sourceList
	listed := 0
	err = st.List(ctx, prefix, func(in objstore.Info) error {
		listed++
		name := strings.TrimPrefix(in.Name, prefix)
		if strings.Contains(name, "/") || strings.HasPrefix(name, ".") {
			return nil
		}
		if !IsShardName(name) {
			l.Ignored = append(l.Ignored, name)
			return nil
		}
		l.Shards = append(l.Shards, shard(in.Name, in.Size, in.ETag))
		l.Bytes += in.Size
		return nil
	})
	if err != nil {
		return sourceList{}, &InputError{Source: "wds", Row: -1, File: src, Offset: -1, Err: err}
	}
	if listed == 0 {
		// Nothing under the prefix: the source is missing, as a missing
		// directory is.
		return sourceList{}, &InputError{Source: "wds", Row: -1, File: src, Offset: -1, Err: fmt.Errorf("no object is under s3://%s/%s: %w", bucket, prefix, fs.ErrNotExist)}
	}
	if len(l.Shards) == 0 {
		return sourceList{}, fmt.Errorf("wds: %s: %w (looked for *.tar, *.tar.gz, *.tgz, *.tar.bz2, *.tar.xz, *.tar.zst)", src, ErrNoShards)
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
