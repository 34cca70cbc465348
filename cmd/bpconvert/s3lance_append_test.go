package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// TestS3LanceAppend converts a Lance dataset pylance 14.0.3 wrote, from one
// bucket of a real S3 server (versitygw) into another, lets pylance append
// 60 rows of 256 KiB, uploads the new files and runs --append while a
// pylance reader opens the output's table in the bucket over and over:
// the run fetches the new fragments' data files and the manifests, not a
// byte of the converted fragments (fetched bytes at most the new data
// files' bytes plus 256 KiB of manifests and listings); the reader sees
// the old version or the new one, whole; verify --against the bucket's
// dataset passes.
func TestS3LanceAppend(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	srv := s3test.Start(t, "src", "dst")
	env := srv.Env()
	dir := filepath.Join(t.TempDir(), "g.lance")
	growLance(t, py, dir, "binary", "0")
	growLance(t, py, dir, "binary", "big30")
	older := testtool.FileSums(t, dir)
	upload(t, srv, dir, "src", "g.lance")
	src, dst := "s3://src/g.lance", "s3://dst/out"
	args := []string{"convert-lance", src, dst, "--column", "img", "--yes", "--json"}
	if r := bpS3(t, env, args...); r.code != exitOK {
		t.Fatalf("first conversion: exit %d: %s", r.code, r.stderr)
	}
	before := map[string]bool{}
	for _, n := range entryNames(t, filepath.Join(dir, "data")) {
		before[n] = true
	}
	growLance(t, py, dir, "binary", "big60")
	var newBytes int64
	for _, n := range entryNames(t, filepath.Join(dir, "data")) {
		if !before[n] {
			fi, err := os.Stat(filepath.Join(dir, "data", n))
			if err != nil {
				t.Fatal(err)
			}
			newBytes += fi.Size()
		}
	}
	// Upload what pylance added (the dataset's other objects stay as
	// they were).
	added := t.TempDir()
	for rel, sum := range testtool.FileSums(t, dir) {
		if old, ok := older[rel]; ok && old == sum {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err == nil {
			err = os.MkdirAll(filepath.Dir(filepath.Join(added, rel)), 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(added, rel), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	upload(t, srv, added, "src", "g.lance")

	opts := map[string]string{"aws_access_key_id": srv.AccessKey, "aws_secret_access_key": srv.SecretKey,
		"aws_endpoint": srv.Endpoint, "aws_region": "us-east-1", "allow_http": "true"}
	reader := startLanceReader(t, py, env, dst+"/table.lance", map[string]int{"2": 50, "3": 110}, opts)
	r := bpS3(t, env, append(args, "--append")...)
	reader.stop(t, " in the bucket")
	if r.code != exitOK {
		t.Fatalf("append: exit %d: %s", r.code, r.stderr)
	}
	doc := lastJSON(t, r)
	fetched := int64(doc["bytes_fetched"].(float64))
	t.Logf("the append fetched %d bytes; the new fragments' data files hold %d", fetched, newBytes)
	if fetched < 60<<18 || fetched > newBytes+256<<10 {
		t.Errorf("the append fetched %d bytes; the new data files hold %d (want no more than 256 KiB beyond)", fetched, newBytes)
	}
	if r := bpS3(t, env, "verify", dst, "--against", src); r.code != exitOK {
		t.Fatalf("verify --against: %s%s", r.stdout, r.stderr)
	}
}
