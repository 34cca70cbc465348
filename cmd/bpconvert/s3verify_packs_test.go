package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// TestS3VerifyPacksAlone: packs alone in a bucket (bpconvert pack of a
// tree, blobpack 0.2.0's convert-wds of tars, uploaded) verify --against
// their source in the bucket and on local disk, and a source object
// removed from the bucket is reported as a member no source file names.
func TestS3VerifyPacksAlone(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	srv := s3test.Start(t, "bkt")
	root := t.TempDir()
	tree := filepath.Join(root, "tree")
	for i, name := range []string{"a.bin", "sub/b.bin", "sub/deep/c.bin", ".dot"} {
		p := filepath.Join(tree, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(name, 100*(i+1))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wdsDir := filepath.Join(root, "wds")
	wdsSource(t, wdsDir, 2, 5, 300)
	blobpack := filepath.Join(filepath.Dir(py), "blobpack")
	if out, err := exec.Command(blobpack, "convert-wds", wdsDir, filepath.Join(root, "out-wds"), "--shard-prefix").CombinedOutput(); err != nil {
		t.Fatalf("blobpack convert-wds: %v\n%s", err, out)
	}
	upload(t, srv, tree, "bkt", "tree")
	upload(t, srv, wdsDir, "bkt", "wds")
	upload(t, srv, filepath.Join(root, "out-wds"), "bkt", "out-wds")
	if r := bpS3(t, srv.Env(), "pack", tree, "s3://bkt/packed"); r.code != exitOK {
		t.Fatalf("pack: exit %d\n%s", r.code, r.stderr)
	}
	for _, c := range []struct {
		name, dst, src string
		code           int
		want           string
	}{
		{"tree in the bucket", "s3://bkt/packed", "s3://bkt/tree", exitOK, "4 payloads compared, 8,100 bytes"},
		{"tree on disk", "s3://bkt/packed", tree, exitOK, "4 payloads compared, 8,100 bytes"},
		{"tars in the bucket", "s3://bkt/out-wds", "s3://bkt/wds", exitOK, "(webdataset (packed by member name)): 20 payloads compared"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := bpS3(t, srv.Env(), "verify", c.dst, "--against", c.src)
			if r.code != c.code || !strings.Contains(r.stdout, c.want) {
				t.Fatalf("exit %d (want %d); output lacks %q:\n%s%s", r.code, c.code, c.want, r.stdout, r.stderr)
			}
		})
	}
	t.Run("tars in the bucket listed once", func(t *testing.T) {
		// The source is opened once: one listing serves the tree check
		// and the shards.
		px := s3test.NewProxy(t, srv)
		var lists atomic.Int64
		px.SetFaults(func(_ int, r *http.Request) s3test.Fault {
			if q := r.URL.Query(); r.Method == http.MethodGet && q.Has("list-type") && q.Get("prefix") == "wds/" {
				lists.Add(1)
			}
			return s3test.Pass
		})
		r := bpS3(t, px.Env(srv), "verify", "s3://bkt/out-wds", "--against", "s3://bkt/wds")
		if r.code != exitOK {
			t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if n := lists.Load(); n != 1 {
			t.Errorf("the source prefix was listed %d times, want 1", n)
		}
	})
	t.Run("a source object removed", func(t *testing.T) {
		if _, err := srv.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("tree/sub/b.bin")}); err != nil {
			t.Fatal(err)
		}
		r := bpS3(t, srv.Env(), "verify", "s3://bkt/packed", "--against", "s3://bkt/tree")
		if want := `pack member "sub/b.bin": no file of the source has its name (1 of the 4 members of s3://bkt/packed have none)`; r.code != exitFailure || !strings.Contains(r.stdout, want) {
			t.Fatalf("exit %d (want 1); output lacks %q:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	})
}
