package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// bpS3 runs the built binary with this environment, less its AWS settings,
// plus env (the S3 server's).
func bpS3(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return runBin(t, append(cleanAWSEnv(), env...), args...)
}

// cleanAWSEnv is this process's environment without AWS settings, so a
// developer's own profile or endpoint never reaches a test.
func cleanAWSEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return out
}

// wdsSource writes a WebDataset of shards tars with Python's tarfile:
// samples of a random .jpg of size bytes and a .cls.
func wdsSource(t *testing.T, dir string, shards, samples, size int) {
	t.Helper()
	testtool.Require(t, "python3")
	script := `
import io, os, sys, tarfile
out, shards, samples, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(out, exist_ok=True)
for s in range(shards):
    with tarfile.open(os.path.join(out, "train-%04d.tar" % s), "w", format=tarfile.GNU_FORMAT) as tf:
        for i in range(samples):
            for ext, data in (("jpg", os.urandom(size)), ("cls", str(i % 10).encode())):
                ti = tarfile.TarInfo("%02d%05d.%s" % (s, i, ext))
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
`
	if out, err := exec.Command("python3", "-c", script, dir, itoa(int64(shards)), itoa(int64(samples)), itoa(int64(size))).CombinedOutput(); err != nil {
		t.Fatalf("python3 tarfile: %v\n%s", err, out)
	}
}

// wdsSize is the shape of a WebDataset source that wdsSource writes:
// shards tars of samples samples, each a random .jpg of size bytes and a
// .cls.
type wdsSize struct{ shards, samples, size int }

// s3WDS is the set-up most S3 tests share: a versitygw on loopback with
// buckets, a scratch directory root, and a WebDataset of shape w written
// under root/src by Python's tarfile, uploaded under into/wds through the
// S3 API when into names a bucket ("" uploads nothing).
func s3WDS(t *testing.T, into string, w wdsSize, buckets ...string) (srv *s3test.Server, root, src string) {
	t.Helper()
	srv = s3test.Start(t, buckets...)
	root = t.TempDir()
	src = filepath.Join(root, "src")
	wdsSource(t, src, w.shards, w.samples, w.size)
	if into != "" {
		upload(t, srv, src, into, "wds")
	}
	return srv, root, src
}

// upload copies every file under dir to bucket/prefix through the S3 API.
func upload(t *testing.T, srv *s3test.Server, dir, bucket, prefix string) {
	t.Helper()
	c := srv.Client()
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, err = c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/" + filepath.ToSlash(rel)), Body: bytes.NewReader(b)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// storeTree reads every object under bucket/prefix through the S3 API.
func storeTree(t *testing.T, srv *s3test.Server, bucket, prefix string) map[string][]byte {
	t.Helper()
	c := srv.Client()
	ctx := context.Background()
	out := map[string][]byte{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			g, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			b.ReadFrom(g.Body)
			g.Body.Close()
			out[strings.TrimPrefix(*o.Key, prefix+"/")] = b.Bytes()
		}
	}
	return out
}

// localTree reads every file under dir.
func localTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, _ := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	return out
}

// sameOutput compares a conversion in the store with a local one: every
// shard, the manifest and the tables byte for byte; the store holds the
// record too (the local output has it as well, with its own times).
func sameOutput(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	compareObjects(t, got, want, ".bpconvert.json")
}

// compareObjects checks that got holds the objects of want, by name, with
// the same bytes (but for the object named anyBytes, which need only be
// there), and nothing else.
func compareObjects(t *testing.T, got, want map[string][]byte, anyBytes string) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g, ok := got[n]
		switch {
		case !ok:
			t.Errorf("%s: missing", n)
		case n != anyBytes && !bytes.Equal(g, want[n]):
			t.Errorf("%s: %d bytes differ from the %d expected", n, len(g), len(want[n]))
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: not expected", n)
		}
	}
}

// pendingUploads counts the multipart uploads in progress in bucket.
func pendingUploads(t *testing.T, srv *s3test.Server, bucket string) int {
	t.Helper()
	out, err := srv.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}

