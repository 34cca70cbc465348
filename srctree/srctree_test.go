package srctree_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/srctree"
)

// files is the dataset both trees hold.
var files = map[string]string{
	"meta/info.json":                  `{"fps": 10}`,
	"meta/episodes/chunk-000/a.jsonl": "one\ntwo\n",
	"data/chunk-000/file-000.parquet": strings.Repeat("p", 3000),
	"data.txt":                        "not under data/",
	"videos/cam/episode_000000.mp4":   strings.Repeat("v", 70000),
}

// trees returns the same files in a local directory and under a prefix of
// a bucket of a real S3 server (versitygw), uploaded through the S3 API.
func trees(t *testing.T) (srv *s3test.Server, local, remote string) {
	srv = s3test.Start(t, "src")
	local = filepath.Join(t.TempDir(), "ds")
	if err := os.MkdirAll(filepath.Join(local, "..", "ds2", "meta"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, "..", "ds2", "meta", "info.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := srv.Client()
	for name, body := range files {
		p := filepath.Join(local, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("ds/" + name), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	// an object beside the prefix that is not under it
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("ds2/meta/info.json"), Body: strings.NewReader("{}")}); err != nil {
		t.Fatal(err)
	}
	return srv, local, "s3://src/ds"
}

// TestTree: a local directory and a prefix of a bucket read alike: Stat,
// Open, ReadFile, Walk, IsDir, the errors for missing files and for names
// that leave the root.
func TestTree(t *testing.T) {
	t.Parallel()
	srv, local, remote := trees(t)
	ctx := context.Background()
	for _, loc := range []string{local, remote} {
		t.Run(map[bool]string{true: "s3", false: "local"}[objstore.IsRemote(loc)], func(t *testing.T) {
			tr, err := srctree.Open(ctx, loc, srv.Reach(objstore.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if tr.Remote() != objstore.IsRemote(loc) || tr.Empty() || tr.Location() != loc {
				t.Fatalf("remote %v empty %v location %s", tr.Remote(), tr.Empty(), tr.Location())
			}
			for name, body := range files {
				e, err := tr.Stat(name)
				if err != nil || e.Size != int64(len(body)) || e.Name != name {
					t.Fatalf("Stat(%s) = %+v, %v", name, e, err)
				}
				b, err := tr.ReadFile(ctx, name, 1<<20)
				if err != nil || string(b) != body {
					t.Fatalf("ReadFile(%s): %d bytes, %v", name, len(b), err)
				}
				f, err := tr.Open(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				p := make([]byte, 10)
				if n, err := f.ReadAt(p, f.Size()-5); n != 5 || !errors.Is(err, io.EOF) || string(p[:5]) != body[len(body)-5:] {
					t.Errorf("%s: ReadAt past the end: %d, %v", name, n, err)
				}
				rc := srctree.Stream(ctx, f)
				all, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || string(all) != body {
					t.Errorf("%s: Stream: %d bytes, %v", name, len(all), err)
				}
				f.Close()
			}
			if _, err := tr.ReadFile(ctx, "data/chunk-000/file-000.parquet", 100); err == nil || !strings.Contains(err.Error(), "larger than 100 bytes") {
				t.Errorf("ReadFile over its limit: %v", err)
			}
			for _, name := range []string{"meta/missing.json", "meta"} {
				if _, err := tr.Stat(name); !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, srcfile.ErrNotRegular) {
					t.Errorf("Stat(%s): %v", name, err)
				}
			}
			if _, err := tr.Open(ctx, "meta/missing.json"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Open of a missing file: %v", err)
			}
			if _, err := tr.Open(ctx, "../ds2/meta/info.json"); !errors.Is(err, srcfile.ErrOutside) {
				t.Errorf("Open of a name outside the root: %v", err)
			}
			var walked []string
			err = tr.Walk(ctx, "meta", func(e srctree.Entry) error {
				if e.Mode.IsRegular() {
					walked = append(walked, e.Name)
				}
				return nil
			})
			if err != nil || strings.Join(walked, ",") != "meta/episodes/chunk-000/a.jsonl,meta/info.json" {
				t.Errorf("Walk(meta): %v, %v", walked, err)
			}
			if err := tr.Walk(ctx, "nothing", func(srctree.Entry) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Walk of a missing directory: %v", err)
			}
			for dir, want := range map[string]bool{"data": true, "meta/episodes": true, "dat": false, "data.txt": false, "nothing": false} {
				if got, err := tr.IsDir(dir); got != want || err != nil {
					t.Errorf("IsDir(%s) = %v, %v; want %v", dir, got, err, want)
				}
			}
			if tr.Err() != nil {
				t.Errorf("Err: %v", tr.Err())
			}
		})
	}
}

// TestOpenErrors: a missing bucket and refused credentials are the
// store's errors; an empty prefix is an empty tree; a local root that is a
// file is refused.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	srv, local, _ := trees(t)
	ctx := context.Background()
	if _, err := srctree.Open(ctx, "s3://no-such-bucket/x", srv.Reach(objstore.Options{})); !errors.Is(err, objstore.ErrNoBucket) {
		t.Errorf("missing bucket: %v", err)
	}
	tr, err := srctree.Open(ctx, "s3://src/nothing", srv.Reach(objstore.Options{}))
	if err != nil || !tr.Empty() {
		t.Errorf("empty prefix: %v, %v", tr, err)
	}
	if _, err := srctree.Open(ctx, filepath.Join(local, "data.txt"), srv.Reach(objstore.Options{})); !errors.Is(err, srctree.ErrNotDir) {
		t.Errorf("a file as the root: %v", err)
	}
	wrong := srv.Reach(objstore.Options{})
	wrong.Credentials.SecretAccessKey = "WRONG" + srv.SecretKey
	if _, err := srctree.Open(ctx, "s3://src/ds", wrong); !errors.Is(err, objstore.ErrDenied) {
		t.Errorf("wrong secret: %v", err)
	}
}

// TestOpenSource: a directory or a prefix with objects under it opens as
// Open does; a single file or object opens as the tree of its directory
// or prefix, the file named (locally even when it is a link that leads
// out of the directory, which other files may not), other objects looked
// up by name, once each, without a listing; a location in a bucket that
// names nothing is missing; a local root that is a symbolic link is
// walked.
func TestOpenSource(t *testing.T) {
	t.Parallel()
	srv, local, remote := trees(t)
	ctx := context.Background()
	outside := filepath.Join(t.TempDir(), "elsewhere.parquet")
	if err := os.WriteFile(outside, []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(local, "data", "link.parquet")); err != nil {
		t.Fatal(err)
	}
	rootLink := filepath.Join(t.TempDir(), "ds-link")
	if err := os.Symlink(local, rootLink); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		loc, file, where string
	}{
		{local, "", local},
		{remote, "", remote},
		{rootLink, "", rootLink},
		{filepath.Join(local, "data", "chunk-000", "file-000.parquet"), "file-000.parquet", filepath.Join(local, "data", "chunk-000")},
		{filepath.Join(local, "data", "link.parquet"), "link.parquet", filepath.Join(local, "data")},
		{remote + "/data/chunk-000/file-000.parquet", "file-000.parquet", remote + "/data/chunk-000"},
		{remote + "/data.txt", "data.txt", remote},
	} {
		t.Run(c.loc, func(t *testing.T) {
			st := &objstore.Stats{}
			tr, file, err := srctree.OpenSource(ctx, c.loc, srv.Reach(objstore.Options{Stats: st}))
			if err != nil {
				t.Fatal(err)
			}
			if file != c.file || tr.Location() != c.where {
				t.Fatalf("file %q in %s, want %q in %s", file, tr.Location(), c.file, c.where)
			}
			if tr.Stats() != st || tr.Remote() != strings.HasPrefix(c.loc, "s3://") {
				t.Fatalf("Stats() %p (want %p), Remote() %v", tr.Stats(), st, tr.Remote())
			}
			if tr.Remote() != (st.Requests() > 0) {
				t.Fatalf("opening sent %d requests for %d bytes", st.Requests(), st.BytesRead())
			}
			if file == "" {
				var names []string
				err := tr.Walk(ctx, "", func(e srctree.Entry) error {
					if e.Mode.IsRegular() {
						names = append(names, e.Name)
					}
					return nil
				})
				if err != nil || !slices.Contains(names, "meta/info.json") {
					t.Fatalf("Walk: %v, %v", names, err)
				}
				return
			}
			b, err := tr.ReadFile(ctx, file, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if want := "PAR1"; c.file == "link.parquet" && string(b) != want || c.file != "link.parquet" && len(b) == 0 {
				t.Fatalf("read %q", b)
			}
			e, err := tr.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := tr.OpenEntry(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]byte, f.Size())
			if n, err := f.ReadAt(got, 0); n != len(b) || (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(got, b) {
				t.Fatalf("OpenEntry read %d bytes, %v", n, err)
			}
			f.Close()
			if !tr.Remote() {
				if _, err := tr.Stat("../../data.txt"); err == nil {
					t.Fatal("a file outside the directory was found")
				}
				return
			}
			// a single object: its siblings are looked up by name
			before := st.Requests()
			sib := map[string]string{"data.txt": "meta/info.json"}[c.file]
			for range 2 {
				if e, err := tr.Stat(sib); sib != "" && (err != nil || e.Size != int64(len(files[sib]))) {
					t.Fatalf("Stat(%s): %+v, %v", sib, e, err)
				}
				if _, err := tr.Stat("no-such-file"); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("a missing object: %v", err)
				}
			}
			// a HEAD for each name, and a listing that tells the missing
			// object from a missing bucket
			if n := st.Requests() - before; n > 3 {
				t.Errorf("two lookups of two names sent %d requests", n)
			}
		})
	}
	for _, loc := range []string{remote + "/no-such-thing", "s3://src/nothing"} {
		if _, _, err := srctree.OpenSource(ctx, loc, srv.Reach(objstore.Options{})); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), loc) {
			t.Errorf("%s: %v", loc, err)
		}
	}
}

