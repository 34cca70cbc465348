package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// TestPackFlagsEveryConverter checks that the pack flags every converter
// offers take effect in each: --no-manifest writes no manifest (the packs
// stay valid), --max-members rolls shards over. (convert-lerobot runs in its
// own binary and has its own test in lerobot_test.go.)
func TestPackFlagsEveryConverter(t *testing.T) {
	t.Parallel()
	shared := filepath.Join(testtool.SharedDir(t), "data", "webdataset", "sample.tgz")
	cases := []struct {
		name string
		args func(t *testing.T) []string // command and SRC
	}{
		{"convert-wds", func(t *testing.T) []string { return []string{"convert-wds", shared} }},
		{"convert-parquet", func(t *testing.T) []string {
			return []string{"convert-parquet", filepath.Join(parquetFixtureRoot(t), "hf")}
		}},
		{"convert-lance", func(t *testing.T) []string {
			return []string{"convert-lance", filepath.Join(lanceFixtures(t), "blob1_2_1.lance")}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, manifest := range []bool{true, false} {
				dst := filepath.Join(t.TempDir(), "out")
				args := append(tc.args(t), dst, "--yes", "--max-members", "2")
				if !manifest {
					args = append(args, "--no-manifest")
				}
				r := bp(t, args...)
				if r.code != exitOK {
					t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
				}
				media := filepath.Join(dst, "media")
				_, err := os.Stat(filepath.Join(media, packcore.ManifestName))
				if manifest != (err == nil) {
					t.Errorf("manifest wanted %v, stat: %v", manifest, err)
				}
				shards, err := packcore.ListShards(media)
				if err != nil || len(shards) < 2 {
					t.Errorf("--max-members 2: shards %v, %v", shards, err)
				}
				if rep, err := packcore.Verify(t.Context(), media); err != nil || !rep.OK() {
					t.Errorf("verify: %v %v", rep, err)
				}
			}
		})
	}
}
