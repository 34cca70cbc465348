package lerobot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/stage"
)

// TestJob drives conversions through the converter contract: Plan writes
// nothing and may be repeated, Run returns the summary built by the
// package, and --no-manifest leaves no pack.manifest.json while the packs
// still verify.
func TestJob(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		base       string
		video      bool // reads camera files
		noManifest bool
		counts     map[string]int64
	}{
		{name: "images", base: "v2.1-images", counts: map[string]int64{"videos": 0, "rewritten tables": 6}},
		{name: "images, no manifest", base: "v2.1-images", noManifest: true, counts: map[string]int64{"videos": 0}},
		{name: "videos, no manifest", base: "v3.0", video: true, noManifest: true,
			counts: map[string]int64{"videos": 7, "episode containers": 6, "index entries": 12}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dst := filepath.Join(t.TempDir(), "out")
			job, err := NewJob(ctx, dataset(t, tc.base), converttest.Dest(t, dst), Options{
				Options: convert.Options{PackOptions: convert.PackOptions{NoManifest: tc.noManifest}},
				Engine:  testEngine(t, tc.video),
			})
			if err != nil {
				t.Fatal(err)
			}
			converttest.RunBeforePlan(t, job, dst)
			var p plan.Plan
			for range 2 {
				var err error
				if p, err = job.Plan(ctx, nil, progress.Nop{}); err != nil {
					t.Fatal(err)
				}
			}
			if p.Source.Format != "LeRobot" || p.Dest != dst {
				t.Errorf("plan source %+v, dest %s", p.Source, p.Dest)
			}
			for _, q := range []string{dst, stage.Path(dst)} {
				if _, err := os.Lstat(q); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("planning wrote %s", q)
				}
			}
			sum, err := job.Run(ctx, progress.Nop{})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Format != "LeRobot" || sum.Source != job.Inspection().Dataset.Root || sum.Dest != dst || sum.Blobs == 0 || sum.Shards == 0 {
				t.Errorf("summary %+v", sum)
			}
			got := map[string]int64{}
			for _, c := range sum.Counts {
				got[c.Name] = c.N
			}
			for name, want := range tc.counts {
				if got[name] != want {
					t.Errorf("count %q = %d, want %d (counts %v)", name, got[name], want, sum.Counts)
				}
			}
			media := filepath.Join(dst, convert.MediaDir)
			_, err = os.Stat(filepath.Join(media, packcore.ManifestName))
			if tc.noManifest != errors.Is(err, os.ErrNotExist) {
				t.Errorf("no manifest %v, but %s: %v", tc.noManifest, packcore.ManifestName, err)
			}
			rep, err := packcore.Verify(ctx, media)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || int64(rep.Members) != sum.Blobs || rep.Manifest == tc.noManifest {
				t.Errorf("verify: %+v; summary says %d blobs", rep, sum.Blobs)
			}
		})
	}
}

// TestNoEngine refuses to read camera files without a video engine, after
// the metadata checks and before anything is written.
func TestNoEngine(t *testing.T) {
	t.Parallel()
	_, err := Inspect(context.Background(), dataset(t, "v3.0"), Options{})
	if err == nil || !strings.Contains(err.Error(), "no video engine") || errors.Is(err, convert.ErrInvalidInput) {
		t.Fatalf("Inspect: %v; want a refusal naming the missing engine, not blaming the dataset", err)
	}
	if _, err := Inspect(context.Background(), dataset(t, "v3.0-overlap"), Options{}); !errors.Is(err, convert.ErrInvalidInput) {
		t.Fatalf("Inspect: %v; metadata is checked before the engine is needed", err)
	}
}
