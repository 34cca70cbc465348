package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// faultLimit is how long one run through a faulty proxy may take before
// the test calls it hung: the bounds are set to 2 s and 3 attempts, so a
// run that gives up does so within about 20 s.
const faultLimit = 90 * time.Second

// bpBounded runs the binary like bpS3 but kills it, and fails the test,
// should it run past faultLimit.
func bpBounded(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), faultLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = append(cleanAWSEnv(), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("bpconvert %s: still running after %s (hung); stderr:\n%s", strings.Join(args, " "), time.Since(start).Round(time.Second), se.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, so.String(), se.String()}
}

// Request kinds a fault applies to.
func rangedGet(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get("Range") != ""
}
func listing(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Query().Has("list-type")
}
func anyPut(r *http.Request) bool { return r.Method == http.MethodPut }

// faultKind is one fault the proxy injects: into the first times requests
// that match (every one when times is 0).
type faultKind struct {
	name  string
	fault s3test.Fault
	match func(*http.Request) bool
	times int
	// code is the exit code wanted; words, when set, must be in stderr.
	code  int
	words string
}

// inject makes the proxy apply f for the rest of the subtest and returns
// how many requests it faulted so far.
func inject(t *testing.T, proxy *s3test.Proxy, f faultKind) func() int {
	var mu sync.Mutex
	n := 0
	proxy.SetFaults(func(_ int, r *http.Request) s3test.Fault {
		mu.Lock()
		defer mu.Unlock()
		if !f.match(r) || (f.times > 0 && n >= f.times) {
			return s3test.Pass
		}
		n++
		return f.fault
	})
	t.Cleanup(func() { proxy.SetFaults(nil) })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// TestS3FaultClasses runs commands in both directions through a proxy that
// stalls, resets, truncates, swaps and garbles what the server sends, and
// checks the class of each outcome: a fault that a retry gets past ends
// with exit 0 and the output of a clean run; one that lasts ends with
// exit 1 naming the object, never exit 3 (the data is not at fault) and
// never a hang; an object overwritten while it is read ends with exit 1
// and no output.
func TestS3FaultClasses(t *testing.T) {
	// Two tars of about 9.3 MB: each is read in two ranged GETs.
	srv, root, src := s3WDS(t, "src", wdsSize{2, 30, 300000}, "src", "dst")
	proxy := s3test.NewProxy(t, srv)
	proxy.SetSwap(func(p string) string {
		// the same range of the neighbouring tar or shard
		return strings.NewReplacer("-0000.", "-0001.", "-0001.", "-0000.").Replace(p)
	})
	env := append(proxy.Env(srv), "BPCONVERT_S3_TIMEOUT=2", "BPCONVERT_S3_CONNECT_TIMEOUT=2", "AWS_MAX_ATTEMPTS=3")

	// Clean runs, straight to the server.
	clean := func(args ...string) result {
		t.Helper()
		r := bpBounded(t, srv.Env(), args...)
		if r.code != 0 {
			t.Fatalf("clean run %v: %+v", args, r)
		}
		return r
	}
	cleanWDS, cleanPack := filepath.Join(root, "clean-wds"), filepath.Join(root, "clean-pack")
	clean("convert-wds", "--yes", "--quiet", "--max-members", "16", "s3://src/wds", cleanWDS)
	clean("pack", "--quiet", "s3://src/wds", cleanPack)
	clean("convert-wds", "--yes", "--quiet", "--max-members", "16", "--staging", filepath.Join(root, "st0"), src, "s3://dst/clean-wds")
	clean("pack", "--quiet", "--staging", filepath.Join(root, "st1"), src, "s3://dst/clean-pack")
	upload(t, srv, cleanWDS, "dst", "ds")
	cleanLs := clean("ls", "s3://dst/ds/media").stdout
	cleanCat := clean("cat", "0000010.jpg", "s3://dst/ds/media").stdout
	clean("verify", "--quiet", "s3://dst/ds", "--against", "s3://src/wds")
	if len(cleanCat) != 300000 {
		t.Fatalf("clean cat wrote %d bytes", len(cleanCat))
	}

	storeOut := func(prefix string) map[string][]byte {
		m := storeTree(t, srv, "dst", prefix)
		delete(m, ".bpconvert.json")
		return m
	}
	type command struct {
		name  string
		args  func(out string) []string
		check func(t *testing.T, r result, out string) // of a run that exits 0
	}
	sameLocal := func(want string) func(t *testing.T, r result, out string) {
		return func(t *testing.T, r result, out string) { sameOutput(t, localTree(t, out), localTree(t, want)) }
	}
	sameStore := func(want string) func(t *testing.T, r result, out string) {
		return func(t *testing.T, r result, out string) {
			sameOutput(t, storeOut(strings.TrimPrefix(out, "s3://dst/")), storeOut(want))
		}
	}
	wdsFrom := command{"convert-wds from s3", func(out string) []string {
		return []string{"convert-wds", "--yes", "--quiet", "--max-members", "16", "s3://src/wds", out}
	}, sameLocal(cleanWDS)}
	packFrom := command{"pack from s3", func(out string) []string { return []string{"pack", "--quiet", "s3://src/wds", out} }, sameLocal(cleanPack)}
	wdsTo := command{"convert-wds to s3", func(out string) []string {
		return []string{"convert-wds", "--yes", "--quiet", "--max-members", "16", "--staging", out + ".staging", src, out}
	}, sameStore("clean-wds")}
	packTo := command{"pack to s3", func(out string) []string {
		return []string{"pack", "--quiet", "--staging", out + ".staging", src, out}
	}, sameStore("clean-pack")}
	ls := command{"ls", func(string) []string { return []string{"ls", "s3://dst/ds/media"} }, func(t *testing.T, r result, _ string) {
		if r.stdout != cleanLs {
			t.Errorf("ls printed\n%s\nwant\n%s", r.stdout, cleanLs)
		}
	}}
	cat := command{"cat", func(string) []string { return []string{"cat", "0000010.jpg", "s3://dst/ds/media"} }, func(t *testing.T, r result, _ string) {
		if r.stdout != cleanCat {
			t.Errorf("cat wrote %d bytes that differ from the clean run's", len(r.stdout))
		}
	}}
	verify := command{"verify", func(string) []string {
		return []string{"verify", "--quiet", "s3://dst/ds", "--against", "s3://src/wds"}
	}, func(*testing.T, result, string) {}}

	retried := []faultKind{
		{"stall headers", s3test.StallHeaders, rangedGet, 1, 0, ""},
		{"stall mid-body", s3test.StallBody, rangedGet, 1, 0, ""},
		{"reset mid-body", s3test.ResetBody, rangedGet, 1, 0, ""},
		{"truncate body", s3test.Truncate, rangedGet, 1, 0, ""},
		{"swap object", s3test.Swap, rangedGet, 1, 0, ""},
		{"ignore range", s3test.IgnoreRange, rangedGet, 0, 0, ""},
		{"garbage listing once", s3test.GarbageXML, listing, 1, 0, ""},
	}
	lasting := []faultKind{
		// A connection that was idle may time out before the answer's
		// headers are due: either wording names the bound.
		{"stall every read", s3test.StallHeaders, rangedGet, 0, 1, "BPCONVERT_S3_TIMEOUT) (after 3 attempts)"},
		{"stall every body", s3test.StallBody, rangedGet, 0, 1, "stopped answering: no answer for 2s (the bound is set by BPCONVERT_S3_TIMEOUT) (after 3 attempts)"},
		{"truncate every read", s3test.Truncate, rangedGet, 0, 1, "ended before the bytes it announced"},
		{"garbage every listing", s3test.GarbageXML, listing, 0, 1, "could not be read"},
	}
	puts := []faultKind{
		{"stall a put", s3test.StallHeaders, anyPut, 1, 0, ""},
		{"reset a put", s3test.Reset, anyPut, 1, 0, ""},
		{"stall every put", s3test.StallHeaders, anyPut, 0, 1, "s3://dst/"},
	}
	cases := []struct {
		cmd    command
		faults []faultKind
	}{
		{wdsFrom, append(append([]faultKind{}, retried...), lasting...)},
		{packFrom, append(append([]faultKind{}, retried...), lasting...)},
		{ls, []faultKind{retried[1], retried[3], retried[4], retried[6], lasting[0]}},
		{cat, []faultKind{retried[0], retried[2], retried[4], retried[5], lasting[2]}},
		{verify, []faultKind{retried[1], retried[3], retried[5], lasting[3]}},
		{wdsTo, puts},
		{packTo, puts},
	}
	n := 0
	for _, c := range cases {
		for _, f := range c.faults {
			t.Run(c.cmd.name+"/"+f.name, func(t *testing.T) {
				n++
				out := filepath.Join(root, "out", itoa(int64(n)))
				if strings.HasSuffix(c.cmd.name, "to s3") {
					out = "s3://dst/run-" + itoa(int64(n))
				}
				faulted := inject(t, proxy, f)
				r := bpBounded(t, env, c.cmd.args(out)...)
				if faulted() == 0 {
					t.Fatal("no fault was injected")
				}
				if r.code != f.code || !strings.Contains(r.stderr, f.words) {
					t.Fatalf("exit %d (want %d, stderr with %q); stderr:\n%s", r.code, f.code, f.words, r.stderr)
				}
				if r.code == 0 {
					c.cmd.check(t, r, out)
				} else if !strings.Contains(r.stderr, "s3://") {
					t.Fatalf("the error names no object:\n%s", r.stderr)
				}
			})
		}
	}

	// An object overwritten (same size, other bytes) after its first
	// range was read: the run stops, exit 1, and writes nothing.
	orig, err := os.ReadFile(filepath.Join(src, "train-0000.tar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []command{wdsFrom, packFrom} {
		t.Run(c.name+"/overwritten mid-read", func(t *testing.T) {
			var mu sync.Mutex
			gets := 0
			proxy.SetFaults(func(_ int, r *http.Request) s3test.Fault {
				if !rangedGet(r) || !strings.HasSuffix(r.URL.Path, "/train-0000.tar") {
					return s3test.Pass
				}
				mu.Lock()
				defer mu.Unlock()
				if gets++; gets == 2 {
					other := bytes.Clone(orig)
					other[len(other)-20000] ^= 0xff // in the last member's payload
					put(t, srv, "src", "wds/train-0000.tar", other)
				}
				return s3test.Pass
			})
			defer func() {
				proxy.SetFaults(nil)
				put(t, srv, "src", "wds/train-0000.tar", orig)
			}()
			out := filepath.Join(root, "out", "overwritten-"+strings.Fields(c.name)[0])
			r := bpBounded(t, env, c.args(out)...)
			if gets < 2 {
				t.Fatalf("the tar was read in %d ranged GETs; the test needs 2", gets)
			}
			want := "s3://src/wds/train-0000.tar: it changed while it was read; rerun to convert the new version"
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Fatalf("exit %d, want 1 and %q; stderr:\n%s", r.code, want, r.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Fatalf("%s exists after the run failed", out)
			}
		})
	}
}

// put writes an object through the S3 API.
func put(t *testing.T, srv *s3test.Server, bucket, key string, b []byte) {
	if _, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
		t.Errorf("put %s/%s: %v", bucket, key, err)
	}
}

// TestS3ExitClasses: every command refuses a location that carries a
// credential, or is malformed, with exit 2 and never prints the
// credential (stderr, stdout, --json, --summary-file); a missing bucket,
// refused or missing credentials and a missing profile exit 2 whichever
// side names the bucket, a source prefix with nothing under it exits 3,
// and verify --against a source missing a tar reports the rows it lost.
func TestS3ExitClasses(t *testing.T) {
	srv, root, src := s3WDS(t, "src", wdsSize{2, 6, 2000}, "src", "dst")
	ds := filepath.Join(root, "ds")
	if r := bpS3(t, srv.Env(), "convert-wds", "--yes", "--quiet", "s3://src/wds", ds); r.code != 0 {
		t.Fatalf("clean run: %+v", r)
	}
	upload(t, srv, ds, "dst", "ds")
	// Only the first tar: the second one's samples have no source.
	b, err := os.ReadFile(filepath.Join(src, "train-0000.tar"))
	if err != nil {
		t.Fatal(err)
	}
	put(t, srv, "src", "partial/train-0000.tar", b)

	const key, secret = "AKSECRETKEYID0042", "sEcReTsEcReTsEcReT0042"
	cred := "s3://" + key + ":" + secret + "@src/wds"
	keyOnly := "s3://" + key + "@src/wds"
	out := func(name string) string { return filepath.Join(root, "out", name) }
	wrong := append(srv.Env(), "AWS_ACCESS_KEY_ID="+key, "AWS_SECRET_ACCESS_KEY="+secret)
	var noCreds []string
	for _, kv := range srv.Env() {
		if !strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") && !strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") {
			noCreds = append(noCreds, kv)
		}
	}
	noProfile := append(append([]string{}, noCreds...), "AWS_PROFILE=no-such-profile")
	for _, c := range []struct {
		name  string
		env   []string
		args  []string
		code  int
		words string
	}{
		{"ls with key and secret", srv.Env(), []string{"ls", cred}, 2, "s3://[redacted]@src/wds"},
		{"ls with a key", srv.Env(), []string{"ls", keyOnly}, 2, "credentials do not belong in a location"},
		{"cat with key and secret", srv.Env(), []string{"cat", "0000001.jpg", cred}, 2, "s3://[redacted]@src/wds"},
		{"convert-wds SRC with key and secret", srv.Env(), []string{"convert-wds", "--yes", cred, out("a")}, 2, "[redacted]"},
		{"convert-wds DST with key and secret", srv.Env(), []string{"convert-wds", "--yes", src, "s3://" + key + ":" + secret + "@dst/x"}, 2, "[redacted]"},
		{"pack SRC with key and secret", srv.Env(), []string{"pack", cred, out("b")}, 2, "[redacted]"},
		{"verify --against with key and secret", srv.Env(), []string{"verify", ds, "--against=" + cred}, 2, "[redacted]"},
		{"pack DST bad bucket name", srv.Env(), []string{"pack", src, "s3://Bad_Bucket/x"}, 2, "not a valid bucket name"},
		{"pack SRC bad bucket name", srv.Env(), []string{"pack", "s3://Bad_Bucket/x", out("c")}, 2, "not a valid bucket name"},
		{"convert-wds SRC bad bucket name", srv.Env(), []string{"convert-wds", "--yes", "s3://Bad_Bucket/x", out("d")}, 2, "not a valid bucket name"},
		{"convert-wds DST .. segment", srv.Env(), []string{"convert-wds", "--yes", src, "s3://dst/a/../b"}, 2, "segment"},
		{"pack DST // segment", srv.Env(), []string{"pack", src, "s3://dst/a//b"}, 2, "segment"},
		{"pack SRC leading //", srv.Env(), []string{"pack", "s3://src//wds", out("e")}, 2, "segment"},
		{"ls leading //", srv.Env(), []string{"ls", "s3://dst//ds/media"}, 2, "segment"},
		{"convert-wds SRC missing bucket", srv.Env(), []string{"convert-wds", "--yes", "s3://no-such-bucket/wds", out("f")}, 2, "bucket no-such-bucket does not exist"},
		{"pack SRC missing bucket", srv.Env(), []string{"pack", "s3://no-such-bucket/wds", out("g")}, 2, "bucket no-such-bucket does not exist"},
		{"convert-wds SRC wrong secret", wrong, []string{"convert-wds", "--yes", "s3://src/wds", out("h")}, 2, "check the credentials"},
		{"pack SRC wrong secret", wrong, []string{"pack", "s3://src/wds", out("i")}, 2, "check the credentials"},
		{"convert-wds SRC no credentials", noCreds, []string{"convert-wds", "--yes", "s3://src/wds", out("j")}, 2, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{"ls no credentials", noCreds, []string{"ls", "s3://dst/ds/media"}, 2, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{"pack DST missing profile", noProfile, []string{"pack", src, "s3://dst/p"}, 2, "no-such-profile"},
		{"convert-wds SRC missing prefix", srv.Env(), []string{"convert-wds", "--yes", "s3://src/nothing-here", out("k")}, 3, "no object is under s3://src/nothing-here/"},
		{"pack SRC missing prefix", srv.Env(), []string{"pack", "s3://src/nothing-here", out("l")}, 3, "no object is under s3://src/nothing-here"},
		{"bad timeout setting", append(srv.Env(), "BPCONVERT_S3_TIMEOUT=soon"), []string{"ls", "s3://dst/ds/media"}, 2, "BPCONVERT_S3_TIMEOUT"},
		{"verify --against a source missing a tar", srv.Env(), []string{"verify", "s3://dst/ds", "--against", "s3://src/partial"}, 1, "s3://src/partial holds no member of it (6 of the table's 12 rows have none)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum := filepath.Join(t.TempDir(), "summary.json")
			r := bpBounded(t, c.env, append(append([]string{}, c.args...), "--json", "--summary-file", sum)...)
			if r.code != c.code || !strings.Contains(r.stderr+r.stdout, c.words) {
				t.Fatalf("exit %d (want %d, output with %q); stderr:\n%s\nstdout:\n%s", r.code, c.code, c.words, r.stderr, r.stdout)
			}
			doc, _ := os.ReadFile(sum)
			if !bytes.Contains(doc, []byte(`"exit_code":`+itoa(int64(c.code)))) {
				t.Errorf("summary file:\n%s", doc)
			}
			for _, s := range []string{secret, key, srv.SecretKey} {
				if strings.Contains(r.stderr+r.stdout+string(doc), s) {
					t.Fatalf("a credential is in the output:\nstderr:\n%s\nstdout:\n%s\nsummary:\n%s", r.stderr, r.stdout, doc)
				}
			}
			for _, noise := range []string{"WARN", "SDK 20"} {
				if strings.Contains(r.stderr, noise) {
					t.Errorf("stderr carries the SDK's log lines:\n%s", r.stderr)
				}
			}
		})
	}
}
