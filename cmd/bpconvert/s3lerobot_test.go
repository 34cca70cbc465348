package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// lerobotBig are the datasets of fixtures/parquet/lerobot.mjs with camera
// files of 320x240 frames under ffmpeg's noise filter (0.2 to 3.7 MB each,
// 5 to 7 MB per dataset), for the tests that measure what reading them
// from a bucket fetches.
var lerobotBig = testtool.Generated{Project: "parquet", Script: "lerobot.mjs", Args: []string{"320x240"}, Need: []string{"ffmpeg", "ffprobe"}}

// sourceFigures sums the files of a local dataset: all of them, the camera
// files (*.mp4) and the others, and the bytes under meta/.
type sourceFigures struct {
	bytes, metaBytes int64
	videos, others   int64
}

func figures(t *testing.T, dir string) sourceFigures {
	t.Helper()
	var f sourceFigures
	for name, b := range localTree(t, dir) {
		f.bytes += int64(len(b))
		if strings.HasSuffix(name, ".mp4") {
			f.videos++
		} else {
			f.others++
		}
		if strings.HasPrefix(name, "meta/") {
			f.metaBytes += int64(len(b))
		}
	}
	return f
}

// Allowances of the byte counts of TestS3Lerobot: a run fetches each file
// it reads once (5% allowed for the HTTP bodies' own overhead) plus, for
// each camera file, the blocks its scan reads around the MP4 boxes (at
// most two blocks of 16 KiB each), for each other file one block (an
// episode table's footer read by the plan before it is copied), and the
// two listings of the prefix.
const (
	perVideo = 2 * 16 << 10
	perFile  = 16 << 10
	listings = 64 << 10
)

// TestS3Lerobot converts LeRobot datasets (v2.0, v2.1, v3.0, made by the
// ffmpeg CLI and DuckDB) uploaded to a real S3 server (versitygw) through
// the S3 API: the plan of the bucket's copy is the local copy's and
// fetches its metadata and MP4 boxes only; the conversion into a local
// directory and into another bucket is byte-identical to the local
// conversion and fetches every file once; the run record names the
// objects, a retry is already done, a changed object is noticed; verify
// --against compares with the bucket's copy.
func TestS3Lerobot(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src", "dst")
	proxy := s3test.NewProxy(t, srv)
	env := srv.Env()
	root := lerobotBig.Dir(t)
	for _, name := range []string{"v2.0", "v2.1", "v3.0"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			upload(t, srv, dir, "src", name)
			src := "s3://src/" + name
			fig := figures(t, dir)
			out := t.TempDir()

			local := filepath.Join(out, "local")
			if r := bp(t, "convert-lerobot", "--yes", "--quiet", dir, local); r.code != 0 {
				t.Fatalf("local run: %+v", r)
			}
			want := localTree(t, local)

			// The plan: the local one, from the metadata and the MP4 boxes.
			planDst := filepath.Join(out, "planned")
			doc, dryBytes := s3DryRun(t, srv, proxy, converter(t, "convert-lerobot"), dir, src, planDst)
			fetched, requests := doc["bytes_fetched"].(float64), doc["fetch_requests"].(float64)
			dryBound := fig.metaBytes + fig.videos*perVideo + listings
			t.Logf("%s: dry run fetched %d bytes (%v by the summary, %v requests) of a %d-byte source (%d under meta/, %d camera files); bound %d",
				name, dryBytes, fetched, requests, fig.bytes, fig.metaBytes, fig.videos, dryBound)
			if fetched <= 0 || int64(fetched) > dryBytes || dryBytes > dryBound || dryBytes > fig.bytes/5 {
				t.Errorf("the dry run fetched %d bytes (summary %v), bound %d", dryBytes, fetched, dryBound)
			}

			// s3 -> local, through the proxy that counts the bytes.
			fromStore := filepath.Join(out, "fromstore")
			before := proxy.BytesSent()
			r := bpS3(t, proxy.Env(srv), "convert-lerobot", "--yes", "--json", src, fromStore)
			runBytes := proxy.BytesSent() - before
			if r.code != 0 {
				t.Fatalf("s3 to local: exit %d: %s", r.code, r.stderr)
			}
			m := lastJSON(t, r)
			bound := fig.bytes + fig.bytes/20 + fig.videos*perVideo + fig.others*perFile + listings
			t.Logf("%s: the conversion fetched %d bytes (%v by the summary, %v requests) of a %d-byte source in %d files; bound %d",
				name, runBytes, m["bytes_fetched"], m["fetch_requests"], fig.bytes, fig.videos+fig.others, bound)
			if runBytes < fig.bytes || runBytes > bound || m["source"] != src || m["status"] != "ok" {
				t.Errorf("the conversion fetched %d bytes of a %d-byte source (bound %d); summary %v", runBytes, fig.bytes, bound, m)
			}
			sameOutput(t, localTree(t, fromStore), want)
			rec, err := converttest.Dest(t, fromStore).ReadRecord(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(rec.Sources)) != fig.videos+fig.others || !strings.HasPrefix(rec.Sources[0].Path, src+"/") {
				t.Errorf("the record names %d sources (%v...), want the %d objects under %s", len(rec.Sources), rec.Sources[0], fig.videos+fig.others, src)
			}
			if r := bpS3(t, env, "convert-lerobot", "--yes", "--json", src, fromStore); r.code != 0 || lastJSON(t, r)["status"] != "already_done" {
				t.Fatalf("retry: exit %d %s %s", r.code, r.stdout, r.stderr)
			}

			// s3 -> s3
			dst := "s3://dst/" + name
			if r := bpS3(t, env, "convert-lerobot", "--yes", "--quiet", "--staging", t.TempDir(), src, dst); r.code != 0 {
				t.Fatalf("s3 to s3: %+v", r)
			}
			sameOutput(t, storeTree(t, srv, "dst", name), want)
			if r := bpS3(t, env, "convert-lerobot", "--yes", "--json", src, dst); r.code != 0 || lastJSON(t, r)["status"] != "already_done" {
				t.Fatalf("retry into the bucket: exit %d %s %s", r.code, r.stdout, r.stderr)
			}

			// verify --against the bucket's copy, from either side.
			verifyAgainstAll(t, env, [2]string{local, src}, [2]string{dst, src}, [2]string{dst, dir})

			// A changed object: the rerun is refused, naming the change.
			if _, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("src"),
				Key: aws.String(name + "/meta/info.json"), Body: bytes.NewReader(append(readFile(t, filepath.Join(dir, "meta", "info.json")), '\n'))}); err != nil {
				t.Fatal(err)
			}
			if r := bpS3(t, env, "convert-lerobot", "--yes", src, fromStore); r.code != exitUsage || !strings.Contains(r.stderr, "different run") || !strings.Contains(r.stderr, "meta/info.json") {
				t.Fatalf("rerun after a change: exit %d: %s", r.code, r.stderr)
			}
		})
	}
}

