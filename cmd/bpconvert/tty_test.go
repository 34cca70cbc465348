package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// tmuxRun drives the built binary on a real pseudo-terminal inside a
// private tmux server: keys go in with send-keys, the screen comes back with
// capture-pane.
type tmuxRun struct {
	t      *testing.T
	sock   string
	status string
}

func startTmux(t *testing.T, args ...string) *tmuxRun {
	t.Helper()
	return startTmuxEnv(t, nil, args...)
}

// startTmuxEnv is startTmux with env (NAME=VALUE) added to the program's
// environment.
func startTmuxEnv(t *testing.T, env []string, args ...string) *tmuxRun {
	t.Helper()
	testtool.Require(t, "tmux")
	dir := t.TempDir()
	r := &tmuxRun{t: t, sock: filepath.Join(dir, "tmux.sock"), status: filepath.Join(dir, "status")}
	quoted := []string{"env"}
	for _, v := range env {
		quoted = append(quoted, "'"+v+"'")
	}
	quoted = append(quoted, binPath)
	for _, a := range args {
		quoted = append(quoted, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	// The shell traps SIGINT (a handler, which the program does not
	// inherit, unlike an ignored signal) so that Ctrl-C stops only the
	// program and its exit code is still written.
	script := fmt.Sprintf("trap true INT; %s; echo $? > %s; sleep 60", strings.Join(quoted, " "), r.status)
	cmd := exec.Command("tmux", "-S", r.sock, "new-session", "-d", "-s", "bp", "-x", "160", "-y", "60", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", r.sock, "kill-server").Run() })
	return r
}

func (r *tmuxRun) screen() string {
	out, _ := exec.Command("tmux", "-S", r.sock, "capture-pane", "-p", "-t", "bp").Output()
	return string(out)
}

// waitFor waits until the screen shows text.
func (r *tmuxRun) waitFor(text string) {
	r.t.Helper()
	if testtool.WaitFor(60*time.Second, 100*time.Millisecond, func() bool { return strings.Contains(r.screen(), text) }) {
		return
	}
	r.t.Fatalf("screen never showed %q:\n%s", text, r.screen())
}

func (r *tmuxRun) keys(keys ...string) {
	r.t.Helper()
	for _, k := range keys {
		if out, err := exec.Command("tmux", "-S", r.sock, "send-keys", "-t", "bp", k).CombinedOutput(); err != nil {
			r.t.Fatalf("send-keys %q: %v %s", k, err, out)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// exitCode waits for the program to end and returns its exit code.
func (r *tmuxRun) exitCode() int {
	r.t.Helper()
	code := -1
	if testtool.WaitFor(120*time.Second, 100*time.Millisecond, func() bool {
		b, err := os.ReadFile(r.status)
		if err != nil || len(b) == 0 || b[len(b)-1] != '\n' {
			return false
		}
		fmt.Sscan(string(b), &code)
		return true
	}) {
		return code
	}
	r.t.Fatalf("program did not finish:\n%s", r.screen())
	return -1
}

// TestTerminalPrompts drives convert-parquet's prompts on a terminal: a
// table without Hugging Face metadata makes the user choose payload columns
// in a multi-select, the plan is shown again with the command that makes
// the same choice without prompts, and a confirmation follows.
func TestTerminalPrompts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drives a terminal; skipped with -short")
	}
	root := parquetFixtureRoot(t)
	src := filepath.Join(root, "plain", "part-00000.parquet")

	t.Run("choose and confirm", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "out")
		r := startTmux(t, "convert-parquet", src, dst)
		r.waitFor("Which columns hold payloads")
		// The first option is highlighted; toggle it and accept.
		r.keys("x", "Enter")
		r.waitFor("Proceed with this plan?")
		r.keys("y")
		if code := r.exitCode(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, r.screen())
		}
		// The choice is printed as the command that makes it without
		// prompts; run, it converts the same.
		// (-J joins the lines the terminal wrapped; -S takes the history.)
		joined, _ := exec.Command("tmux", "-S", r.sock, "capture-pane", "-p", "-J", "-S", "-500", "-t", "bp").Output()
		prefix := "bpconvert convert-parquet " + src + " " + dst + " --column "
		i := strings.Index(string(joined), prefix)
		if i < 0 {
			t.Fatalf("no equivalent command %q... on the screen:\n%s", prefix, joined)
		}
		line := strings.Fields(strings.SplitN(string(joined[i:]), "\n", 2)[0])
		if j := slices.Index(line, "--yes"); j < 0 {
			t.Fatalf("the equivalent command has no --yes: %q", line)
		} else {
			line = line[:j+1]
		}
		again := filepath.Join(t.TempDir(), "again")
		line[3] = again
		if r2 := bp(t, line[1:]...); r2.code != 0 {
			t.Fatalf("%q: exit %d: %s", line, r2.code, r2.stderr)
		}
		set, err := packcore.OpenSet(filepath.Join(dst, "media"), packcore.SetOptions{})
		if err != nil {
			t.Fatalf("no packs written: %v\n%s", err, r.screen())
		}
		defer set.Close()
		if set.Len() == 0 {
			t.Fatal("empty pack")
		}
	})

	t.Run("decline", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "out")
		r := startTmux(t, "convert-parquet", src, dst, "--column", "jpg")
		r.waitFor("Proceed with this plan?")
		r.keys("n")
		code := r.exitCode()
		if code != 1 || !strings.Contains(r.screen(), "aborted; nothing was written") {
			t.Fatalf("exit %d:\n%s", code, r.screen())
		}
		if exists(dst) {
			t.Fatal("DST written after declining")
		}
	})

	t.Run("ctrl-c in the form", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "out")
		r := startTmux(t, "convert-parquet", src, dst)
		r.waitFor("Which columns hold payloads")
		r.keys("C-c")
		if code := r.exitCode(); code != 1 || exists(dst) {
			t.Fatalf("exit %d, dst exists %v:\n%s", code, exists(dst), r.screen())
		}
	})
}

