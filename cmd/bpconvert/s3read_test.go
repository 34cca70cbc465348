package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// summary reads a --summary-file document.
func summary(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return m
}

// s3Dataset converts a WebDataset of two GNU tar shards (the .cls fields
// inline) into a local dataset and uploads both to a real S3 server:
// s3://data/ds holds the dataset, s3://data/src the tars.
func s3Dataset(t *testing.T) (srv *s3test.Server, src, ds string) {
	srv = s3test.Start(t, "data")
	root := t.TempDir()
	src = filepath.Join(root, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	wdsShards(t, src, 2, 40, 3000)
	ds = filepath.Join(root, "ds")
	if r := bp(t, "convert-wds", src, ds, "--yes", "--quiet", "--inline", "cls", "--max-members", "30"); r.code != 0 {
		t.Fatalf("convert-wds: %+v", r)
	}
	upload(t, srv, ds, "data", "ds")
	upload(t, srv, src, "data", "src")
	return srv, src, ds
}

// TestS3Read runs every reading command on a dataset in a real S3 server
// (versitygw) and compares what each prints with the same command on the
// local copy.
func TestS3Read(t *testing.T) {
	t.Parallel()
	srv, src, ds := s3Dataset(t)
	env := srv.Env()
	media := filepath.Join(ds, "media")

	t.Run("ls", func(t *testing.T) { s3ReadLs(t, env, media) })
	t.Run("cat", func(t *testing.T) { s3ReadCat(t, env, ds, media) })
	t.Run("unpack", func(t *testing.T) { s3ReadUnpack(t, env, media) })
	t.Run("verify", func(t *testing.T) { s3ReadVerify(t, env, src, ds) })
	t.Run("flipped byte", func(t *testing.T) { s3ReadFlipped(t, env, srv, ds) })
	t.Run("errors", func(t *testing.T) { s3ReadErrors(t, srv) })
}

// s3ReadLs (TestS3Read): ls of the pack directory and of one shard prints
// what it prints locally, and fetches bytes.
func s3ReadLs(t *testing.T, env []string, media string) {
	for _, c := range [][2]string{
		{media, "s3://data/ds/media"},
		{filepath.Join(media, "pack-0001.zip"), "s3://data/ds/media/pack-0001.zip"},
	} {
		local, remote := bpS3(t, env, "ls", c[0]), bpS3(t, env, "ls", c[1])
		if local.code != 0 || remote.code != 0 || remote.stdout != local.stdout || local.stdout == "" {
			t.Fatalf("ls %s: exit %d, %q\nlocal ls: exit %d, %q", c[1], remote.code, remote.stdout+remote.stderr, local.code, local.stdout)
		}
		lj, rj := lastJSON(t, bpS3(t, env, "ls", "--json", c[0])), lastJSON(t, bpS3(t, env, "ls", "--json", c[1]))
		lm, _ := json.Marshal(lj["members"])
		rm, _ := json.Marshal(rj["members"])
		if string(lm) != string(rm) {
			t.Fatalf("ls --json %s: members differ:\n%s\nlocal:\n%s", c[1], rm, lm)
		}
		if rj["bytes_fetched"].(float64) <= 0 {
			t.Errorf("ls --json %s: bytes_fetched %v", c[1], rj["bytes_fetched"])
		}
		t.Logf("ls %s: %v requests, %v bytes fetched", c[1], rj["fetch_requests"], rj["bytes_fetched"])
	}
}

// s3ReadCat (TestS3Read): cat of a key or a reference in the bucket prints
// the local bytes, with its CRC-32 checked, in three requests, and a range of
// them.
func s3ReadCat(t *testing.T, env []string, ds, media string) {
	sum := filepath.Join(t.TempDir(), "cat.json")
	for _, key := range []string{"000000.bin", "000031.bin", "000079.bin"} {
		local := bpS3(t, env, "cat", key, ds)
		if local.code != 0 || len(local.stdout) != 3000 {
			t.Fatalf("local cat %s: %+v", key, local)
		}
		ref := refOf(t, env, media, key)
		for _, args := range [][]string{
			{key, "s3://data/ds"},
			{key, "s3://data/ds/media"},
			{ref, "s3://data/ds"},
			{strings.Replace(ref, "::media/", "::s3://data/ds/media/", 1)},
		} {
			r := bpS3(t, env, append([]string{"cat", "--summary-file", sum}, args...)...)
			if r.code != 0 || r.stdout != local.stdout {
				t.Fatalf("cat %v: exit %d, %d bytes, %s", args, r.code, len(r.stdout), r.stderr)
			}
			m := summary(t, sum)
			if m["crc_checked"] != true || m["bytes_fetched"].(float64) <= 3000 {
				t.Errorf("cat %v: summary %v", args, m)
			}
			if len(args) == 1 || strings.HasPrefix(args[0], "zip://") {
				// a HEAD of the shard, its tail, the member
				if m["fetch_requests"].(float64) != 3 {
					t.Errorf("cat %v: %v requests, want 3", args, m["fetch_requests"])
				}
			}
		}
		r := bpS3(t, env, "cat", key, "s3://data/ds", "--offset", "1000", "--length", "10")
		if r.code != 0 || r.stdout != local.stdout[1000:1010] {
			t.Fatalf("cat --offset: exit %d %q %s", r.code, r.stdout, r.stderr)
		}
	}
}

// s3ReadUnpack (TestS3Read): unpack of the bucket's pack directory writes the
// local tree.
func s3ReadUnpack(t *testing.T, env []string, media string) {
	dst := t.TempDir()
	if r := bpS3(t, env, "unpack", media, filepath.Join(dst, "local")); r.code != 0 {
		t.Fatalf("local unpack: %+v", r)
	}
	r := bpS3(t, env, "unpack", "--json", "s3://data/ds/media", filepath.Join(dst, "remote"))
	if r.code != 0 {
		t.Fatalf("unpack: %+v", r)
	}
	sameTree(t, filepath.Join(dst, "remote"), filepath.Join(dst, "local"))
	m := lastJSON(t, r)
	t.Logf("unpack of %v members: %v requests, %v bytes fetched", m["members"], m["fetch_requests"], m["bytes_fetched"])
}

// s3ReadVerify (TestS3Read): verify of the bucket's dataset finds what it
// finds locally, and --against compares every payload with sources local or
// in the bucket.
func s3ReadVerify(t *testing.T, env []string, src, ds string) {
	lr, ld := verifyJSONEnv(t, env, ds)
	r, d := verifyJSONEnv(t, env, "s3://data/ds")
	if lr.code != 0 || r.code != 0 || d.Refs != ld.Refs || d.Members != ld.Members || len(d.Tables) != 1 || d.Refs == 0 {
		t.Fatalf("verify: exit %d %+v\nlocal: exit %d %+v\n%s", r.code, d, lr.code, ld, r.stderr)
	}
	m := lastJSON(t, r)
	t.Logf("verify s3://data/ds: %v requests, %v bytes fetched", m["fetch_requests"], m["bytes_fetched"])
	pattern := "shard-{000000..000001}.tar"
	for _, c := range [][2]string{
		{"s3://data/ds", filepath.Join(src, pattern)},
		{ds, "s3://data/src/" + pattern},
		{"s3://data/ds", "s3://data/src"},
	} {
		r, d := verifyJSONEnv(t, env, c[0], "--against", c[1])
		if r.code != 0 || d.Against == nil || d.Against.Payloads != 160 || d.Against.Inline != 80 || d.Against.Mismatches != 0 {
			t.Fatalf("verify %s --against %s: exit %d %+v %+v\n%s", c[0], c[1], r.code, d.Against, d.Problems, r.stderr)
		}
		m := lastJSON(t, r)
		t.Logf("verify %s --against %s: %v requests, %v bytes fetched", c[0], c[1], m["fetch_requests"], m["bytes_fetched"])
	}
}

// s3ReadFlipped (TestS3Read): a dataset in the bucket with one payload byte
// changed fails verify, verify --against and cat.
func s3ReadFlipped(t *testing.T, env []string, srv *s3test.Server, ds string) {
	// A copy of the dataset whose second shard has one payload byte
	// changed (so its CRC-32 and the manifest's SHA-256 disagree).
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.CopyFS(bad, os.DirFS(ds)); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(bad, "media", "pack-0001.zip")
	b, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	b[30+len("000030.bin")+100] ^= 1 // the first member's payload
	if err := os.WriteFile(shard, b, 0o644); err != nil {
		t.Fatal(err)
	}
	upload(t, srv, bad, "data", "bad")
	r, d := verifyJSONEnv(t, env, "s3://data/bad")
	probs, _ := json.Marshal(d.Problems)
	if r.code != 1 || !strings.Contains(string(probs), "pack-0001.zip:000030.bin: CRC mismatch") || !strings.Contains(string(probs), "does not match manifest") {
		t.Fatalf("verify: exit %d, problems %s\n%s", r.code, probs, r.stderr)
	}
	r, d = verifyJSONEnv(t, env, "s3://data/bad", "--against", "s3://data/src")
	if r.code != 1 || d.Against == nil || d.Against.Mismatches != 1 {
		t.Fatalf("verify --against: exit %d %+v", r.code, d.Against)
	}
	if r := bpS3(t, env, "cat", "000030.bin", "s3://data/bad"); r.code != exitInvalid || !strings.Contains(r.stderr, "CRC-32 mismatch") {
		t.Fatalf("cat of the flipped member: exit %d %s", r.code, r.stderr)
	}
}

// s3ReadErrors (TestS3Read): each error names its cause with the documented
// exit code, and no credential appears in the output or the summary.
func s3ReadErrors(t *testing.T, srv *s3test.Server) {
	for _, c := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"missing bucket", nil, []string{"ls", "s3://no-such-bucket/ds/media"}, exitUsage, "bucket no-such-bucket does not exist"},
		{"missing prefix", nil, []string{"ls", "s3://data/nothing/media"}, exitInvalid, "s3://data/nothing/media: file does not exist: no *.zip shards there"},
		{"missing shard", nil, []string{"cat", "zip://000000.bin::s3://data/ds/media/pack-0009.zip"}, exitInvalid, "pack-0009.zip: stat: no such object"},
		{"cat missing prefix", nil, []string{"cat", "000000.bin", "s3://data/nothing"}, exitInvalid, "no *.zip shards there"},
		{"verify missing bucket", nil, []string{"verify", "s3://no-such-bucket/ds"}, exitUsage, "bucket no-such-bucket does not exist"},
		{"verify missing prefix", nil, []string{"verify", "s3://data/nothing"}, exitInvalid, "no pack shards and no tables"},
		{"unpack missing prefix", nil, []string{"unpack", "s3://data/nothing", filepath.Join(t.TempDir(), "x")}, exitInvalid, "no *.zip shards there"},
		{"against missing source", nil, []string{"verify", "s3://data/ds", "--against", "s3://data/nosrc"}, exitInvalid, "no object and no tar shards there"},
		{"bad bucket name", nil, []string{"ls", "s3://No_Bucket/x"}, exitUsage, "not a valid bucket name"},
		{"wrong secret", []string{"AWS_SECRET_ACCESS_KEY=WRONGSECRETWRONGSECRET"}, []string{"ls", "s3://data/ds/media"}, exitUsage, "the credentials were refused"},
		{"wrong key", []string{"AWS_ACCESS_KEY_ID=AKWRONGWRONGKEY"}, []string{"verify", "s3://data/ds"}, exitUsage, "the credentials were refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum := filepath.Join(t.TempDir(), "summary.json")
			r := bpS3(t, append(srv.Env(), c.env...), append(c.args, "--summary-file", sum)...)
			if r.code != c.code || !strings.Contains(r.stderr, c.want) || (c.code == exitUsage && !strings.Contains(r.stderr, "bpconvert: hint: ")) {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, c.code, r.stderr)
			}
			for _, secret := range []string{srv.SecretKey, srv.AccessKey, "WRONGSECRETWRONGSECRET", "AKWRONGWRONGKEY"} {
				if strings.Contains(r.stdout+r.stderr, secret) {
					t.Fatalf("a credential is in the output:\n%s\n%s", r.stdout, r.stderr)
				}
			}
			b, _ := os.ReadFile(sum)
			for _, secret := range []string{srv.SecretKey, srv.AccessKey, "WRONGSECRETWRONGSECRET", "AKWRONGWRONGKEY"} {
				if bytes.Contains(b, []byte(secret)) {
					t.Fatalf("a credential is in the summary:\n%s", b)
				}
			}
			if m := summary(t, sum); m["exit_code"].(float64) != float64(c.code) {
				t.Fatalf("summary %v", m)
			}
		})
	}
}

// refOf returns the reference ls gives a key of the local pack directory.
func refOf(t *testing.T, env []string, dir, key string) string {
	t.Helper()
	m := lastJSON(t, bpS3(t, env, "ls", "--json", dir))
	for _, x := range m["members"].([]any) {
		mm := x.(map[string]any)
		if mm["key"] == key {
			return mm["ref"].(string)
		}
	}
	t.Fatalf("no key %s in %s", key, dir)
	return ""
}