// TestLocalError: a local location that cannot be opened gives a
// *LocalError (a missing path, a file opened as a tree); a location in a
// bucket that names nothing does not.
func TestLocalError(t *testing.T) {
	t.Parallel()
	srv, local, remote := trees(t)
	ctx := context.Background()
	var le *srctree.LocalError
	for _, loc := range []string{remote + "/no-such-thing", "s3://src/nothing"} {
		if _, _, err := srctree.OpenSource(ctx, loc, srv.Reach(objstore.Options{})); err == nil || errors.As(err, &le) {
			t.Errorf("%s: %v", loc, err)
		}
	}
	for _, open := range []func(string) error{
		func(loc string) error {
			_, _, err := srctree.OpenSource(ctx, loc, srv.Reach(objstore.Options{}))
			return err
		},
		func(loc string) error { _, err := srctree.Open(ctx, loc, srv.Reach(objstore.Options{})); return err },
	} {
		if err := open(filepath.Join(local, "nope")); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &le) {
			t.Errorf("a missing local file: %v", err)
		}
	}
	if _, err := srctree.Open(ctx, filepath.Join(local, "meta", "info.json"), srv.Reach(objstore.Options{})); !errors.Is(err, srctree.ErrNotDir) || !errors.As(err, &le) {
		t.Errorf("a local file opened as a tree: %v", err)
	}
}

