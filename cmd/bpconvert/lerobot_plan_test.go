package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/plan"
)

// TestLerobotDryRunWithoutCompanion runs convert-lerobot --dry-run from a
// bpconvert with no bpconvert-lerobot beside it or on PATH: the plan comes
// from the dataset's metadata (exit 0, nothing written), and says that the
// camera files' keyframes were not probed instead of counting them.
func TestLerobotDryRunWithoutCompanion(t *testing.T) {
	t.Parallel()
	root := lerobotFixtureRoot(t)
	dir := t.TempDir()
	alone := filepath.Join(dir, "bpconvert")
	b, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) result {
		cmd := exec.Command(alone, args...)
		cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{code, so.String(), se.String()}
	}
	for _, tc := range []struct {
		version string
		actions map[string]plan.Action
	}{
		{"v3.0", map[string]plan.Action{"observation.images.top": plan.ActionRewrite, "observation.images.wrist": plan.ActionRewrite, "data/*.parquet": plan.ActionCopy, "meta/": plan.ActionCopy}},
		{"v2.1", map[string]plan.Action{"meta/": plan.ActionCopy}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			src := filepath.Join(root, tc.version)
			r := run("convert-lerobot", "--dry-run", src, dst)
			if r.code != exitOK || !strings.Contains(r.stdout+r.stderr, "keyframes not probed") {
				t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
			}
			r = run("convert-lerobot", "--dry-run", "--json", src, dst)
			if r.code != exitOK {
				t.Fatalf("--json: exit %d: %s", r.code, r.stderr)
			}
			p, err := plan.ParseJSON(strings.NewReader(r.stdout))
			if err != nil {
				t.Fatalf("plan JSON: %v\n%s", err, r.stdout)
			}
			videos := 0
			for _, e := range p.Entries {
				if a, ok := tc.actions[e.Name]; ok && e.Action != a {
					t.Errorf("entry %s: action %q, want %q", e.Name, e.Action, a)
				}
				if e.Kind != "video" {
					continue
				}
				videos++
				notes := strings.Join(e.Notes, "\n")
				if !strings.Contains(notes, "keyframes not probed") || strings.Contains(notes, "checked:") {
					t.Errorf("video %s: notes %q", e.Name, e.Notes)
				}
				if e.Evidence == nil || e.Evidence.Values == 0 || e.Evidence.TotalBytes == 0 {
					t.Errorf("video %s: evidence %+v, want the files' count and size from the listing", e.Name, e.Evidence)
				}
			}
			if videos == 0 {
				t.Errorf("the plan has no video entry: %+v", p.Entries)
			}
			if exists(dst) {
				t.Fatal("--dry-run wrote the destination")
			}
		})
	}
}
