//go:build lerobot

package main

import (
	"context"

	"github.com/bpconvert/bpconvert/convert/lerobot/video/libav"
	flag "github.com/spf13/pflag"
)

// runLerobot converts with the libav video engine that only this build
// (tag lerobot) links.
func runLerobot(ctx context.Context, e *env, fset *flag.FlagSet, o *lerobotFlags, pos []string) (any, error) {
	return o.run(ctx, e, fset, pos, libav.Engine{})
}
