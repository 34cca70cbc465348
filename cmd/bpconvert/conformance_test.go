package main

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/convert/formats"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/plan"
)

// conformanceSource is a converter's own small source for the conformance
// suite: the operands before DST, the flags its command needs, and the
// source verify --against compares the output with.
type conformanceSource struct {
	srcs    []string
	flags   []string
	against string
	// grouped is set for a converter that places members in groups
	// (LeRobot: an episode's cameras share a shard), whose shards are
	// completed together at the end of the run: it is killed while a shard
	// is being written, with none complete to reuse.
	grouped bool
}

// conformanceSources gives, per converter command, its source for the
// conformance suite, written under root by an independent tool (tar; the
// fixture generators of fixtures/, which use DuckDB, ffmpeg and the Lance
// library).
var conformanceSources = map[string]func(t *testing.T, root string) conformanceSource{
	"convert-wds": func(t *testing.T, root string) conformanceSource {
		shards := wdsShards(t, root, 4, 20, 10000)
		return conformanceSource{srcs: shards, flags: []string{"--max-pack-bytes", "64KiB"}, against: strings.Join(shards, "::")}
	},
	"convert-parquet": func(t *testing.T, root string) conformanceSource {
		src := filepath.Join(parquetFixtureRoot(t), "hf")
		return conformanceSource{srcs: []string{src}, flags: []string{"--max-pack-bytes", "32KiB"}, against: src}
	},
	"convert-lerobot": func(t *testing.T, root string) conformanceSource {
		src := filepath.Join(lerobotFixtureRoot(t), "v2.0")
		return conformanceSource{srcs: []string{src}, flags: []string{"--max-pack-bytes", "64KiB"}, against: src, grouped: true}
	},
	"convert-lance": func(t *testing.T, root string) conformanceSource {
		src := filepath.Join(lanceFixtures(t), "blob1_2_1.lance")
		return conformanceSource{srcs: []string{src}, flags: []string{"--max-pack-bytes", "16KiB"}, against: src}
	},
}

// TestConformance runs the checks every converter of formats.All must
// pass, each with a source of its own: a dry run prints a plan and writes
// nothing; a run writes output that verify --against finds equal to the
// source; a retry of the finished run is already done (exit 0, nothing
// written) with the same totals. Then, side by side: a run killed
// (SIGKILL) once its first shard, half of them or all but one are complete
// resumes from them (a converter whose shards complete together: once a
// shard is being written), or with --restart starts over, and either way
// ends with the bytes of the uninterrupted run; the run split into 2 and 3
// parts (--part I/N, the parts run at once) and joined by finalize holds
// the same members, table values and references as the one run (its packs
// are cut differently, so they are compared by member, not byte for byte),
// and a second finalize is already done; the run into a bucket (versitygw
// on loopback) writes the objects the local run wrote, byte for byte, a
// retry is already done and verify --against passes on the bucket. Last,
// once one payload byte of a pack is flipped, verify --against fails. A
// converter without a source here fails the suite.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, f := range formats.All {
		t.Run(f.Command, func(t *testing.T) {
			t.Parallel()
			source, ok := conformanceSources[f.Command]
			if !ok {
				t.Fatal("no source for the conformance suite: every converter runs it with a source of its own")
			}
			root := t.TempDir()
			c := conformanceCase{f: f, s: source(t, root), root: root, dst: filepath.Join(root, "out")}
			c.dryRun(t)
			first := conformanceRun(t, c.args("--yes", "--json"), plan.StatusOK)
			if first.Blobs == 0 || first.Shards == 0 || first.Format != f.Name {
				t.Fatalf("run: %+v", first)
			}
			before := treeBytes(t, c.dst)
			again := conformanceRun(t, c.args("--yes", "--json"), plan.StatusAlreadyDone)
			if again.Blobs != first.Blobs || again.Bytes != first.Bytes || again.Shards != first.Shards {
				t.Errorf("retry: %d blobs, %d bytes, %d shards; the run wrote %d, %d, %d",
					again.Blobs, again.Bytes, again.Shards, first.Blobs, first.Bytes, first.Shards)
			}
			if after := treeBytes(t, c.dst); len(after) != len(before) {
				t.Errorf("the retry changed the output: %d files, were %d", len(after), len(before))
			}

			t.Run("against the run", func(t *testing.T) {
				t.Run("killed", func(t *testing.T) { t.Parallel(); c.killed(t, int(first.Shards)) })
				t.Run("parts", func(t *testing.T) { t.Parallel(); c.parts(t) })
				t.Run("bucket", func(t *testing.T) { t.Parallel(); c.bucket(t) })
			})

			if r := bp(t, "verify", c.dst, "--against", c.s.against); r.code != exitOK || !strings.Contains(r.stdout+r.stderr, "0 mismatches") {
				t.Fatalf("verify --against: %+v", r)
			}
			flipPayloadByte(t, filepath.Join(c.dst, "media", "pack-0000.zip"))
			if r := bp(t, "verify", c.dst, "--against", c.s.against); r.code == exitOK {
				t.Fatalf("verify --against passed with a payload byte flipped: %+v", r)
			}
		})
	}
}

