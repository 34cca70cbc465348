package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	flag "github.com/spf13/pflag"
)

type manifestResult struct {
	Path   string `json:"path"`
	Shards int    `json:"shards"`
}

func cmdManifest(e *env, fset *flag.FlagSet) runFunc {
	force := fset.Bool("force", false, "replace an existing pack.manifest.json")
	return func(ctx context.Context, pos []string) (any, error) {
		dir := pos[0]
		path := filepath.Join(dir, packcore.ManifestName)
		if _, err := os.Stat(path); err == nil && !*force {
			return nil, &usageError{msg: fmt.Sprintf("manifest: %s exists; packs are immutable", path), hint: "use --force to rewrite it"}
		}
		shards, err := packcore.HashShards(ctx, dir)
		if err != nil {
			return nil, &inputError{err: fmt.Errorf("manifest: %w", err)}
		}
		if len(shards) == 0 {
			return nil, usagef("manifest: no *.zip shards under %s", dir)
		}
		if err := packcore.WriteManifest(dir, shards); err != nil {
			return nil, err
		}
		e.infof("wrote %s for %s", path, plan.CountText(int64(len(shards)), "shards"))
		return manifestResult{Path: path, Shards: len(shards)}, nil
	}
}