// TestS3Directions converts one WebDataset local -> s3, s3 -> s3 and
// s3 -> local, and pack local -> s3 and s3 -> local, and finds every
// output byte-identical to the local run's; a retry is already done, a
// different run into a committed destination is refused, and nothing stays
// staged.
func TestS3Directions(t *testing.T) {
	t.Parallel()
	srv, root, src := s3WDS(t, "src-bucket", wdsSize{3, 30, 20000}, "src-bucket", "dst-bucket")
	env := srv.Env()
	staging := t.TempDir()

	local := filepath.Join(root, "local")
	if r := bp(t, "convert-wds", "--yes", "--quiet", "--max-members", "16", src, local); r.code != 0 {
		t.Fatalf("local run: %+v", r)
	}
	want := localTree(t, local)
	for _, c := range []struct{ name, src, dst string }{
		{"local to s3", src, "s3://dst-bucket/a"},
		{"s3 to s3", "s3://src-bucket/wds", "s3://dst-bucket/b/deeper"},
		{"s3 to local", "s3://src-bucket/wds/", filepath.Join(root, "fromstore")},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"convert-wds", "--yes", "--json", "--max-members", "16", c.src, c.dst}
			if strings.HasPrefix(c.dst, "s3://") {
				args = append(args, "--staging", staging)
			}
			r := bpS3(t, env, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			m := lastJSON(t, r)
			if m["blobs"] != float64(180) || m["dest"] != strings.TrimSuffix(c.dst, "/") {
				t.Fatalf("summary %v", m)
			}
			if up, _ := m["upload"].(map[string]any); strings.HasPrefix(c.dst, "s3://") {
				if up == nil || up["bytes"].(float64) < 90*20000 || up["part_bytes"].(float64) <= 0 || up["staging_bound_bytes"].(float64) <= 0 {
					t.Fatalf("summary's upload figures: %v", m["upload"])
				}
			} else if up != nil {
				t.Fatalf("a local destination's summary has upload figures: %v", up)
			}
			var got map[string][]byte
			if strings.HasPrefix(c.dst, "s3://") {
				_, key, _ := strings.Cut(strings.TrimPrefix(c.dst, "s3://"), "/")
				got = storeTree(t, srv, "dst-bucket", key)
			} else {
				got = localTree(t, c.dst)
			}
			sameOutput(t, got, want)
			// A retry of the finished run is done already.
			r = bpS3(t, env, args...)
			if m := lastJSON(t, r); r.code != 0 || m["status"] != "already_done" {
				t.Fatalf("retry: exit %d, %s", r.code, r.stdout)
			}
		})
	}
	// A bucket source is read once: the plan of a confirmed run (--yes)
	// does not download the tars for a header pass.
	proxy := s3test.NewProxy(t, srv)
	var srcBytes int64
	for _, b := range localTree(t, src) {
		srcBytes += int64(len(b))
	}
	if r := bpS3(t, proxy.Env(srv), "convert-wds", "--yes", "--quiet", "s3://src-bucket/wds", filepath.Join(root, "once")); r.code != 0 {
		t.Fatalf("s3 to local through the proxy: %+v", r)
	}
	if got := proxy.BytesSent(); got < srcBytes || got > srcBytes+srcBytes/20 {
		t.Fatalf("the conversion fetched %d bytes of a %d-byte source", got, srcBytes)
	}
	// A different run into a committed destination: refused, exit 2.
	r := bpS3(t, env, "convert-wds", "--yes", "--max-members", "8", src, "s3://dst-bucket/a")
	if r.code != 2 || !strings.Contains(r.stderr, "different run") {
		t.Fatalf("different run into a committed destination: exit %d, %s", r.code, r.stderr)
	}
	if ents, _ := os.ReadDir(staging); len(ents) != 0 {
		t.Fatalf("staging holds %d entries after the runs", len(ents))
	}
	if n := pendingUploads(t, srv, "dst-bucket"); n != 0 {
		t.Fatalf("%d multipart uploads left", n)
	}

	// pack, to the store and back.
	lp := filepath.Join(root, "lp")
	if r := bp(t, "pack", "--quiet", "--max-members", "40", src, lp); r.code != 0 {
		t.Fatalf("local pack: %+v", r)
	}
	if r := bpS3(t, env, "pack", "--quiet", "--max-members", "40", "--staging", staging, src, "s3://dst-bucket/packs/media"); r.code != 0 {
		t.Fatalf("pack to s3: %+v", r)
	}
	got := storeTree(t, srv, "dst-bucket", "packs/media")
	delete(got, ".bpconvert.json") // the commit record of a pack in a store
	sameOutput(t, got, localTree(t, lp))
	back := filepath.Join(root, "back")
	if r := bpS3(t, env, "pack", "--quiet", "s3://src-bucket/wds", back); r.code != 0 {
		t.Fatalf("pack from s3: %+v", r)
	}
	lp2 := filepath.Join(root, "lp2")
	if r := bp(t, "pack", "--quiet", src, lp2); r.code != 0 {
		t.Fatalf("local pack: %+v", r)
	}
	sameOutput(t, localTree(t, back), localTree(t, lp2))
}

