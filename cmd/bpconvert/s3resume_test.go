package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// sameObjects compares two outputs in a store object by object, the run
// record included: the same names and the same bytes.
func sameObjects(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	compareObjects(t, got, want, "")
}

// holdShard makes the proxy hold every PUT of the shard named name (a path
// in the bucket) until release is called; a held request is then answered
// with a reset. Other requests pass.
func holdShard(proxy *s3test.Proxy, name string) (release func()) {
	ch := make(chan struct{})
	proxy.SetFaults(func(n int, r *http.Request) s3test.Fault {
		if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/"+name) {
			return s3test.Pass
		}
		select {
		case <-ch:
		case <-time.After(5 * time.Minute): // bounded, far past the test's needs
		}
		return s3test.Reset
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(ch)
			proxy.SetFaults(nil)
		})
	}
}

// TestS3ResumeFromBucket stops runs into a bucket while the upload of a
// middle shard is held, so the store holds pack-0000 and pack-0002 but not
// pack-0001: with SIGKILL, SIGINT (which removes the local staging
// directory) and SIGTERM, and reruns with a fresh staging directory, the
// same one, and the same one holding a manifest a kill cut short. Every
// rerun ends with exactly the objects of an uninterrupted run, byte for
// byte (record, table, manifest and shard names included), and no
// temporary file reaches the store. The messages after a signal say how
// many complete shards the bucket keeps, that the same command resumes and
// that --restart discards them; a different conversion into that
// destination is told what it holds. pack into a bucket, and a part
// (--part 1/1) committed beside its destination, likewise.
func TestS3ResumeFromBucket(t *testing.T) {
	t.Parallel()
	srv, root, src := s3WDS(t, "", wdsSize{2, 30, 40000}, "bkt")
	proxy := s3test.NewProxy(t, srv)
	files := filepath.Join(root, "files") // for pack: 60 files
	for i := range 60 {
		writeTree(t, files, map[string]string{fmt.Sprintf("d%d/f%02d.bin", i%3, i): strings.Repeat(string(rune('a'+i%26)), 30000+i)})
	}
	env := proxy.Env(srv)
	// Commands: convert-wds, pack, and "part": convert-wds --part 1/1.
	args := func(command, dst, staging string, extra ...string) []string {
		switch command {
		case "pack":
			return append([]string{"pack", "--max-members", "10", "--staging", staging, files, dst}, extra...)
		case "part":
			extra = append([]string{"--part", "1/1"}, extra...)
		}
		return append([]string{"convert-wds", "--yes", "--max-members", "10", "--staging", staging, src, dst}, extra...)
	}
	// media is where a command puts its shards in the destination.
	media := map[string]string{"convert-wds": "media/", "pack": "", "part": "media/"}
	// at is where a command's run into s3://bkt/NAME writes.
	at := func(command, name string) string {
		if command == "part" {
			return "." + name + ".bpconvert-parts/part-0001-of-0001"
		}
		return name
	}
	want := map[string]map[string][]byte{}
	for command := range media {
		if r := bpS3(t, env, args(command, "s3://bkt/clean-"+command, filepath.Join(root, "staging-clean"))...); r.code != 0 {
			t.Fatalf("uninterrupted run: %+v", r)
		}
		want[command] = storeTree(t, srv, "bkt", at(command, "clean-"+command))
		if n, _ := filepath.Glob(srv.Path("bkt", at(command, "clean-"+command)+"/"+media[command]+"pack-*.zip")); len(n) < 5 {
			t.Fatalf("the uninterrupted %s wrote %d shards; the test needs at least 5", command, len(n))
		}
	}
	for _, c := range []struct {
		name    string
		command string
		sig     syscall.Signal
		code    int    // exit code of the stopped run, -1 for killed
		rerun   string // "fresh": a new staging directory; "same": the stopped run's
		tmpFile bool   // a half-written manifest is left in the kept staging directory
	}{
		{"kill fresh staging", "convert-wds", syscall.SIGKILL, -1, "fresh", false},
		{"kill same staging leftover temporary", "convert-wds", syscall.SIGKILL, -1, "same", true},
		{"sigint", "convert-wds", syscall.SIGINT, 130, "same", false},
		{"sigterm fresh staging", "convert-wds", syscall.SIGTERM, 143, "fresh", false},
		{"pack sigint", "pack", syscall.SIGINT, 130, "same", false},
		{"pack sigterm", "pack", syscall.SIGTERM, 143, "same", false},
		{"part sigint", "part", syscall.SIGINT, 130, "fresh", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := strings.ReplaceAll(c.name, " ", "-")
			dst, prefix := "s3://bkt/"+name, at(c.command, name)
			staging := filepath.Join(root, "staging-"+name)
			shardIn := func(name string) bool { return exists(srv.Path("bkt", prefix+"/"+media[c.command]+name)) }
			release := holdShard(proxy, prefix+"/"+media[c.command]+"pack-0001.zip")
			defer release()
			cmd := exec.Command(binPath, args(c.command, dst, staging)...)
			cmd.Env = append(cleanAWSEnv(), env...)
			var se bytes.Buffer
			cmd.Stderr = &se
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if !testtool.WaitFor(60*time.Second, 5*time.Millisecond, func() bool { return shardIn("pack-0002.zip") && shardIn("pack-0003.zip") }) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("pack-0002 and pack-0003 were not uploaded within 60 s:\n%s", se.String())
			}
			cmd.Process.Signal(c.sig)
			cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = -1
			}
			release()
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, se.String())
			}
			if shardIn("pack-0001.zip") || !shardIn("pack-0000.zip") || exists(srv.Path("bkt", prefix+"/.bpconvert.json")) {
				t.Fatal("the stopped run did not leave pack-0000 and pack-0002 without pack-0001, uncommitted")
			}
			stagedMedia, _ := filepath.Glob(filepath.Join(staging, ".bpconvert-*.bpconvert-staging", media[c.command]))
			if c.sig != syscall.SIGKILL {
				// What a rerun reuses: the shards numbered without a gap
				// from pack-0000, in the bucket or kept staged.
				have, _ := filepath.Glob(srv.Path("bkt", prefix+"/"+media[c.command]+"pack-*.zip"))
				for _, d := range stagedMedia {
					m, _ := filepath.Glob(filepath.Join(d, "pack-*.zip"))
					have = append(have, m...)
				}
				n := 0
				for slices.ContainsFunc(have, func(p string) bool { return filepath.Base(p) == fmt.Sprintf("pack-%04d.zip", n) }) {
					n++
				}
				checkStopMessage(t, se.String(), "s3://bkt/"+prefix, n)
			}
			if c.tmpFile {
				if len(stagedMedia) != 1 {
					t.Fatalf("no staging directory kept after SIGKILL: %v", stagedMedia)
				}
				// What a kill while the manifest is written leaves.
				if err := os.WriteFile(filepath.Join(stagedMedia[0], ".pack.manifest.json.5f3a9c01.tmp"), []byte(`{"shards": {"pack-0000.zip": `), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if c.name == "sigint" {
				// A different conversion is told what the destination holds.
				other := args(c.command, dst, filepath.Join(root, "staging-other"), "--max-members", "8")
				r := bpS3(t, env, other...)
				n := len(storeShards(t, srv, prefix))
				for _, want := range []string{fmt.Sprintf("it holds %d complete shards of an interrupted convert-wds run", n), `--max-members "8", earlier "10"`, "--restart"} {
					if r.code != 2 || !strings.Contains(r.stderr, want) {
						t.Fatalf("a different conversion into %s: exit %d, want 2 and %q:\n%s", dst, r.code, want, r.stderr)
					}
				}
			}
			if c.rerun == "fresh" {
				staging = filepath.Join(root, "staging-"+name+"-new")
			}
			r := bpS3(t, env, args(c.command, dst, staging)...)
			if r.code != 0 {
				t.Fatalf("rerun: exit %d:\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "resuming an interrupted run") {
				t.Fatalf("the rerun did not resume:\n%s", r.stderr)
			}
			got := storeTree(t, srv, "bkt", prefix)
			if sameObjects(t, got, want[c.command]); !t.Failed() {
				t.Logf("stopped with %s; the rerun (%s staging) wrote %d objects equal to the uninterrupted run's", c.sig, c.rerun, len(got))
			}
		})
	}
}

