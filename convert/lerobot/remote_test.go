package lerobot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/srctree"
)

// uploadDataset puts every file of a generated dataset under bucket/prefix
// of a real S3 server (versitygw), through the S3 API.
func uploadDataset(t *testing.T, srv *s3test.Server, dir, bucket, prefix string) {
	t.Helper()
	c := srv.Client()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		rel, _ := filepath.Rel(dir, p)
		_, err = c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "/" + filepath.ToSlash(rel)), Body: f})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRemoteSource inspects and converts the datasets from a bucket of a
// real S3 server: the inspection finds what the local one finds, the
// conversion writes byte for byte what the local one writes (camera files
// packed whole, cut per episode, tables and meta/ copied).
func TestRemoteSource(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src")
	ctx := context.Background()
	for _, name := range []string{"v2.1", "v3.0"} {
		t.Run(name, func(t *testing.T) {
			dir := dataset(t, name)
			uploadDataset(t, srv, dir, "src", name)
			opts := Options{Engine: testEngine(t, true)}
			local, err := Inspect(ctx, dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			st := &objstore.Stats{}
			tr, err := srctree.Open(ctx, "s3://src/"+name, srv.Reach(objstore.Options{Stats: st}))
			if err != nil {
				t.Fatal(err)
			}
			remote, err := InspectTree(ctx, tr, opts)
			if err != nil {
				t.Fatal(err)
			}
			lp, rp := local.Plan("/out"), remote.Plan("/out")
			if rp.Source.Path != "s3://src/"+name {
				t.Errorf("source %q", rp.Source.Path)
			}
			rp.Source.Path = lp.Source.Path
			if a, b := planString(t, lp), planString(t, rp); a != b {
				t.Fatalf("plans differ:\n%s\nlocal:\n%s", b, a)
			}
			planned := st.BytesRead()
			ldst, rdst := filepath.Join(t.TempDir(), "l"), filepath.Join(t.TempDir(), "r")
			if _, err := Convert(ctx, local, converttest.Dest(t, ldst), nil); err != nil {
				t.Fatal(err)
			}
			res, err := Convert(ctx, remote, converttest.Dest(t, rdst), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Summary.Source != "s3://src/"+name {
				t.Errorf("summary source %q", res.Summary.Source)
			}
			want, got := treeSums(t, ldst), treeSums(t, rdst)
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("%d files from the bucket, %d from the local copy", len(got), len(want))
			}
			for rel, sum := range want {
				if got[rel] != sum {
					t.Errorf("%s differs from the local conversion's", rel)
				}
			}
			var srcBytes int64
			for _, p := range treeFiles(t, dir) {
				fi, _ := os.Stat(p)
				srcBytes += fi.Size()
			}
			t.Logf("%s: %d source bytes; the plan fetched %d, the conversion %d more", name, srcBytes, planned, st.BytesRead()-planned)
		})
	}
}

// treeFiles lists the regular files under dir.
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			out = append(out, p)
		}
		return err
	})
	return out
}

// TestRemoteSourceFailures: a bucket that stops answering after the
// listing is a failure of the store, naming the object, not bad input;
// an object removed after the listing is bad input naming it.
func TestRemoteSourceFailures(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src")
	ctx := context.Background()
	uploadDataset(t, srv, dataset(t, "v3.0"), "src", "v3.0")
	opts := Options{Engine: testEngine(t, true)}

	tr, err := srctree.Open(ctx, "s3://src/v3.0", srv.Reach(objstore.Options{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("src"), Key: aws.String("v3.0/meta/episodes/chunk-000/file-001.parquet")}); err != nil {
		t.Fatal(err)
	}
	_, err = InspectTree(ctx, tr, opts)
	if !errors.Is(err, convert.ErrInvalidInput) || !strings.Contains(err.Error(), "meta/episodes/chunk-000/file-001.parquet") {
		t.Fatalf("an object removed after the listing: %v", err)
	}

	tr, err = srctree.Open(ctx, "s3://src/v3.0", srv.Reach(objstore.Options{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	defer srv.Restart()
	_, err = InspectTree(ctx, tr, opts)
	if err == nil || errors.Is(err, convert.ErrInvalidInput) || !strings.Contains(err.Error(), "s3://src/v3.0/meta/info.json") {
		t.Fatalf("a stopped server: %v", err)
	}
}

// planString renders a plan as text.
func planString(t *testing.T, p plan.Plan) string {
	t.Helper()
	var b strings.Builder
	if err := plan.RenderText(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