// TestRemoteReads counts what reading a 20 MiB object fetches: sequential
// reads of 64 KiB (as libav reads a camera file) fetch every byte once in
// growing requests; small reads far apart one block each, nearby ones
// nothing more; every byte read is the object's.
func TestRemoteReads(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src")
	ctx := context.Background()
	body := make([]byte, 20<<20+12345)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("ds/big.mp4"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) (srctree.File, *objstore.Stats) {
		st := &objstore.Stats{}
		tr, err := srctree.Open(ctx, "s3://src/ds", srv.Reach(objstore.Options{Stats: st}))
		if err != nil {
			t.Fatal(err)
		}
		f, err := tr.Open(ctx, "big.mp4")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f, st
	}
	t.Run("sequential", func(t *testing.T) {
		f, st := open(t)
		listing := st.Requests()
		p := make([]byte, 64<<10)
		for off := int64(0); off < f.Size(); off += int64(len(p)) {
			n, err := f.ReadAt(p, off)
			if (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(p[:n], body[off:off+int64(n)]) {
				t.Fatalf("ReadAt(%d): %d bytes, %v", off, n, err)
			}
		}
		reqs := st.Requests() - listing
		t.Logf("%d bytes in %d requests", st.BytesRead(), reqs)
		if st.BytesRead() != int64(len(body)) || reqs > 12 {
			t.Errorf("sequential reads fetched %d bytes of %d in %d requests", st.BytesRead(), len(body), reqs)
		}
	})
	t.Run("scattered", func(t *testing.T) {
		f, st := open(t)
		listing := st.Requests()
		p := make([]byte, 100)
		for i, off := range []int64{0, 8, 5 << 20, 5<<20 + 200, 12 << 20, int64(len(body)) - 100, int64(len(body)) - 300} {
			n, err := f.ReadAt(p, off)
			if n != len(p) || err != nil || !bytes.Equal(p, body[off:off+100]) {
				t.Fatalf("read %d at %d: %d, %v", i, off, n, err)
			}
		}
		// blocks at 0, 5 MiB, 12 MiB and the end
		if reqs := st.Requests() - listing; reqs != 4 || st.BytesRead() > 4*srctree.BlockSize {
			t.Errorf("%d requests, %d bytes", reqs, st.BytesRead())
		}
	})
	t.Run("random", func(t *testing.T) {
		f, st := open(t)
		for i := 0; i < 300; i++ {
			off := rng.Int64N(int64(len(body)))
			p := make([]byte, rng.IntN(300<<10))
			n, err := f.ReadAt(p, off)
			want := body[off:min(int64(len(body)), off+int64(len(p)))]
			if n != len(want) || !bytes.Equal(p[:n], want) || (n < len(p)) != errors.Is(err, io.EOF) {
				t.Fatalf("read %d: %d bytes at %d: got %d, %v", i, len(p), off, n, err)
			}
		}
		t.Logf("300 random reads: %d bytes in %d requests", st.BytesRead(), st.Requests())
	})
	t.Run("exact", func(t *testing.T) {
		// four reads of 1 MiB that follow one another: fetched as asked,
		// where the same reads of the file itself run ahead
		for _, exact := range []bool{true, false} {
			f, st := open(t)
			if exact {
				f = srctree.Exact(f)
			}
			listing := st.Requests()
			p := make([]byte, 1<<20)
			for off := int64(3 << 20); off < 7<<20; off += int64(len(p)) {
				if n, err := f.ReadAt(p, off); n != len(p) || err != nil || !bytes.Equal(p, body[off:off+int64(n)]) {
					t.Fatalf("ReadAt(%d): %d bytes, %v", off, n, err)
				}
			}
			f.Close() // waits for nothing: spans fetched ahead are counted when they arrive
			t.Logf("exact %v: %d bytes in %d requests", exact, st.BytesRead(), st.Requests()-listing)
			if exact && (st.BytesRead() != 4<<20 || st.Requests()-listing != 4) {
				t.Errorf("exact reads fetched %d bytes in %d requests, want 4 MiB in 4", st.BytesRead(), st.Requests()-listing)
			}
		}
	})
	t.Run("stream", func(t *testing.T) {
		f, st := open(t)
		rc := srctree.Stream(ctx, f)
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, body) || st.BytesRead() != int64(len(body)) {
			t.Fatalf("Stream: %d bytes, %v; fetched %d", len(got), err, st.BytesRead())
		}
	})
	t.Run("server gone", func(t *testing.T) {
		st := &objstore.Stats{}
		tr, err := srctree.Open(ctx, "s3://src/ds", srv.Reach(objstore.Options{Stats: st, MaxAttempts: 1}))
		if err != nil {
			t.Fatal(err)
		}
		f, err := tr.Open(ctx, "big.mp4")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		srv.Stop()
		defer srv.Restart()
		if _, err := f.ReadAt(make([]byte, 10), 0); err == nil {
			t.Fatal("a read from a stopped server succeeded")
		}
		if err := tr.Err(); err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "s3://src/ds/big.mp4") {
			t.Fatalf("Err after the failed read: %v", err)
		}
	})
}

