package objstore_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// TestRangeReader: a tar header pass through a RangeReader on a real S3
// server lists every member; over large members it fetches one window per
// member, over small ones the object about once.
func TestRangeReader(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "bucket-r")
	ctx := context.Background()
	stats := &objstore.Stats{}
	st, err := objstore.Open(ctx, "s3://bucket-r/p", srv.Reach(objstore.Options{Stats: stats}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		members, size int
		maxFetched    int64
	}{
		{"large members", 8, 3 << 20, 8*(64<<10) + 64<<10},
		{"small members", 200, 10 << 10, 200*(10<<10+1024) + 64<<10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			for i := range tc.members {
				if err := tw.WriteHeader(&tar.Header{Name: string(rune('a'+i%26)) + itoa(i), Size: int64(tc.size), Mode: 0o644}); err != nil {
					t.Fatal(err)
				}
				tw.Write(bytes.Repeat([]byte{byte(i)}, tc.size))
			}
			tw.Close()
			name := tc.name + ".tar"
			if err := st.Put(ctx, name, bytes.NewReader(b.Bytes()), int64(b.Len()), objstore.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			obj, err := st.Open(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			before := stats.BytesRead()
			tr := tar.NewReader(objstore.NewRangeReader(obj, 64<<10))
			n := 0
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if h.Size != int64(tc.size) {
					t.Fatalf("member %d: size %d", n, h.Size)
				}
				n++
			}
			fetched := stats.BytesRead() - before
			if n != tc.members || fetched > tc.maxFetched {
				t.Fatalf("%d members listed (want %d), %d bytes fetched of %d (at most %d)", n, tc.members, fetched, b.Len(), tc.maxFetched)
			}
			t.Logf("%d members, %d of %d bytes fetched", n, fetched, b.Len())
		})
	}
}

func itoa(i int) string {
	return string([]byte{byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
}