// TestNoPromptWithoutTerminal checks that a run without a terminal and
// without --yes refuses at once instead of waiting for input.
func TestNoPromptWithoutTerminal(t *testing.T) {
	t.Parallel()
	root := parquetFixtureRoot(t)
	dst := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(binPath, "convert-parquet", filepath.Join(root, "plain", "part-00000.parquet"), dst, "--column", "jpg")
	cmd.Stdin = nil // /dev/null
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("bpconvert waited for input without a terminal")
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v\n%s", err, out)
	}
	for _, want := range []string{"bpconvert: error: refusing to prompt: stdin is not a terminal", "--yes", "--dry-run"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if exists(dst) {
		t.Fatal("DST written")
	}
}

// TestCtrlCKeepsShards presses Ctrl-C in a terminal while convert-wds draws
// its progress bar and has complete shards: the run exits 130, the plan and
// the message each start a line of their own (not after a bar), the
// message says how many
// shards were kept and how to go on, and the same command then resumes from
// them.
func TestCtrlCKeepsShards(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("converts 240 MB twice; skipped with -short")
	}
	root := t.TempDir()
	shards := wdsShards(t, root, 4, 60, 1<<20)
	dst := filepath.Join(root, "dst")
	args := append(append([]string{"convert-wds"}, shards...), dst, "--max-pack-bytes", "8MiB", "--yes")
	r := startTmux(t, args...)
	staging := filepath.Join(root, ".dst.bpconvert-staging")
	if !waitShards(staging, 2, dst) {
		t.Fatalf("the run ended or stalled before 2 shards were complete:\n%s", r.screen())
	}
	r.keys("C-c")
	if code := r.exitCode(); code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, r.screen())
	}
	screen := r.screen()
	if strings.Contains(screen, "]WebDataset at") || strings.Contains(screen, "]  ") {
		t.Fatalf("the plan is glued to a progress bar:\n%s", screen)
	}
	var line string
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "complete shards kept in") {
			line = l
		}
	}
	if !strings.HasPrefix(line, "bpconvert: interrupted (SIGINT); ") {
		t.Fatalf("the message does not start a line of its own:\n%s", screen)
	}
	if !strings.Contains(screen, "rerun the same command to resume") || !strings.Contains(screen, "--restart") {
		t.Fatalf("no way on is given:\n%s", screen)
	}
	if n := len(packShards(filepath.Join(staging, "media"))); n < 2 {
		t.Fatalf("%d shards kept", n)
	}
	rr := bp(t, args...)
	if rr.code != exitOK || !strings.Contains(rr.stderr, "resuming an interrupted run") {
		t.Fatalf("rerun did not resume: %+v", rr)
	}
}
