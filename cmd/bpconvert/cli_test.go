package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/testtool"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the command reference of docs/commands.md (make docs-gen)")

// TestCommandHelp checks every command's help, asked both ways: GNU
// double-dash flags, placeholders in capitals (never Go's value or
// string), one to three examples, and the same text for `help CMD` and
// `CMD --help`.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	goPlaceholder := regexp.MustCompile(`(?m)^  (-h, )?--[a-z-]+ (value|string|int|uint|uint64|int64|float|float64|strings|[a-z][a-z.]*)$`)
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := bp(t, "help", c.name)
			if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: bpconvert "+c.name) {
				t.Fatalf("help %s: exit %d\n%s%s", c.name, r.code, r.stdout, r.stderr)
			}
			if r2 := bp(t, c.name, "--help"); r2.stdout != r.stdout || r2.code != 0 {
				t.Errorf("%s --help differs from help %s:\n%s", c.name, c.name, r2.stdout)
			}
			if r2 := bp(t, c.name, "-help"); r2.stdout != r.stdout {
				t.Errorf("%s -help differs from help %s", c.name, c.name)
			}
			flags := regexp.MustCompile(`(?m)^  (-h, )?-{1,2}[a-z]`).FindAllString(r.stdout, -1)
			if len(flags) < 4 {
				t.Errorf("help lists %d flags:\n%s", len(flags), r.stdout)
			}
			for _, f := range flags {
				if !strings.Contains(f, "--") {
					t.Errorf("flag listed with one dash: %q", f)
				}
			}
			if m := goPlaceholder.FindString(r.stdout); m != "" {
				t.Errorf("lowercase placeholder: %q", m)
			}
			ex := strings.Count(r.stdout[strings.Index(r.stdout, "\n"):], "\n  bpconvert ")
			if !strings.Contains(r.stdout, "\nExamples:\n") || ex < 1 || ex > 3 {
				t.Errorf("%d examples:\n%s", ex, r.stdout)
			}
		})
	}
	r := bp(t, "help", "convert-wds")
	for _, want := range []string{"  --json\n", "  --max-pack-bytes SIZE\n", "  --part I/N\n", "  --staging DIR\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help convert-wds lacks %q", want)
		}
	}
}

// TestRootHelp: the program's help lists every command and the
// environment it reads, including every AWS_ and BPCONVERT_ variable that
// the program's source names.
func TestRootHelp(t *testing.T) {
	t.Parallel()
	r := bp(t, "help")
	if r.code != 0 {
		t.Fatalf("help: exit %d", r.code)
	}
	for _, c := range commands() {
		if !strings.Contains(r.stdout, "\n  "+c.name+" ") {
			t.Errorf("help lacks command %s", c.name)
		}
	}
	env := r.stdout[strings.Index(r.stdout, "Environment:"):]
	names := map[string]bool{"NO_COLOR": true, "TERM": true}
	for _, v := range convert.IndexVariables() {
		names[v] = true
	}
	root := testtool.RepoRoot(t)
	lit := regexp.MustCompile(`"((?:AWS|BPCONVERT)_[A-Z0-9_]*[A-Z0-9])"`)
	for _, dir := range []string{"cmd", "convert", "objstore", "plan", "stage"} {
		filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.HasSuffix(d.Name(), "test") {
				return filepath.SkipDir // test support (s3test, converttest): not the program's
			}
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
				names[m[1]] = true
			}
			return nil
		})
	}
	if len(names) < 8 {
		t.Fatalf("found %d variable names in the source", len(names))
	}
	for n := range names {
		if !strings.Contains(env, n) {
			t.Errorf("help's Environment section lacks %s", n)
		}
	}
}