// TestS3Errors: wrong credentials, a missing bucket and a missing source
// give clear errors with the documented exit codes, never a credential.
func TestS3Errors(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	root := t.TempDir()
	src := filepath.Join(root, "src")
	wdsSource(t, src, 1, 4, 100)
	wrong := append(srv.Env(), "AWS_ACCESS_KEY_ID=AKWRONGKEY0001", "AWS_SECRET_ACCESS_KEY=wrongSECRETwrongSECRETwrong")
	for _, c := range []struct {
		name  string
		env   []string
		args  []string
		code  int
		words string
	}{
		{"wrong credentials", wrong, []string{"convert-wds", "--yes", src, "s3://bkt/out"}, 2, "credentials were refused"},
		{"missing bucket", srv.Env(), []string{"convert-wds", "--yes", src, "s3://no-such-bucket/out"}, 2, "bucket no-such-bucket does not exist"},
		{"missing source", srv.Env(), []string{"convert-wds", "--yes", "s3://bkt/nothing-here", filepath.Join(root, "o")}, 3, "no object is under s3://bkt/nothing-here/"},
		{"bad bucket name", srv.Env(), []string{"convert-wds", "--yes", src, "s3://Bad_Name/out"}, 2, "not a valid bucket name"},
		{"staging for a local destination", srv.Env(), []string{"convert-wds", "--yes", "--staging", root, src, filepath.Join(root, "o2")}, 2, "--staging is for destinations in object storage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := bpS3(t, c.env, c.args...)
			if r.code != c.code || !strings.Contains(r.stderr, c.words) {
				t.Fatalf("exit %d (want %d), stderr:\n%s", r.code, c.code, r.stderr)
			}
			for _, secret := range []string{srv.SecretKey, "wrongSECRETwrongSECRETwrong", "AKWRONGKEY0001"} {
				if strings.Contains(r.stderr+r.stdout, secret) {
					t.Fatalf("output carries a credential:\n%s", r.stderr)
				}
			}
		})
	}
}

