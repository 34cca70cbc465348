package srctree_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"
)

// TestOpenSection: a section of a file reads as a file of its own, locally
// and in a bucket; in a bucket, ranged reads (those of a reader that goes
// front to back, whose requests grow, and Stream's) fetch the section's
// bytes and none of its neighbours'; a section past the end is refused.
func TestOpenSection(t *testing.T) {
	t.Parallel()
	srv, local, remote := trees(t)
	ctx := context.Background()
	const name = "videos/cam/episode_000000.mp4"
	body := []byte(files[name])
	off, n := int64(20000), int64(30000)
	want := body[off : off+n]
	for _, loc := range []string{local, remote} {
		t.Run(map[bool]string{true: "s3", false: "local"}[objstore.IsRemote(loc)], func(t *testing.T) {
			stats := &objstore.Stats{}
			tr, err := srctree.Open(ctx, loc, srv.Reach(objstore.Options{Stats: stats}))
			if err != nil {
				t.Fatal(err)
			}
			for _, how := range []string{"reads", "stream"} {
				f, err := tr.OpenSection(ctx, name, off, n)
				if err != nil {
					t.Fatal(err)
				}
				if f.Size() != n {
					t.Fatalf("size %d, want %d", f.Size(), n)
				}
				before := stats.BytesRead()
				var got []byte
				if how == "reads" {
					var buf [1000]byte
					for pos := int64(0); ; pos += int64(len(buf)) {
						k, err := f.ReadAt(buf[:], pos)
						got = append(got, buf[:k]...)
						if err == io.EOF {
							break
						}
						if err != nil {
							t.Fatal(err)
						}
					}
				} else {
					r := srctree.Stream(ctx, f)
					if got, err = io.ReadAll(r); err != nil {
						t.Fatal(err)
					}
					r.Close()
				}
				f.Close()
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: %d bytes read, not the section's %d", how, len(got), n)
				}
				if fetched := stats.BytesRead() - before; tr.Remote() && fetched != n {
					t.Errorf("%s: fetched %d bytes for a section of %d", how, fetched, n)
				}
			}
			if _, err := tr.OpenSection(ctx, name, off, int64(len(body))); err == nil || !strings.Contains(err.Error(), "passes the end of the file") {
				t.Errorf("a section past the end: %v", err)
			}
		})
	}
}
