package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// demoSample writes the demo's WebDataset sample (scripts/demo-sample.py,
// Python's tarfile) under dir and returns its directory.
func demoSample(t *testing.T, dir string) string {
	t.Helper()
	testtool.Require(t, "python3")
	shards := filepath.Join(dir, "shards")
	script := filepath.Join(testtool.RepoRoot(t), "scripts", "demo-sample.py")
	if out, err := exec.Command("python3", script, shards).CombinedOutput(); err != nil {
		t.Fatalf("demo-sample.py: %v\n%s", err, out)
	}
	return shards
}

// The paragraphs that repeat on every run of convert-wds: shown only with
// --explain, once each.
var wdsExplanations = []string{"Keys are the member names", "Samples: members are grouped", "Readers: WebDataset's loader", "Shards hold at most"}

// TestDemoPlanFitsScreen: the demo sample's text plan is at most 20 lines
// of at most 160 columns, one line per field; --explain brings back each
// explanation once; the JSON plan carries them all, with the run's notes.
func TestDemoPlanFitsScreen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shards := demoSample(t, dir)
	dst := filepath.Join(dir, "ds")

	r := bp(t, "convert-wds", shards, dst, "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) > 20 {
		t.Errorf("the plan has %d lines, want at most 20:\n%s", len(lines), r.stdout)
	}
	for _, l := range lines {
		// Paths are the test's temporary directory, of any length.
		if n := len([]rune(strings.ReplaceAll(l, dir, "DIR"))); n > 160 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
	for _, field := range []string{"cls", "json", "png"} {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "  "+field+" ") && strings.Contains(l, "extract") && strings.HasSuffix(l, "lossless") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("field %s: %d table lines with its action and fidelity, want 1:\n%s", field, n, r.stdout)
		}
	}
	for _, x := range wdsExplanations {
		if strings.Contains(r.stdout, x) {
			t.Errorf("the plan explains %q without --explain:\n%s", x, r.stdout)
		}
	}

	r = bp(t, "convert-wds", shards, dst, "--dry-run", "--explain")
	if r.code != 0 {
		t.Fatalf("--explain: exit %d: %s", r.code, r.stderr)
	}
	for _, x := range wdsExplanations {
		if n := strings.Count(r.stdout, x); n != 1 {
			t.Errorf("--explain: %q appears %d times, want once:\n%s", x, n, r.stdout)
		}
	}

	r = bp(t, "convert-wds", shards, dst, "--dry-run", "--json")
	if r.code != 0 {
		t.Fatalf("--json: exit %d: %s", r.code, r.stderr)
	}
	p, err := plan.ParseJSON(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, x := range p.Explanations {
		all.WriteString(x.Text + "\n")
	}
	for _, x := range wdsExplanations {
		if !strings.Contains(all.String(), x) {
			t.Errorf("JSON explanations lack %q: %+v", x, p.Explanations)
		}
	}
	if !strings.Contains(strings.Join(p.Notes, " "), "Key check") {
		t.Errorf("JSON notes lack the key check: %q", p.Notes)
	}
}

// TestDryRunOccupiedDest: --dry-run into a destination that holds output
// says on the plan's last line what a real run would do: nothing, for this
// conversion's finished output (exit 0); refuse, for a different run's
// (exit 2, as the real run); resume, from an interrupted run's shards.
func TestDryRunOccupiedDest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shards := demoSample(t, dir)
	dst := filepath.Join(dir, "ds")
	if r := bp(t, "convert-wds", shards, dst, "--yes", "--quiet"); r.code != 0 {
		t.Fatalf("conversion: exit %d: %s", r.code, r.stderr)
	}
	last := func(s string) string {
		l := strings.Split(strings.TrimRight(s, "\n"), "\n")
		return l[len(l)-1]
	}
	r := bp(t, "convert-wds", shards, dst, "--dry-run")
	if r.code != 0 || !strings.Contains(last(r.stdout), "A real run would do nothing") || !strings.Contains(last(r.stdout), "already done") {
		t.Errorf("same run: exit %d, last line %q, want exit 0 and already done", r.code, last(r.stdout))
	}
	r = bp(t, "convert-wds", shards, dst, "--dry-run", "--inline", "cls")
	if r.code != 2 || !strings.Contains(last(r.stdout), "A real run would refuse (exit 2)") || !strings.Contains(last(r.stdout), `--inline "cls"`) {
		t.Errorf("different run: exit %d, last line %q, want exit 2 and a refusal naming --inline", r.code, last(r.stdout))
	}
	// An interrupted run: its staging directory holds complete shards.
	other := filepath.Join(dir, "other")
	if err := os.Rename(dst, stage.Path(other)); err != nil {
		t.Fatal(err)
	}
	r = bp(t, "convert-wds", shards, other, "--dry-run")
	if r.code != 0 || !strings.Contains(last(r.stdout), "A real run would resume: 1 complete shard staged") {
		t.Errorf("interrupted run: exit %d, last line %q, want a resume", r.code, last(r.stdout))
	}
}

// TestYesRemoteNotSampled: under --yes an s3:// source is planned from
// its listing alone; the plan says its members were not sampled rather than
// count 0 of them or find nothing to convert, and the run converts them all.
func TestYesRemoteNotSampled(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src-bucket")
	dir := t.TempDir()
	upload(t, srv, demoSample(t, dir), "src-bucket", "wds")
	r := bpS3(t, srv.Env(), "convert-wds", "--yes", "s3://src-bucket/wds", filepath.Join(dir, "out"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, plan.NotSampledText) || strings.Contains(r.stdout, "0 members") || strings.Contains(r.stdout, "nothing to convert") {
		t.Errorf("the --yes plan counts what it did not read:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "300") {
		t.Errorf("the summary does not count the 300 members converted:\n%s", r.stderr)
	}
}