// conformanceCase is one converter's run of the suite: its source, and
// the output dst of its one run under root.
type conformanceCase struct {
	f         formats.Format
	s         conformanceSource
	root, dst string
}

// into returns the converter's command line writing into dst.
func (c *conformanceCase) into(dst string, more ...string) []string {
	a := append(append([]string{c.f.Command}, c.s.srcs...), dst)
	return append(append(a, c.s.flags...), more...)
}

// args returns the converter's command line writing into c.dst.
func (c *conformanceCase) args(more ...string) []string { return c.into(c.dst, more...) }

// dryRun: a dry run prints the converter's plan and writes nothing.
func (c *conformanceCase) dryRun(t *testing.T) {
	t.Helper()
	r := bp(t, c.args("--dry-run", "--json")...)
	if r.code != exitOK {
		t.Fatalf("dry run: %+v", r)
	}
	if p, err := plan.ParseJSON(strings.NewReader(r.stdout)); err != nil || p.Source.Format != c.f.Name {
		t.Fatalf("dry run plan: format %q, %v; want %q", p.Source.Format, err, c.f.Name)
	}
	if left, _ := filepath.Glob(filepath.Join(c.root, ".out*")); exists(c.dst) || len(left) > 0 {
		t.Fatalf("the dry run wrote: %s exists %v, %v", c.dst, exists(c.dst), left)
	}
}

// killed kills runs at several points and reruns them (see TestConformance);
// shards is how many the one run wrote.
func (c *conformanceCase) killed(t *testing.T, shards int) {
	type kill struct {
		at      int  // complete shards staged when it is killed
		restart bool // the rerun has --restart, and starts over
	}
	kills := []kill{{1, false}, {shards / 2, false}, {shards - 1, false}, {shards / 2, true}}
	if c.s.grouped {
		kills = []kill{{0, false}, {0, true}}
	}
	for i, k := range kills {
		killed := filepath.Join(c.root, fmt.Sprint("killed-", i))
		killAt(t, c.into(killed, "--yes", "--json"), killed, k.at)
		more := []string{"--yes", "--json"}
		if k.restart {
			more = append(more, "--restart")
		}
		r := bp(t, c.into(killed, more...)...)
		if resumed := strings.Contains(r.stderr, "resuming an interrupted run"); r.code != exitOK || resumed == k.restart && (k.at > 0 || k.restart) {
			t.Fatalf("rerun after a kill at %d complete shards (restart %v): resumed %v: %+v", k.at, k.restart, resumed, r)
		}
		sameTree(t, killed, c.dst)
		if left, _ := filepath.Glob(filepath.Join(c.root, ".killed-*")); len(left) > 0 {
			t.Fatalf("left after the rerun: %v", left)
		}
	}
}

