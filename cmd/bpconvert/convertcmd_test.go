package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConverterOperands runs the refusals that every converter's command
// makes of its operands and flags before it converts anything: exit 2,
// the reason named, the destination not made.
func TestConverterOperands(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// never read: each refusal comes before the source is
	writeTree(t, root, map[string]string{"a.tar": "x"})
	tarPath := filepath.Join(root, "a.tar")
	robot := filepath.Join(root, "robot")
	writeTree(t, robot, map[string]string{"meta/info.json": "{}"})
	dst := filepath.Join(t.TempDir(), "out")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"wds without DST", []string{"convert-wds", tarPath}, "convert-wds: expected SRC... DST, got 1 argument(s)"},
		{"parquet with two SRC", []string{"convert-parquet", tarPath, tarPath, dst}, "convert-parquet: expected SRC DST, got 3 argument(s)"},
		{"stdin beside a shard", []string{"convert-wds", "-", tarPath, dst}, "convert-wds: - (standard input) must be the only source"},
		{"stdin split", []string{"convert-wds", "--part", "1/2", "-", dst}, "convert-wds: --part splits shard files; standard input cannot be split"},
		{"stdin appended", []string{"convert-wds", "--append", "-", dst}, "standard input cannot tell what is new"},
		{"allow-removed alone", []string{"convert-parquet", "--allow-removed", robot, dst}, "--allow-removed goes with --append"},
		{"lerobot allow-removed", []string{"convert-lerobot", "--append", "--allow-removed", robot, dst}, "convert-lerobot: --allow-removed does not apply"},
		{"lerobot bad video", []string{"convert-lerobot", "--video", "cut", robot, dst}, `convert-lerobot: --video "cut": want copy or skip`},
		{"parquet bad field", []string{"convert-parquet", "--field", `a\x`, robot, dst}, `convert-parquet: --field "a\\x": a backslash must be followed`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := bp(t, append(c.args, "--yes")...)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", r.code, exitUsage, c.want, r.stderr)
			}
			if _, err := os.Stat(dst); !os.IsNotExist(err) {
				t.Errorf("%s made: %v", dst, err)
			}
		})
	}
}