// TestFlagSuggestions: a mistyped flag is a usage error (exit 2) that
// names the flag meant, a single-dash spelling works as the double-dash
// one, and the JSON summary of a flag error says which command failed.
func TestFlagSuggestions(t *testing.T) {
	t.Parallel()
	dst := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"convert-lance", "--colum", "x", "a.lance", dst}, "did you mean --column?"},
		{[]string{"convert-lance", "-colum", "x", "a.lance", dst}, "did you mean --column?"},
		{[]string{"convert-parquet", "--dryrun", "a", dst}, "did you mean --dry-run?"},
		{[]string{"verify", "--agianst", "src", "ds"}, "did you mean --against?"},
		{[]string{"convert-wds", "--colum", "x", "a", dst}, "--column is a flag of convert-parquet and convert-lance, not of convert-wds"},
		{[]string{"ls", "--frobnicate", "ds"}, "run bpconvert ls --help for its flags"},
		{[]string{"--colum", "x"}, "did you mean --column? a flag of convert-parquet, convert-lance"},
		{[]string{"-json", "ls"}, "--json is a flag of every command"},
	} {
		r := bp(t, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "bpconvert: hint: "+tc.hint) {
			t.Errorf("%v: exit %d, want 2 and hint %q:\n%s", tc.args, r.code, tc.hint, r.stderr)
		}
	}
	r := bp(t, "ls", "--json", "--colum", "x", "ds")
	m := lastJSON(t, r)
	if r.code != exitUsage || m["command"] != "ls" || m["exit_code"] != float64(exitUsage) || !strings.Contains(m["hint"].(string), "ls --help") {
		t.Errorf("--json with an unknown flag: exit %d, %v", r.code, m)
	}
	// Go's flag package took -json and -max-pack-bytes=...; they keep
	// working, and a negative number stays a value.
	r = bp(t, "verify", "-json", filepath.Join(t.TempDir(), "missing"))
	if m := lastJSON(t, r); m["command"] != "verify" {
		t.Errorf("-json: %v", m)
	}
	r = bp(t, "convert-wds", "-max-pack-bytes=1.5XB", "-dry-run", "a.tar", dst)
	if r.code != exitUsage || !strings.Contains(r.stderr, "invalid size") {
		t.Errorf("-max-pack-bytes=1.5XB: exit %d %s", r.code, r.stderr)
	}
	r = bp(t, "cat", "k", t.TempDir(), "-length", "-1", "-offset", "-5")
	if strings.Contains(r.stderr, "unknown") {
		t.Errorf("negative values taken for flags: %s", r.stderr)
	}
}

// TestDatasetVersionFlag: --dataset-version N selects a Lance version;
// the old spelling --version N still does, with a one-line warning, and
// --version followed by something other than a number says what it is.
func TestDatasetVersionFlag(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "python3")
	ds := filepath.Join(lanceFixtures(t), "types_2_0.lance")
	r := bp(t, "lance-inspect", "--dataset-version", "3", ds)
	if r.code != 0 || !strings.Contains(r.stdout, "version   3 (latest 7") || r.stderr != "" {
		t.Fatalf("--dataset-version 3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	old := bp(t, "lance-inspect", "-version", "3", ds)
	if old.code != 0 || old.stdout != r.stdout || old.stderr != "bpconvert: warning: --version N is deprecated; use --dataset-version N\n" {
		t.Errorf("--version 3: exit %d\nstdout differs: %v\nstderr: %q", old.code, old.stdout != r.stdout, old.stderr)
	}
	r = bp(t, "convert-lance", "--version", ds, filepath.Join(t.TempDir(), "out"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "--dataset-version N") || !strings.Contains(r.stderr, "bpconvert --version prints the program's version") {
		t.Errorf("--version DIR: exit %d %s", r.code, r.stderr)
	}
}

// TestCompletion: the completion scripts of the four shells, and the
// answers the scripts ask the program for (commands, flags).
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		r := bp(t, "completion", sh)
		if r.code != 0 || len(r.stdout) < 1000 || !strings.Contains(r.stdout, "bpconvert") {
			t.Errorf("completion %s: exit %d, %d bytes %s", sh, r.code, len(r.stdout), r.stderr)
		}
	}
	if r := bp(t, "completion", "tcsh"); r.code != exitUsage {
		t.Errorf("completion tcsh: exit %d", r.code)
	}
	r := bp(t, "__complete", "convert-")
	for _, c := range []string{"convert-wds", "convert-parquet", "convert-lerobot", "convert-lance"} {
		if !strings.Contains(r.stdout, c+"\t") {
			t.Errorf("completing convert-: no %s in\n%s", c, r.stdout)
		}
	}
	r = bp(t, "__complete", "convert-lance", "--col")
	if !strings.Contains(r.stdout, "--column\t") {
		t.Errorf("completing --col: %s", r.stdout)
	}
	r = bp(t, "__complete", "convert-lance", "--external", "")
	if !strings.HasPrefix(r.stdout, "copy\nkeep\n") {
		t.Errorf("completing --external: %q", r.stdout)
	}
	if _, err := exec.LookPath("bash"); err == nil {
		script := bp(t, "completion", "bash").stdout
		f := filepath.Join(t.TempDir(), "c.bash")
		if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v %s", err, out)
		}
	}
}

