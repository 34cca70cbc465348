package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

type versionResult struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	GoVersion string `json:"go_version"`
}

func cmdVersion(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, err := e.parse(fset, args, 0, ""); err != nil {
		return nil, err
	}
	v := versionResult{Version: "(devel)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.GoVersion = bi.GoVersion
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Revision = s.Value
			}
		}
	}
	if !e.json {
		fmt.Fprintf(e.stdout, "bpconvert %s %s %s\n", v.Version, v.Revision, v.GoVersion)
	}
	return v, nil
}