// TestS3LostCommitAnswer: the server stores the run's record (its commit)
// but the answer is lost on the way back, so the retry of the conditional
// put finds the record there. The run recognises its own commit (the
// record stored is the one it wrote) and ends already_done with exit 0,
// its output the same as an uninterrupted run's and no pending record
// left. The same for finalize.
func TestS3LostCommitAnswer(t *testing.T) {
	t.Parallel()
	srv, root, src := s3WDS(t, "", wdsSize{1, 20, 20000}, "bkt")
	lossy := s3test.NewProxy(t, srv)
	args := func(dst string) []string {
		return []string{"convert-wds", "--yes", "--json", "--max-members", "10", "--staging", filepath.Join(root, "staging"), src, dst}
	}
	if r := bpS3(t, srv.Env(), args("s3://bkt/clean")...); r.code != 0 {
		t.Fatalf("uninterrupted run: %+v", r)
	}
	want := storeTree(t, srv, "bkt", "clean")
	var once sync.Once
	lossy.SetFaults(func(_ int, r *http.Request) s3test.Fault {
		f := s3test.Pass
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/lost/.bpconvert.json") {
			once.Do(func() { f = s3test.LoseAnswer })
		}
		return f
	})
	r := bpS3(t, lossy.Env(srv), args("s3://bkt/lost")...)
	if lossy.Faults() != 1 {
		t.Fatalf("%d answers lost, want 1: %+v", lossy.Faults(), r)
	}
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.stderr)
	}
	if doc := lastJSON(t, r); doc["status"] != "already_done" {
		t.Fatalf("status %v, want already_done: %s", doc["status"], r.stdout)
	}
	if exists(srv.Path("bkt", "lost/.bpconvert-pending.json")) {
		t.Fatal("the pending record was left")
	}
	sameObjects(t, storeTree(t, srv, "bkt", "lost"), want)

	// The same for finalize, whose record goes up after the joined shards.
	for _, dst := range []string{"clean-joined", "lost-joined"} {
		runPartsEnv(t, srv.Env(), 2, func(part string) []string {
			return []string{"convert-wds", "--yes", "--quiet", "--max-members", "10", "--part", part,
				"--staging", filepath.Join(root, "staging-"+strings.ReplaceAll(part, "/", "-")), src, "s3://bkt/" + dst}
		})
	}
	if r := bpS3(t, srv.Env(), "finalize", "s3://bkt/clean-joined"); r.code != 0 {
		t.Fatalf("finalize: %+v", r)
	}
	once = sync.Once{}
	lossy.SetFaults(func(_ int, r *http.Request) s3test.Fault {
		f := s3test.Pass
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/lost-joined/.bpconvert.json") {
			once.Do(func() { f = s3test.LoseAnswer })
		}
		return f
	})
	r = bpS3(t, lossy.Env(srv), "finalize", "--json", "s3://bkt/lost-joined")
	if lossy.Faults() != 2 {
		t.Fatalf("finalize: %d answers lost in all, want 2: %+v", lossy.Faults(), r)
	}
	if r.code != 0 {
		t.Fatalf("finalize: exit %d, want 0:\n%s", r.code, r.stderr)
	}
	if doc := lastJSON(t, r); doc["status"] != "already_done" {
		t.Fatalf("finalize: status %v, want already_done: %s", doc["status"], r.stdout)
	}
	if exists(srv.Path("bkt", "lost-joined/.bpconvert-pending.json")) || len(storeTree(t, srv, "bkt", ".lost-joined.bpconvert-parts")) != 0 {
		t.Fatal("finalize left its pending record or the parts")
	}
	sameObjects(t, storeTree(t, srv, "bkt", "lost-joined"), storeTree(t, srv, "bkt", "clean-joined"))
}

// storeShards lists the shards the server holds under prefix/media.
func storeShards(t *testing.T, srv *s3test.Server, prefix string) []string {
	t.Helper()
	m, err := filepath.Glob(srv.Path("bkt", prefix+"/media/pack-*.zip"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// checkStopMessage checks what a run into dst stopped by a signal says on
// stderr: the complete shards the bucket keeps (shards of them), that the
// same command resumes and that --restart discards them; never that
// nothing was written.
func checkStopMessage(t *testing.T, stderr, dst string, shards int) {
	t.Helper()
	if strings.Contains(stderr, "nothing was written") {
		t.Fatalf("the message says nothing was written:\n%s", stderr)
	}
	m := regexp.MustCompile(`(\d+) complete shards? kept in ` + regexp.QuoteMeta(dst) + `\b`).FindStringSubmatch(stderr)
	if m == nil || m[1] != itoa(int64(shards)) {
		t.Fatalf("the message does not say that %s keeps %d complete shards:\n%s", dst, shards, stderr)
	}
	for _, want := range []string{"rerun the same command to resume", "--restart"} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("the message lacks %q:\n%s", want, stderr)
		}
	}
}