// planText renders a plan for comparison.
func planText(t *testing.T, p plan.Plan) string {
	t.Helper()
	var b bytes.Buffer
	if err := plan.RenderText(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestS3LerobotErrors: a missing bucket, refused credentials and a bad
// bucket name exit 2; an empty prefix, a missing table or camera file exit
// 3 naming the object; tables with image features in a bucket are refused
// (exit 2) with a hint; no message carries a credential.
func TestS3LerobotErrors(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src")
	root := lerobotFixtureRoot(t)
	for _, name := range []string{"v2.0", "v2.1-images"} {
		upload(t, srv, filepath.Join(root, name), "src", name)
	}
	upload(t, srv, filepath.Join(root, "v2.0"), "src", "novideo")
	upload(t, srv, filepath.Join(root, "v2.0"), "src", "notable")
	c := srv.Client()
	for _, key := range []string{"novideo/videos/chunk-000/observation.images.wrist/episode_000001.mp4", "notable/data/chunk-000/episode_000002.parquet"} {
		if _, err := c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("src"), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}

	wrong := append(srv.Env(), "AWS_SECRET_ACCESS_KEY=wrongSECRETwrongSECRETwrong")
	for _, c := range []struct {
		name      string
		env       []string
		src       string
		args      []string
		code      int
		words     []string
		hintWords string
	}{
		{"missing bucket", srv.Env(), "s3://no-such-bucket/v2.0", nil, exitUsage, []string{"bucket no-such-bucket does not exist"}, "create the bucket"},
		{"wrong credentials", wrong, "s3://src/v2.0", nil, exitUsage, []string{"credentials were refused"}, "check the credentials"},
		{"bad bucket name", srv.Env(), "s3://Bad_Name/v2.0", nil, exitUsage, []string{"not a valid bucket name"}, "s3://BUCKET/PREFIX"},
		{"empty prefix", srv.Env(), "s3://src/nothing", nil, exitInvalid, []string{"s3://src/nothing holds no objects"}, ""},
		{"missing camera file", srv.Env(), "s3://src/novideo", nil, exitInvalid,
			[]string{"s3://src/novideo/videos/chunk-000/observation.images.wrist/episode_000001.mp4 is missing (no such object)"}, ""},
		{"missing table", srv.Env(), "s3://src/notable", nil, exitInvalid,
			[]string{"episode 2: table s3://src/notable/data/chunk-000/episode_000002.parquet is missing (no such object)"}, ""},
		{"image features", srv.Env(), "s3://src/v2.1-images", nil, exitUsage, []string{"observation.image", "extracted from the tables of a local dataset only"}, "--images skip"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			for _, mode := range []string{"--dry-run", "--yes"} {
				r := bpS3(t, c.env, append([]string{"convert-lerobot", mode, c.src, dst}, c.args...)...)
				if r.code != c.code {
					t.Fatalf("%s: exit %d, want %d:\n%s", mode, r.code, c.code, r.stderr)
				}
				for _, w := range c.words {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("%s: stderr does not say %q:\n%s", mode, w, r.stderr)
					}
				}
				if c.hintWords != "" && !strings.Contains(r.stderr, "bpconvert: hint: ") {
					t.Errorf("%s: no hint:\n%s", mode, r.stderr)
				}
				if !strings.Contains(r.stderr, c.hintWords) {
					t.Errorf("%s: the hint does not say %q:\n%s", mode, c.hintWords, r.stderr)
				}
				for _, secret := range []string{srv.SecretKey, srv.AccessKey, "wrongSECRETwrongSECRETwrong"} {
					if strings.Contains(r.stdout+r.stderr, secret) {
						t.Fatalf("a credential is in the output:\n%s", r.stderr)
					}
				}
				if exists(dst) || exists(stage.Path(dst)) {
					t.Fatalf("a refused run wrote %s", dst)
				}
			}
		})
	}
}
