package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// TestS3FanOut: parts converted into a bucket (each from its own process,
// with nothing shared on local disk) are joined there by finalize without
// their payload passing through this machine, into the same bytes as the
// same split joined locally; the parts are gone afterwards, retries are
// already done, verify --against passes, and a finalize killed between its
// shard copies is finished by a rerun with the same output. A bucket's root
// takes no parts.
func TestS3FanOut(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "fan")
	env := srv.Env()
	root := t.TempDir()
	shards := wdsShards(t, root, 7, 12, 200_000)
	var payload int64 = 7 * 12 * 200_000
	// Shards of 2 MB: finalize reads each one's last 64 KiB (where its
	// central directory ends), a small part of it.
	flags := []string{"--yes", "--max-pack-bytes", "2MB", "--quiet"}
	convertArgs := func(dst, part string, extra ...string) []string {
		return append(append(append(append([]string{"convert-wds"}, shards...), dst, "--part", part), flags...), extra...)
	}
	const n = 3
	local := filepath.Join(root, "local")
	runParts(t, n, func(part string) []string { return convertArgs(local, part) })
	if r := bp(t, "finalize", local); r.code != 0 {
		t.Fatalf("local finalize: %+v", r)
	}
	want := localTree(t, local)

	for _, tc := range []struct{ name, key string }{{"top level", "ds"}, {"under a prefix", "some/where/ds"}} {
		t.Run(tc.name, func(t *testing.T) {
			dst := "s3://fan/" + tc.key
			runPartsEnv(t, env, n, func(part string) []string {
				return convertArgs(dst, part, "--staging", filepath.Join(root, "staging-"+strings.ReplaceAll(part, "/", "-")))
			})
			parts := strings.TrimSuffix(tc.key, "ds") + ".ds.bpconvert-parts"
			if got := storeTree(t, srv, "fan", parts); len(got) == 0 {
				t.Fatalf("no parts in the store under %s", parts)
			}
			proxy := s3test.NewProxy(t, srv)
			r := bpS3(t, proxy.Env(srv), "finalize", dst, "--json")
			if r.code != 0 {
				t.Fatalf("finalize: exit %d: %s", r.code, r.stderr)
			}
			m := lastJSON(t, r)
			if m["status"] != "ok" || m["blobs"] != float64(7*12*2) {
				t.Fatalf("finalize summary: %v", m)
			}
			// Only tables, manifests and records passed through: a small
			// fraction of the payload either way.
			up, _ := m["upload"].(map[string]any)
			if up == nil || up["bytes"].(float64) <= 0 || up["bytes"].(float64) > float64(payload/10) {
				t.Fatalf("finalize's upload figures: %v (payload %d bytes)", m["upload"], payload)
			}
			if got := proxy.BytesSent(); got > payload/10 {
				t.Fatalf("finalize fetched %d bytes of a %d-byte payload", got, payload)
			}
			sameOutput(t, storeTree(t, srv, "fan", tc.key), want)
			if got := storeTree(t, srv, "fan", parts); len(got) != 0 {
				t.Fatalf("%d objects of the parts left after finalize", len(got))
			}
			if r := bpS3(t, env, "verify", dst, "--against", strings.Join(shards, "::")); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "0 mismatches") {
				t.Fatalf("verify --against: %+v", r)
			}
			for _, retry := range [][]string{{"finalize", dst, "--json"}, append(convertArgs(dst, "2/3"), "--json")} {
				r := bpS3(t, env, retry...)
				if r.code != 0 || !strings.Contains(r.stdout, `"already_done"`) {
					t.Fatalf("retry %v: %+v", retry, r)
				}
			}
		})
	}

	t.Run("killed finalize", func(t *testing.T) {
		dst := "s3://fan/killed"
		runPartsEnv(t, env, n, func(part string) []string {
			return convertArgs(dst, part, "--staging", filepath.Join(root, "staging-k"))
		})
		proxy := s3test.NewProxy(t, srv)
		var copies atomic.Int32
		copied := make(chan struct{})
		proxy.SetFaults(func(_ int, r *http.Request) s3test.Fault {
			if r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "" && copies.Add(1) == 2 {
				close(copied)
			}
			return s3test.Pass
		})
		proxy.SetDelay(50 * time.Millisecond)
		// The tables are joined under --staging: the killed run leaves its
		// directory there, and the next finalize removes it.
		joins := filepath.Join(root, "finalize-staging")
		cmd := exec.Command(binPath, "finalize", dst, "--staging", joins)
		cmd.Env = append(cleanAWSEnv(), proxy.Env(srv)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-copied:
			cmd.Process.Kill()
			<-done
		case err := <-done:
			t.Fatalf("finalize ended (%v) before it was killed between copies", err)
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Fatal("finalize made no second copy in 2 minutes")
		}
		if _, ok := storeTree(t, srv, "fan", "killed")[".bpconvert.json"]; ok {
			t.Fatal("a killed finalize committed")
		}
		left, _ := filepath.Glob(filepath.Join(joins, "bpconvert-finalize-*"))
		if len(left) != 1 {
			t.Fatalf("the killed finalize left %v in --staging, want its one join directory", left)
		}
		// Old enough to be taken for a killed run's (one just made is left).
		past := time.Now().Add(-2 * time.Minute)
		if err := os.Chtimes(left[0], past, past); err != nil {
			t.Fatal(err)
		}
		if r := bpS3(t, env, "finalize", dst, "--staging", joins); r.code != 0 {
			t.Fatalf("finalize after the kill: %+v", r)
		}
		if left, _ := filepath.Glob(filepath.Join(joins, "*")); len(left) != 0 {
			t.Fatalf("--staging still holds %v after the next finalize", left)
		}
		sameOutput(t, storeTree(t, srv, "fan", "killed"), want)
	})

	t.Run("a part replaced", func(t *testing.T) {
		// A committed part rerun with other options and --restart replaces
		// its output in the store; finalize then names the odd part, and
		// the part rerun as before joins into the same output.
		dst := "s3://fan/replaced"
		runPartsEnv(t, env, n, func(part string) []string { return convertArgs(dst, part) })
		if r := bpS3(t, env, convertArgs(dst, "2/3", "--max-members", "7")...); r.code != 2 || !strings.Contains(r.stderr, "--restart") {
			t.Fatalf("part 2/3 with other options: exit %d, %s", r.code, r.stderr)
		}
		if r := bpS3(t, env, convertArgs(dst, "2/3", "--max-members", "7", "--restart")...); r.code != 0 {
			t.Fatalf("part 2/3 with other options and --restart: %+v", r)
		}
		if r := bpS3(t, env, "finalize", dst); r.code != 2 || !strings.Contains(r.stderr, "part 2/3: --max-members") {
			t.Fatalf("finalize of parts with other options: exit %d, %s", r.code, r.stderr)
		}
		if r := bpS3(t, env, convertArgs(dst, "2/3", "--restart")...); r.code != 0 {
			t.Fatalf("part 2/3 as before with --restart: %+v", r)
		}
		if r := bpS3(t, env, "finalize", dst); r.code != 0 {
			t.Fatalf("finalize: %+v", r)
		}
		sameOutput(t, storeTree(t, srv, "fan", "replaced"), want)
	})

	t.Run("bucket root", func(t *testing.T) {
		r := bpS3(t, env, convertArgs("s3://fan", "1/2")...)
		if r.code != 2 || !strings.Contains(r.stderr, "needs a destination under a prefix") {
			t.Fatalf("--part into a bucket's root: exit %d, %s", r.code, r.stderr)
		}
	})
}