// TestS3Faults: 503 SlowDown answers and connection resets are retried
// and the output is the same as a local run's.
func TestS3Faults(t *testing.T) {
	t.Parallel()
	srv, root, src := s3WDS(t, "", wdsSize{2, 20, 30000}, "bkt")
	proxy := s3test.NewProxy(t, srv)
	local := filepath.Join(root, "local")
	if r := bp(t, "convert-wds", "--yes", "--quiet", "--max-members", "8", src, local); r.code != 0 {
		t.Fatalf("local run: %+v", r)
	}
	for _, c := range []struct {
		name  string
		fault s3test.Fault
	}{{"slow down", s3test.SlowDown}, {"connection reset", s3test.Reset}} {
		t.Run(c.name, func(t *testing.T) {
			before := proxy.Faults()
			// Every third request fails, the first 12 times.
			proxy.SetFaults(func(n int, r *http.Request) s3test.Fault {
				if n%3 == 0 && proxy.Faults()-before < 12 {
					return c.fault
				}
				return s3test.Pass
			})
			defer proxy.SetFaults(nil)
			dst := "s3://bkt/" + strings.ReplaceAll(c.name, " ", "-")
			r := bpS3(t, proxy.Env(srv), "convert-wds", "--yes", "--quiet", "--max-members", "8", src, dst)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if proxy.Faults()-before == 0 {
				t.Fatal("no fault was injected")
			}
			sameOutput(t, storeTree(t, srv, "bkt", strings.TrimPrefix(dst, "s3://bkt/")), localTree(t, local))
		})
	}
}

// TestS3StoppedAndResumed: the server goes away in the middle of a run:
// the run fails naming an object and commits nothing; once the server is
// back, a rerun resumes from the shards the store holds and ends
// byte-identical to a run never interrupted. The same for SIGKILL, and
// SIGTERM exits 143 leaving no upload in progress.
func TestS3StoppedAndResumed(t *testing.T) {
	t.Parallel()
	srv, root, src := s3WDS(t, "", wdsSize{4, 40, 50000}, "bkt")
	proxy := s3test.NewProxy(t, srv)
	local := filepath.Join(root, "local")
	if r := bp(t, "convert-wds", "--yes", "--quiet", "--max-members", "10", src, local); r.code != 0 {
		t.Fatalf("local run: %+v", r)
	}
	want := localTree(t, local)
	env := append(proxy.Env(srv), "AWS_MAX_ATTEMPTS=2")
	args := func(dst string) []string {
		return []string{"convert-wds", "--yes", "--max-members", "10", "--staging", filepath.Join(root, "staging"), src, dst}
	}
	// shardsIn counts the shards the server holds under prefix.
	shardsIn := func(prefix string) int {
		m, _ := filepath.Glob(srv.Path("bkt", prefix+"/media/pack-*.zip"))
		return len(m)
	}
	start := func(dst string) *exec.Cmd {
		cmd := exec.Command(binPath, args(dst)...)
		cmd.Env = append(cleanAWSEnv(), env...)
		var se bytes.Buffer
		cmd.Stderr = &se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	waitShards := func(cmd *exec.Cmd, prefix string, n int) {
		if !testtool.WaitFor(60*time.Second, 5*time.Millisecond, func() bool { return shardsIn(prefix) >= n }) {
			cmd.Process.Kill()
			t.Fatalf("fewer than %d shards uploaded within 60 s", n)
		}
	}
	for _, c := range []struct {
		name string
		stop func(cmd *exec.Cmd) // ends the run in the middle
		code int
	}{
		{"server stopped", func(cmd *exec.Cmd) { srv.Stop() }, 1},
		{"SIGKILL", func(cmd *exec.Cmd) { cmd.Process.Kill() }, -1},
		{"SIGTERM", func(cmd *exec.Cmd) { cmd.Process.Signal(syscall.SIGTERM) }, 143},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := strings.ReplaceAll(c.name, " ", "-")
			dst := "s3://bkt/" + prefix
			proxy.SetDelay(40 * time.Millisecond) // slow enough to stop in the middle
			cmd := start(dst)
			waitShards(cmd, prefix, 2)
			c.stop(cmd)
			err := cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = -1
			}
			se := cmd.Stderr.(*bytes.Buffer).String()
			if code != c.code {
				t.Fatalf("exit %d (%v), want %d:\n%s", code, err, c.code, se)
			}
			if c.name == "server stopped" && !strings.Contains(se, "s3://bkt/"+prefix+"/") {
				t.Fatalf("the error names no object:\n%s", se)
			}
			if exists(srv.Path("bkt", prefix+"/.bpconvert.json")) {
				t.Fatal("an interrupted run committed its record")
			}
			if shardsIn(prefix) == len(filterShards(want)) {
				t.Fatalf("every shard was uploaded before the run was stopped; the test proves nothing")
			}
			if c.name == "server stopped" {
				srv.Restart()
			}
			proxy.SetDelay(0)
			if c.name == "SIGTERM" {
				if n := pendingUploads(t, srv, "bkt"); n != 0 {
					t.Fatalf("%d multipart uploads left after SIGTERM", n)
				}
			}
			r := bpS3(t, env, args(dst)...)
			if r.code != 0 {
				t.Fatalf("rerun: exit %d: %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "resuming an interrupted run") {
				t.Fatalf("the rerun did not resume:\n%s", r.stderr)
			}
			sameOutput(t, storeTree(t, srv, "bkt", prefix), want)
		})
	}
}