// TestStore: a tree in a bucket hands out its store and root key, under
// which its files are the objects of the same names; a local tree none.
func TestStore(t *testing.T) {
	t.Parallel()
	srv, local, remote := trees(t)
	ctx := context.Background()
	o := srv.Reach(objstore.Options{})
	lt, err := srctree.Open(ctx, local, o)
	if err != nil {
		t.Fatal(err)
	}
	if st, key := lt.Store(); st != nil || key != "" {
		t.Errorf("local tree: Store() = %v, %q", st, key)
	}
	dir, err := srctree.Open(ctx, remote, o)
	if err != nil {
		t.Fatal(err)
	}
	one, file, err := srctree.OpenSource(ctx, remote+"/meta/info.json", o)
	if err != nil || file != "info.json" {
		t.Fatalf("OpenSource: %q, %v", file, err)
	}
	for _, c := range []struct {
		tr        *srctree.Tree
		wantKey   string
		name, obj string
	}{
		{dir, "ds/", "videos/cam/episode_000000.mp4", "videos/cam/episode_000000.mp4"},
		{one, "ds/meta/", "info.json", "meta/info.json"},
	} {
		st, key := c.tr.Store()
		if st == nil || key != c.wantKey {
			t.Fatalf("%s: Store() = %v, %q; want the bucket's store and %q", c.tr.Location(), st, key, c.wantKey)
		}
		in, err := st.Stat(ctx, key+c.name)
		if err != nil || in.Size != int64(len(files[c.obj])) {
			t.Errorf("%s: Stat(%s%s) = %+v, %v", c.tr.Location(), key, c.name, in, err)
		}
	}
}

