package wds

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/stage"
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
		abs[i] = a
		if first {
			common, first = filepath.Dir(a), false
			continue
		}
		for !stage.Within(common, a) {
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

// checkDisjoint refuses a destination inside a source directory (or one
// that holds it): the output would be written among the shards it reads.
// The error wraps stage.ErrOverlap, a usage error.
func checkDisjoint(opts Options) error {
	if opts.Dst == "" || opts.Src == "" || opts.Src == "-" {
		return nil
	}
	for _, p := range strings.Split(opts.Src, "::") {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			if err := stage.CheckDisjoint(p, opts.Dst); err != nil {
				return err
			}
		}
	}
	return nil
}