// filterShards returns the shard names of a local output.
func filterShards(tree map[string][]byte) []string {
	var out []string
	for n := range tree {
		if strings.HasPrefix(n, "media/pack-") && strings.HasSuffix(n, ".zip") {
			out = append(out, n)
		}
	}
	return out
}

// s3DryRun runs a converter's dry run (run is called with --dry-run --json
// SRC planDst) on the local source and on its copy in the bucket, read
// through proxy; it fails unless the two plans are the same but for the
// source, which names the bucket's copy, and neither wrote planDst. It
// returns the bucket run's summary and the bytes the proxy sent for it.
func s3DryRun(t *testing.T, srv *s3test.Server, proxy *s3test.Proxy, run func(env []string, args ...string) result, local, remote, planDst string) (map[string]any, int64) {
	t.Helper()
	lp := run(nil, "--dry-run", "--json", local, planDst)
	before := proxy.BytesSent()
	rp := run(proxy.Env(srv), "--dry-run", "--json", remote, planDst)
	sent := proxy.BytesSent() - before
	if lp.code != 0 || rp.code != 0 {
		t.Fatalf("dry runs: exit %d %s; exit %d %s", lp.code, lp.stderr, rp.code, rp.stderr)
	}
	lplan, err := plan.ParseJSON(strings.NewReader(lp.stdout))
	if err != nil {
		t.Fatal(err)
	}
	rplan, err := plan.ParseJSON(strings.NewReader(rp.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if rplan.Source.Path != remote {
		t.Errorf("plan source %q, want %q", rplan.Source.Path, remote)
	}
	rplan.Source.Path = lplan.Source.Path
	if a, b := planText(t, lplan), planText(t, rplan); a != b {
		t.Errorf("the bucket's plan differs from the local one:\n%s\nlocal:\n%s", b, a)
	}
	if exists(planDst) || exists(stage.Path(planDst)) {
		t.Fatal("--dry-run wrote the destination")
	}
	return lastJSON(t, rp), sent
}

// converter returns a run function for s3DryRun: bpconvert cmd with flags
// after the arguments it is given.
func converter(t *testing.T, cmd string, flags ...string) func(env []string, args ...string) result {
	return func(env []string, args ...string) result {
		t.Helper()
		return bpS3(t, env, append(append([]string{cmd}, args...), flags...)...)
	}
}

// verifyAgainstAll runs verify --json DATASET --against SRC for each pair
// and fails unless each compares payloads and finds every one the same.
func verifyAgainstAll(t *testing.T, env []string, pairs ...[2]string) {
	t.Helper()
	for _, v := range pairs {
		vr := bpS3(t, env, "verify", "--json", v[0], "--against", v[1])
		var d verifyDoc
		if err := json.Unmarshal([]byte(strings.TrimSpace(vr.stdout)), &d); err != nil {
			t.Fatalf("verify JSON: %v\n%s\n%s", err, vr.stdout, vr.stderr)
		}
		if vr.code != 0 || d.Against == nil || d.Against.Payloads == 0 || d.Against.Mismatches != 0 {
			t.Fatalf("verify %s --against %s: exit %d %+v %+v\n%s", v[0], v[1], vr.code, d.Against, d.Problems, vr.stderr)
		}
	}
}
