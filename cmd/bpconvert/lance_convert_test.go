package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// TestConvertLanceCLI runs convert-lance on datasets written by the real
// Lance library (see lanceFixtures): the plan, a conversion that
// lance-inspect then describes, and the refusals with their exit codes.
func TestConvertLanceCLI(t *testing.T) {
	t.Parallel()
	root := lanceFixtures(t)
	blob := filepath.Join(root, "blob1_2_1.lance")
	types := filepath.Join(root, "types_2_1.lance")

	t.Run("dry run writes nothing", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "out")
		r := bp(t, "convert-lance", blob, dst, "--dry-run", "--json")
		if r.code != exitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		p, err := plan.ParseJSON(strings.NewReader(r.stdout))
		if err != nil {
			t.Fatal(err)
		}
		if p.Source.Format != "Lance" || len(p.Entries) < 2 || p.Entries[0].Action != plan.ActionExtract {
			t.Fatalf("plan %+v", p)
		}
		if exists(dst) || exists(stage.Path(dst)) {
			t.Fatal("--dry-run wrote something")
		}
	})

	t.Run("yes converts the blob column", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "out")
		r := bp(t, "convert-lance", blob, dst, "--yes", "--json")
		if r.code != exitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if doc := lastJSON(t, r); doc["status"] != "ok" || doc["blobs"].(float64) < 1 {
			t.Fatalf("summary %v", doc)
		}
		// The plan (on stderr, under --json) read no value: it says so
		// instead of counting 0 of them.
		if !strings.Contains(r.stderr, plan.NotSampledText) || strings.Contains(r.stderr, " 0 values") || strings.Contains(r.stderr, "0 members") {
			t.Fatalf("the --yes plan counts values it did not read:\n%s", r.stderr)
		}
		r = bp(t, "lance-inspect", filepath.Join(dst, "table.lance"), "--rows", "2")
		if r.code != exitOK || !strings.Contains(r.stdout, "zip://") || !strings.Contains(r.stdout, "utf8") {
			t.Fatalf("lance-inspect of the output: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := bp(t, "verify", filepath.Join(dst, "media")); r.code != exitOK {
			t.Fatalf("verify: %s", r.stderr)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		truncated := filepath.Join(t.TempDir(), "trunc.lance")
		if out, err := exec.Command("cp", "-r", blob, truncated).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		files, _ := filepath.Glob(filepath.Join(truncated, "data", "*.lance"))
		if len(files) == 0 {
			t.Fatal("no data file")
		}
		st, _ := os.Stat(files[0])
		if err := os.Truncate(files[0], st.Size()/2); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			args []string
			code int
			want string
		}{
			{"no blob column and none named", []string{types, "--yes"}, exitUsage, "candidates: bin (binary)"},
			{"unknown column", []string{types, "--yes", "--column", "nope"}, exitUsage, `"nope" is not a column`},
			{"not a payload column", []string{types, "--yes", "--column", "i8"}, exitUsage, "not a binary"},
			{"missing version", []string{blob, "--yes", "--dataset-version", "99"}, exitInvalid, "version"},
			{"bad external mode", []string{blob, "--yes", "--external", "zap"}, exitUsage, "want copy or keep"},
			{"truncated data file", []string{truncated, "--yes"}, exitInvalid, "trunc.lance"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				dst := filepath.Join(t.TempDir(), "out")
				args := append([]string{"convert-lance", tc.args[0], dst}, tc.args[1:]...)
				r := bp(t, args...)
				if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
					t.Fatalf("exit %d, want %d; stderr lacks %q:\n%s", r.code, tc.code, tc.want, r.stderr)
				}
				if exists(dst) || exists(stage.Path(dst)) {
					t.Fatal("a refused run left output")
				}
			})
		}
	})
}