// TestObject: an empty tree in a bucket opens the object its location
// names with one HEAD request, its listing not repeated; one naming
// nothing is fs.ErrNotExist, and a tree with files names no object.
func TestObject(t *testing.T) {
	t.Parallel()
	srv, _, remote := trees(t)
	ctx := context.Background()
	for _, c := range []struct {
		loc, file, where string
		missing          bool
	}{
		{remote + "/data.txt", "data.txt", remote, false},
		{remote + "/data/chunk-000/file-000.parquet", "file-000.parquet", remote + "/data/chunk-000", false},
		{remote + "/no-such-thing", "", "", true},
	} {
		st := &objstore.Stats{}
		tr, err := srctree.Open(ctx, c.loc, srv.Reach(objstore.Options{Stats: st}))
		if err != nil || !tr.Empty() || st.Requests() != 1 {
			t.Fatalf("%s: Open: %v, empty %v, %d requests", c.loc, err, err == nil && tr.Empty(), st.Requests())
		}
		one, file, err := tr.Object(ctx)
		if st.Requests() != 2 {
			t.Errorf("%s: Object sent %d requests after the listing, want 1", c.loc, st.Requests()-1)
		}
		if c.missing {
			if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), c.loc) {
				t.Errorf("%s: %v", c.loc, err)
			}
			continue
		}
		if err != nil || file != c.file || one.Location() != c.where || one.Stats() != st {
			t.Fatalf("%s: %q in %v, %v", c.loc, file, one, err)
		}
		if b, err := one.ReadFile(ctx, file, 1<<20); err != nil || len(b) == 0 {
			t.Errorf("%s: read %d bytes, %v", c.loc, len(b), err)
		}
	}
	tr, err := srctree.Open(ctx, remote, srv.Reach(objstore.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.Object(ctx); err == nil {
		t.Error("a tree with files named an object")
	}
}