// TestManPages: `bpconvert man DIR` writes bpconvert.1 and one page per
// command, which groff formats without warnings, with the command's flags
// and the environment in them.
func TestManPages(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "groff")
	dir := t.TempDir()
	if r := bp(t, "man", dir); r.code != 0 {
		t.Fatalf("man: exit %d %s", r.code, r.stderr)
	}
	pages := []string{"bpconvert.1"}
	for _, c := range commands() {
		pages = append(pages, "bpconvert-"+c.name+".1")
	}
	for _, p := range pages {
		cmd := exec.Command("groff", "-man", "-Tutf8", "-ww", filepath.Join(dir, p))
		cmd.Env = append(os.Environ(), "GROFF_NO_SGR=1")
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok || err != nil {
			t.Fatalf("groff %s: %v %v", p, err, ee)
		}
		text := regexp.MustCompile(".\b").ReplaceAllString(string(out), "")
		for _, want := range []string{"NAME", "ENVIRONMENT", "AWS_ACCESS_KEY_ID", "EXIT STATUS"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", p, want, text)
			}
		}
	}
	text, err := exec.Command("groff", "-man", "-Tascii", "-P-cbou", filepath.Join(dir, "bpconvert-convert-wds.1")).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--max-pack-bytes SIZE", "--part I/N", "bpconvert convert-wds --dry-run shards/ ds/"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("convert-wds page lacks %q:\n%s", want, text)
		}
	}
	if r := bp(t, "man", filepath.Join(dir, "missing")); r.code != exitUsage {
		t.Errorf("man into a missing directory: exit %d", r.code)
	}
}

// TestCommandsDoc: the command reference of docs/commands.md is the one
// the command definitions render (make docs-gen rewrites it with
// -update-docs).
func TestCommandsDoc(t *testing.T) {
	path := filepath.Join(testtool.RepoRoot(t), "docs", "commands.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := withReference(string(b), referenceMarkdown())
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(b) != want {
		got := string(b)
		if i := strings.Index(got, referenceBegin); i >= 0 {
			got = got[i:]
		}
		t.Fatalf("docs/commands.md's command reference differs from the command definitions; run make docs-gen\n%s", lineDiff(got, referenceMarkdown()))
	}
}

// lineDiff names the first line where a and b differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  doc:         %s\n  definitions: %s", i+1, x, y)
		}
	}
	return ""
}

// TestNormalizeArgs: single-dash long flags get their second dash; values,
// operands and everything after -- are left alone.
func TestNormalizeArgs(t *testing.T) {
	t.Parallel()
	c := lookup("convert-wds")
	e := &env{getenv: func(string) string { return "" }}
	var out outcome
	root := e.tree(t.Context(), &out)
	sub, _, err := root.Find([]string{c.name})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"-json -yes a b", "--json --yes a b"},
		{"-inline -x a -", "--inline -x a -"},
		{"-max-pack-bytes=4G a -- -json", "--max-pack-bytes=4G a -- -json"},
		{"-h --dry-run", "-h --dry-run"},
	} {
		got, err := normalizeArgs(sub.Flags(), strings.Fields(tc.in), func(string) {})
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("normalizeArgs(%q) = %q, %v; want %q", tc.in, strings.Join(got, " "), err, tc.want)
		}
	}
}