// TestS3SourceUnavailable: a store that stops answering while a source is
// read from it is a failure of the store (exit 1, naming the object, with
// the hint to rerun), never bad input (exit 3); nothing is left at DST.
func TestS3SourceUnavailable(t *testing.T) {
	t.Parallel()
	srv, root, _ := s3WDS(t, "src", wdsSize{3, 6, 5000}, "src")
	proxy := s3test.NewProxy(t, srv)
	proxy.SetFaults(func(_ int, r *http.Request) s3test.Fault {
		if strings.Contains(r.URL.Path, "train-0001.tar") {
			return s3test.Reset
		}
		return s3test.Pass
	})
	for _, c := range []struct {
		name, words string
		env         []string
		stop        bool
	}{
		{"reads of one tar keep failing", "train-0001.tar", append(proxy.Env(srv), "AWS_MAX_ATTEMPTS=2"), false},
		{"server stopped", "cannot reach the store", append(srv.Env(), "AWS_MAX_ATTEMPTS=2"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.stop {
				srv.Stop()
			}
			dst := filepath.Join(root, strings.ReplaceAll(c.name, " ", "-"))
			r := bpS3(t, c.env, "convert-wds", "--yes", "s3://src/wds", dst)
			if r.code != 1 || !strings.Contains(r.stderr, c.words) || !strings.Contains(r.stderr, "rerun the same command") {
				t.Fatalf("exit %d (want 1), stderr:\n%s", r.code, r.stderr)
			}
			if strings.Contains(r.stderr, srv.SecretKey) {
				t.Fatal("output carries the secret key")
			}
			if exists(dst) {
				t.Fatalf("%s left after a failed run", dst)
			}
		})
	}
}

// TestS3DryRunHeaders: the plan of a WebDataset in a bucket reads the tar
// headers through ranged reads, skipping the payloads between them, as
// the local plan does by seeking: for members of 4 MB it fetches about a
// window (1 MiB) per member, not the tars.
func TestS3DryRunHeaders(t *testing.T) {
	t.Parallel()
	srv, root, src := s3WDS(t, "src", wdsSize{2, 3, 4_000_000}, "src")
	var total int64
	for _, b := range localTree(t, src) {
		total += int64(len(b))
	}
	proxy := s3test.NewProxy(t, srv)
	r := bpS3(t, proxy.Env(srv), "convert-wds", "--dry-run", "s3://src/wds", filepath.Join(root, "out"))
	if r.code != 0 || !strings.Contains(r.stdout, "12 members") && !strings.Contains(r.stdout, "6 samples") {
		t.Fatalf("dry run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := proxy.BytesSent(); got > 6*(1<<20)+1<<20 {
		t.Fatalf("the plan fetched %d bytes of %d-byte tars", got, total)
	}
	t.Logf("plan fetched %d of %d bytes in %d requests", proxy.BytesSent(), total, proxy.Requests())
	if exists(filepath.Join(root, "out")) {
		t.Fatal("a dry run wrote its destination")
	}
}
