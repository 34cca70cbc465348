package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

// version is the release this program was built as; make build sets it
// with -ldflags "-X main.version=..." from git describe. Without it the
// version comes from the build information: the module version when built
// with go install, else "devel" and the VCS revision.
var version string

type versionResult struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
}

// versionInfo describes this build.
func versionInfo() versionResult {
	v := versionResult{Version: version}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		v.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
	}
	if v.Version == "" {
		v.Version = "devel"
		if len(v.Revision) >= 12 {
			v.Version += "-" + v.Revision[:12]
			if v.Modified {
				v.Version += "-dirty"
			}
		}
	}
	return v
}

func cmdVersion(ctx context.Context, e *env, args []string) (any, error) {
	fset := flag.NewFlagSet("version", flag.ContinueOnError)
	if _, err := e.parse(fset, args, 0, ""); err != nil {
		return nil, err
	}
	v := versionInfo()
	if !e.json {
		fmt.Fprintf(e.stdout, "bpconvert %s (%s)\n", v.Version, v.GoVersion)
	}
	return v, nil
}
