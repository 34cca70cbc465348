package wds

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// tableNames returns the __shard__ value of every shard: its path relative
// to the deepest directory holding all the shards (so a directory source
// gives the file names inside it, one shard file its base name), never the
// absolute path the source was typed with, which would write the machine's
// paths into the dataset. Standard input is named by its stem.
func tableNames(shards []shardSource) []string {
	abs := make([]string, len(shards))
	common := ""
	first := true
	for i, s := range shards {
		if s.Path == "" {
			continue
		}
		a, err := filepath.Abs(s.Path)
		if err != nil {
			a = filepath.Clean(s.Path)
		}
		if s.remote() {
			a = "/" + strings.TrimPrefix(s.Path, "s3://") // bucket, then key
		}
		abs[i] = a
		if first {
			common, first = filepath.Dir(a), false
			continue
		}
		for !srcfile.Within(common, a) {
			parent := filepath.Dir(common)
			if parent == common {
				break
			}
			common = parent
		}
	}
	names := make([]string, len(shards))
	for i, s := range shards {
		if s.Path == "" {
			names[i] = s.Stem
			continue
		}
		rel, err := filepath.Rel(common, abs[i])
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			rel = filepath.Base(abs[i])
		}
		names[i] = filepath.ToSlash(rel)
	}
	return names
}

// partTableNames returns tableNames for the shards of one part of a split
// conversion, computed over every shard the source names, so all parts
// name shards alike whichever shards each one holds.
func partTableNames(ctx context.Context, opts Options, part []shardSource) []string {
	if opts.Part.Whole() {
		return tableNames(part)
	}
	all, err := listSources(ctx, opts)
	if err != nil {
		return tableNames(part)
	}
	byPath := map[string]string{}
	for i, name := range tableNames(all.Shards) {
		byPath[all.Shards[i].Path] = name
	}
	names := tableNames(part)
	for i, s := range part {
		if n, ok := byPath[s.Path]; ok && s.Path != "" {
			names[i] = n
		}
	}
	return names
}