// parts splits the run into 2 and 3 parts run at once, joins them with
// finalize and compares the result with the one run (sameAsWhole); verify
// --against passes on it, and finalize again is already done.
func (c *conformanceCase) parts(t *testing.T) {
	for _, n := range []int{2, 3} {
		dst := filepath.Join(c.root, fmt.Sprint("split", n))
		runParts(t, n, func(part string) []string { return c.into(dst, "--yes", "--quiet", "--part", part) })
		if r := bp(t, "finalize", dst, "--json"); r.code != exitOK || lastJSON(t, r)["status"] != string(plan.StatusOK) {
			t.Fatalf("finalize of %d parts: %+v", n, r)
		}
		sameAsWhole(t, dst, c.dst, n)
		if left, _ := filepath.Glob(filepath.Join(c.root, fmt.Sprintf(".split%d.*", n))); len(left) > 0 {
			t.Fatalf("left after finalize: %v", left)
		}
		if r := bp(t, "verify", dst, "--against", c.s.against); r.code != exitOK || !strings.Contains(r.stdout+r.stderr, "0 mismatches") {
			t.Fatalf("verify --against the joined parts: %+v", r)
		}
		if r := bp(t, "finalize", dst, "--json"); r.code != exitOK || lastJSON(t, r)["status"] != string(plan.StatusAlreadyDone) {
			t.Fatalf("finalize again: %+v", r)
		}
	}
}

// bucket runs the conversion into a bucket of a versitygw on loopback: the
// objects are the local run's files, byte for byte (the run record aside,
// which holds its own times); a retry is already done; verify --against
// reads the bucket and finds every payload equal to the source's.
func (c *conformanceCase) bucket(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	env := srv.Env()
	dst := "s3://bkt/out"
	for _, want := range []plan.Status{plan.StatusOK, plan.StatusAlreadyDone} {
		r := bpS3(t, env, c.into(dst, "--yes", "--json")...)
		if r.code != exitOK || lastJSON(t, r)["status"] != string(want) {
			t.Fatalf("run into the bucket, want %s: %+v", want, r)
		}
	}
	sameOutput(t, storeTree(t, srv, "bkt", "out"), localTree(t, c.dst))
	verifyAgainstAll(t, env, [2]string{dst, c.s.against})
}

// killAt starts the command args, which writes into dst, lets it run a
// tenth of a millisecond at a time (stopped between steps, so a fast run on
// a busy machine is caught all the same) until at complete shards are
// staged (at 0: until a shard is being written), and kills it with SIGKILL,
// leaving its staging directory as a crash does.
func killAt(t *testing.T, args []string, dst string, at int) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".bpconvert-staging")
	reached := testtool.WaitFor(2*time.Minute, 0, func() bool {
		cmd.Process.Signal(syscall.SIGCONT)
		time.Sleep(100 * time.Microsecond)
		cmd.Process.Signal(syscall.SIGSTOP)
		media := filepath.Join(staging, "media")
		if at == 0 {
			return hasTempShard(media) || exists(dst)
		}
		return len(packShards(media)) >= at || exists(dst)
	})
	cmd.Process.Kill()
	cmd.Wait()
	if !reached || exists(dst) {
		t.Fatalf("the run ended or stalled before %d shards were complete (finished: %v, %d shards staged)", at, exists(dst), len(packShards(filepath.Join(staging, "media"))))
	}
}

// conformanceRun runs the command args, which prints its summary as JSON,
// and returns the summary, which must have status want and exit 0.
func conformanceRun(t *testing.T, args []string, want plan.Status) plan.Summary {
	t.Helper()
	r := bp(t, args...)
	if r.code != exitOK {
		t.Fatalf("%s: %+v", strings.Join(args, " "), r)
	}
	var sum plan.Summary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || sum.Status != want {
		t.Fatalf("summary %q, %v; want status %s:\n%s", sum.Status, err, want, r.stdout)
	}
	return sum
}

// flipPayloadByte flips the first payload byte of the first member of the
// pack shard at path that has one.
func flipPayloadByte(t *testing.T, path string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(-1)
	for _, m := range zr.File {
		if m.UncompressedSize64 > 0 {
			if off, err = m.DataOffset(); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	zr.Close()
	if off < 0 {
		t.Fatalf("%s: no member with a payload", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x01
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
