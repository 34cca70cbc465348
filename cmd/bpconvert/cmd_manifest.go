package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
)

type manifestResult struct {
	Path   string `json:"path"`
	Shards int    `json:"shards"`
}

func cmdManifest(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("manifest", flag.ContinueOnError)
	force := fset.Bool("force", false, "replace an existing pack.manifest.json")
	pos, err := e.parse(fset, args, 1, "DIR")
	if err != nil {
		return nil, err
	}
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
