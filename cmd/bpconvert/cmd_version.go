package main

import (
	"context"
	"fmt"
	"runtime/debug"

	flag "github.com/spf13/pflag"
)

// version is the release this program was built as: make build sets it
// with -ldflags "-X main.version=..." to the git describe of a checkout
// that has a tag (v1.2.0, or v1.2.0-3-gabc1234-dirty past it). See
// buildVersion for the rest.
var version string

// devel is the version of a build with no release version: a local build
// of an untagged checkout.
const devel = "(devel)"

// buildVersion is the one version string of this build, the one that
// `version` prints and that every output records (the bpconvert metadata
// of tables, the run record, the writer of a Lance manifest): the -ldflags
// version when set, else the module version Go recorded (go install
// ...@v1.2.0 sets it), else "(devel)".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != devel {
		return bi.Main.Version
	}
	return devel
}

type versionResult struct {
	Version   string `json:"version"`
	Revision  string `json:"revision,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
}

// versionInfo describes this build: its version and, beside it, the VCS
// revision Go recorded (if any).
func versionInfo() versionResult {
	v := versionResult{Version: buildVersion()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	return v
}

func cmdVersion(e *env, _ *flag.FlagSet) runFunc {
	return func(context.Context, []string) (any, error) {
		v := versionInfo()
		if !e.json {
			extra := v.GoVersion
			if v.Revision != "" {
				extra += ", revision " + v.Revision
				if v.Modified {
					extra += ", modified"
				}
			}
			fmt.Fprintf(e.stdout, "bpconvert %s (%s)\n", v.Version, extra)
		}
		return v, nil
	}
}
