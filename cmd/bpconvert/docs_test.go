package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// docMarker is an HTML comment (invisible when the page is rendered) on
// the line right before a code block, telling TestDocsRun what to do with
// it: `<!-- doc-test: skip: REASON -->` leaves the block out (REASON is
// required and says why it cannot run in a test), and
// `<!-- doc-test: exit N -->` runs it and expects it to end with status N.
var docMarker = regexp.MustCompile(`^<!-- doc-test: (skip: (.+?)|exit ([0-9]+)) -->$`)

// docBuckets are the buckets of the S3 server the doc blocks run against.
// src holds the sample inputs: s3://src/wds (the WebDataset tars),
// s3://src/hf, s3://src/lerobot and s3://src/data.lance.
var docBuckets = []string{"src", "out", "bucket"}

// docHome is what a page's text blocks call the directory its examples run
// in; the test puts it in place of the real one in what a block printed.
const docHome = "/home/user/try"

// TestDocsRun runs every shell and Python block of docs/*.md and CONTRIBUTING.md (but
// reading.md, which TestReadmeRuns runs in the README's working directory)
// as a user would: each page in a directory of its own holding the
// README's sample inputs (scripts/readme-data.sh: shards/, hf/, data.lance,
// lerobot-ds/), its blocks in order, with bin/ and the test environment's
// Python on PATH and the AWS variables of a versitygw on loopback whose
// bucket "src" holds the same samples. A block must succeed (or end with
// the status its marker names); a block followed by a text block must
// print that text (stdout and stderr as they came, the directory it ran in
// written as docHome). In a block written as a transcript (lines starting
// with "$ "), only those lines run. Blocks that cannot run here carry a
// skip marker with the reason.
func TestDocsRun(t *testing.T) {
	testtool.Require(t, "ffmpeg", "ffprobe", "node", "bash")
	py := testtool.Python(t)
	repo := testtool.RepoRoot(t)
	root := t.TempDir()
	samples := filepath.Join(root, "samples")
	gen := exec.Command("bash", filepath.Join(repo, "scripts", "readme-data.sh"), samples)
	gen.Env = append(os.Environ(), "BPCONVERT_PYTHON="+py)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("readme-data.sh: %v\n%s", err, out)
	}
	srv := s3test.Start(t, docBuckets...)
	for dir, prefix := range map[string]string{"shards": "wds", "hf": "hf", "lerobot-ds": "lerobot", "data.lance": "data.lance"} {
		upload(t, srv, filepath.Join(samples, dir), "src", prefix)
	}
	env := append(os.Environ(), srv.Env()...)
	env = append(env, "BPCONVERT_PYTHON="+py, "AWS_PROFILE=", "AWS_SESSION_TOKEN=", "AWS_ENDPOINT_URL=",
		"PATH="+filepath.Dir(binPath)+":"+filepath.Dir(py)+":"+os.Getenv("PATH"))
	pages, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(pages)
	pages = append(pages, filepath.Join(repo, "CONTRIBUTING.md"))
	for _, page := range pages {
		name := strings.TrimSuffix(filepath.Base(page), ".md")
		if name == "reading" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			testtool.CopyTree(t, samples, dir)
			runDocPage(t, page, dir, py, env)
		})
	}
}

// docBlock is a block of a page with what its marker asks.
type docBlock struct {
	testtool.DocBlock
	skip string // why it is not run; "" to run it
	exit int    // the status it must end with
}

// docPageBlocks returns the code blocks of page with their markers. A
// marker that is malformed, or names no reason to skip, fails t.
func docPageBlocks(t *testing.T, page string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []docBlock
	for _, blk := range testtool.DocBlocks(t, page, "") {
		d := docBlock{DocBlock: blk}
		if blk.Line >= 2 {
			prev := strings.TrimSpace(lines[blk.Line-2])
			if strings.HasPrefix(prev, "<!-- doc-test") {
				m := docMarker.FindStringSubmatch(prev)
				if m == nil || (m[2] == "" && m[3] == "") {
					t.Fatalf("%s:%d: malformed marker %q", page, blk.Line-1, prev)
				}
				d.skip = strings.TrimSpace(m[2])
				if m[3] != "" {
					d.exit, _ = strconv.Atoi(m[3])
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// transcript returns the commands of a block written as a transcript
// (the lines that start with "$ ", without it), or the block as it is.
func transcript(text string) (string, bool) {
	var cmds []string
	for _, l := range strings.Split(text, "\n") {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) == 0 {
		return text, false
	}
	return strings.Join(cmds, "\n") + "\n", true
}

// runDocPage runs the sh and python blocks of page in dir, in order.
func runDocPage(t *testing.T, page, dir, py string, env []string) {
	blocks := docPageBlocks(t, page)
	for i, b := range blocks {
		if b.Lang != "sh" && b.Lang != "python" {
			continue
		}
		where := fmt.Sprintf("%s:%d", filepath.Base(page), b.Line)
		if b.skip != "" {
			t.Logf("%s: not run: %s", where, b.skip)
			continue
		}
		text, isTranscript := b.Text, false
		if b.Lang == "sh" {
			text, isTranscript = transcript(b.Text)
		}
		out, code := runDocBlock(t, b.Lang, text, dir, py, env)
		if code != b.exit {
			t.Errorf("%s: exit %d, want %d\n%s", where, code, b.exit, out)
			continue
		}
		if !isTranscript && i+1 < len(blocks) && blocks[i+1].Lang == "text" {
			got := strings.TrimSpace(strings.ReplaceAll(out, dir, docHome))
			if want := strings.TrimSpace(blocks[i+1].Text); got != want {
				t.Errorf("%s prints\n%s\nthe page says (line %d)\n%s", where, got, blocks[i+1].Line, want)
			}
		}
	}
}

// runDocBlock runs one block (bash -e, or the test Python) in dir, bounded
// in time so a hang fails the test instead of stopping it, and returns
// its output (stdout and stderr as they came) and exit status.
func runDocBlock(t *testing.T, lang, text, dir, py string, env []string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if lang == "sh" {
		cmd = exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", text)
	} else {
		cmd = exec.CommandContext(ctx, py, "-c", text)
	}
	cmd.Dir, cmd.Env = dir, env
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s: %v", dir, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), code
}

// devNotes are what user docs leave to CONTRIBUTING.md and
// docs/performance.md: test names and files, and dated figures.
var devNotes = regexp.MustCompile(`\bTest[A-Z][A-Za-z0-9_]*|\b[a-z0-9_]+_test\.go\b|\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b`)

// TestUserDocsForUsers checks that the pages written for users (README.md
// and docs/*.md but performance.md) name no test, no test file and no
// date: those belong in CONTRIBUTING.md and docs/performance.md.
func TestUserDocsForUsers(t *testing.T) {
	repo := testtool.RepoRoot(t)
	pages, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(repo, "README.md"))
	for _, page := range pages {
		if filepath.Base(page) == "performance.md" {
			continue
		}
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := devNotes.FindString(line); m != "" {
				t.Errorf("%s:%d: %q belongs in CONTRIBUTING.md or docs/performance.md, not in a page for users", filepath.Base(page), i+1, m)
			}
		}
	}
}
