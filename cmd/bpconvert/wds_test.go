package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/plan"
)

func TestWDSCLI(t *testing.T) {
	t.Parallel()
	shared := filepath.Join(testtool.SharedDir(t), "data", "webdataset")
	root := t.TempDir()

	t.Run("dry run writes nothing", func(t *testing.T) {
		dst := filepath.Join(root, "dry")
		r := bp(t, "convert-wds", filepath.Join(shared, "sample.tgz"), dst, "--dry-run", "--json")
		if r.code != 0 {
			t.Fatalf("%+v", r)
		}
		p, err := plan.ParseJSON(strings.NewReader(r.stdout))
		if err != nil {
			t.Fatal(err)
		}
		if p.Source.Format != "WebDataset" || len(p.Entries) != 2 {
			t.Fatalf("plan %+v", p)
		}
		if exists(dst) {
			t.Fatal("dry run created DST")
		}
	})

	t.Run("all real shards", func(t *testing.T) {
		dst := filepath.Join(root, "all")
		r := bp(t, "convert-wds", shared, dst, "--shard-prefix", "--yes", "--json")
		if r.code != 0 {
			t.Fatalf("%+v", r)
		}
		doc := lastJSON(t, r)
		if doc["status"] != "ok" || doc["blobs"].(float64) < 1000 {
			t.Fatalf("summary %v", doc)
		}
		if r := bp(t, "verify", filepath.Join(dst, "media")); r.code != 0 {
			t.Fatalf("verify: %+v", r)
		}
		if !exists(filepath.Join(dst, "samples.parquet")) {
			t.Fatal("no samples.parquet")
		}
	})

	t.Run("duplicate keys across shards", func(t *testing.T) {
		dst := filepath.Join(root, "dup")
		r := bp(t, "convert-wds", shared, dst, "--yes")
		if r.code != 3 || !strings.Contains(r.stderr, "--shard-prefix") || exists(dst) {
			t.Fatalf("exit %d, dst %v:\n%s", r.code, exists(dst), r.stderr)
		}
	})

	t.Run("stdin", func(t *testing.T) {
		dst := filepath.Join(root, "stdin")
		f, err := os.Open(filepath.Join(shared, "tendata.tar"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd := exec.Command(binPath, "convert-wds", "-", dst, "--yes", "--json")
		cmd.Stdin = f
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), `"status":"ok"`) {
			t.Fatalf("%v %s", err, out)
		}
	})

	t.Run("bad pattern", func(t *testing.T) {
		if r := bp(t, "convert-wds", filepath.Join(shared, "x-{000..001.tar"), filepath.Join(root, "bad")); r.code != 2 {
			t.Fatalf("%+v", r)
		}
	})
}

// TestWDSKillAndRerun interrupts convert-wds with SIGINT before any shard is
// complete (exit 130, nothing left to keep, so nothing left), then kills it with SIGKILL mid-conversion, re-runs
// it into the same destination, and compares the result with a clean run.
func TestWDSKillAndRerun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes a 1 GiB shard; skipped with -short")
	}
	testtool.Require(t, "tar")
	root := t.TempDir()
	in := filepath.Join(root, "in")
	os.MkdirAll(in, 0o755)
	writeTree(t, in, map[string]string{"000000.cls": "1", "000001.cls": "2"})
	sparseFile(t, filepath.Join(in, "000000.bin"), 1<<30, []int64{0, 1 << 29})
	shard := filepath.Join(root, "shard-000000.tar")
	// GNU tar writes the shard (the hole becomes real zero blocks).
	if out, err := exec.Command("tar", "-C", in, "--sort=name", "--format=gnu", "-cf", shard, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	dst := filepath.Join(root, "dst")
	staging := filepath.Join(root, ".dst.bpconvert-staging")

	// SIGINT first, while the first shard is written: exit 130, and neither
	// DST nor staging is left.
	intr := exec.Command(binPath, "convert-wds", shard, dst, "--max-pack-bytes", "128MiB", "--yes")
	if err := intr.Start(); err != nil {
		t.Fatal(err)
	}
	if !testtool.WaitFor(60*time.Second, 10*time.Millisecond, func() bool { return hasTempShard(filepath.Join(staging, "media")) }) {
		intr.Process.Kill()
		t.Fatal("conversion never started a shard")
	}
	intr.Process.Signal(syscall.SIGINT)
	if err := intr.Wait(); err == nil || intr.ProcessState.ExitCode() != 130 {
		t.Fatalf("SIGINT: %v (exit %d)", err, intr.ProcessState.ExitCode())
	}
	if exists(dst) || exists(staging) {
		t.Fatalf("after SIGINT: dst %v, staging %v", exists(dst), exists(staging))
	}

	cmd := exec.Command(binPath, "convert-wds", shard, dst, "--max-pack-bytes", "128MiB", "--yes")
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testtool.WaitFor(60*time.Second, 10*time.Millisecond, func() bool { return hasTempShard(filepath.Join(staging, "media")) }) {
		cmd.Process.Kill()
		t.Fatalf("conversion never started a shard:\n%s", se.String())
	}
	cmd.Process.Kill()
	cmd.Wait()
	if exists(dst) {
		t.Fatal("DST exists after SIGKILL")
	}
	if r := bp(t, "convert-wds", shard, dst, "--max-pack-bytes", "128MiB", "--yes"); r.code != 0 {
		t.Fatalf("re-run: %+v", r)
	}
	clean := filepath.Join(root, "clean")
	if r := bp(t, "convert-wds", shard, clean, "--max-pack-bytes", "128MiB", "--yes"); r.code != 0 {
		t.Fatalf("clean run: %+v", r)
	}
	for _, f := range []string{"media/pack.manifest.json", "samples.parquet"} {
		a, err1 := os.ReadFile(filepath.Join(dst, f))
		b, err2 := os.ReadFile(filepath.Join(clean, f))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s differs between the re-run and a clean run (%v, %v)", f, err1, err2)
		}
	}
	if exists(staging) {
		t.Fatal("staging left after the re-run")
	}
}
