package objstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// stores returns a local store and one on a real S3 server, both empty.
func stores(t *testing.T) map[string]objstore.Store {
	srv := s3test.Start(t, "bucket-a")
	ctx := context.Background()
	remote, err := objstore.Open(ctx, "s3://bucket-a/some/prefix", srv.Reach(objstore.Options{PartSize: 5 << 20, Concurrency: 3}))
	if err != nil {
		t.Fatal(err)
	}
	local, err := objstore.Open(ctx, t.TempDir()+"/new/dir", objstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]objstore.Store{"local": local, "s3": remote}
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for kind, st := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			small := random(t, 1000)
			big := random(t, 12<<20+12345) // three parts of 5 MiB on S3
			if err := st.Put(ctx, "media/pack-0000.zip", bytes.NewReader(small), int64(len(small)), objstore.PutOptions{SHA256: "ab12"}); err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctx, "media/pack-0001.zip", bytes.NewReader(big), int64(len(big)), objstore.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := st.Put(ctx, "a.parquet", bytes.NewReader(nil), 0, objstore.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			// Ranged reads, concurrently, at the edges too.
			obj, err := st.Open(ctx, "media/pack-0001.zip")
			if err != nil {
				t.Fatal(err)
			}
			if obj.Size() != int64(len(big)) {
				t.Fatalf("size %d, want %d", obj.Size(), len(big))
			}
			var wg sync.WaitGroup
			for _, r := range [][2]int{{0, 1}, {5 << 20, 100}, {len(big) - 7, 7}, {len(big) - 7, 100}, {123, 9 << 20}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p := make([]byte, r[1])
					n, err := obj.ReadAt(p, int64(r[0]))
					want := big[r[0]:min(len(big), r[0]+r[1])]
					if n != len(want) || !bytes.Equal(p[:n], want) {
						t.Errorf("ReadAt(%d, %d) = %d bytes, want %d", r[0], r[1], n, len(want))
					}
					if short := len(want) < r[1]; short != errors.Is(err, io.EOF) || (!short && err != nil) {
						t.Errorf("ReadAt(%d, %d): err %v", r[0], r[1], err)
					}
				}()
			}
			wg.Wait()
			obj.Close()
			b, err := objstore.ReadAll(ctx, st, "media/pack-0000.zip", 1<<20)
			if err != nil || !bytes.Equal(b, small) {
				t.Fatalf("ReadAll: %v", err)
			}
			var names []string
			if err := st.List(ctx, "media/", func(in objstore.Info) error {
				names = append(names, in.Name)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names, ","); got != "media/pack-0000.zip,media/pack-0001.zip" {
				t.Fatalf("List(media/) = %s", got)
			}
			names = nil
			st.List(ctx, "", func(in objstore.Info) error { names = append(names, in.Name); return nil })
			if got := strings.Join(names, ","); got != "a.parquet,media/pack-0000.zip,media/pack-0001.zip" {
				t.Fatalf("List() = %s", got)
			}
			info, err := st.Stat(ctx, "media/pack-0000.zip")
			if err != nil || info.Size != 1000 {
				t.Fatalf("Stat = %+v, %v", info, err)
			}
			if kind == "s3" && info.SHA256 != "ab12" {
				t.Fatalf("Stat.SHA256 = %q, want the digest recorded at put", info.SHA256)
			}
			// A conditional put: the first wins, the second fails.
			rec := []byte(`{"run":1}`)
			if err := st.Put(ctx, ".bpconvert.json", bytes.NewReader(rec), int64(len(rec)), objstore.PutOptions{IfAbsent: true}); err != nil {
				t.Fatal(err)
			}
			err = st.Put(ctx, ".bpconvert.json", bytes.NewReader([]byte("x")), 1, objstore.PutOptions{IfAbsent: true})
			if !errors.Is(err, objstore.ErrExists) {
				t.Fatalf("second conditional put: %v, want ErrExists", err)
			}
			if b, _ := objstore.ReadAll(ctx, st, ".bpconvert.json", 100); !bytes.Equal(b, rec) {
				t.Fatalf("conditional put replaced the object: %q", b)
			}
			// Missing objects.
			if _, err := st.Open(ctx, "nope"); !errors.Is(err, objstore.ErrNotExist) {
				t.Fatalf("Open(missing): %v", err)
			}
			if _, err := st.Stat(ctx, "media/nope"); !errors.Is(err, objstore.ErrNotExist) {
				t.Fatalf("Stat(missing): %v", err)
			}
			if err := st.Delete(ctx, "media/pack-0000.zip"); err != nil {
				t.Fatal(err)
			}
			if err := st.Delete(ctx, "media/pack-0000.zip"); err != nil {
				t.Fatalf("second delete: %v", err)
			}
			if _, err := st.Stat(ctx, "media/pack-0000.zip"); !errors.Is(err, objstore.ErrNotExist) {
				t.Fatalf("Stat after delete: %v", err)
			}
		})
	}
}

// TestConditionalPutRace: of many puts racing for one name, one wins.
func TestConditionalPutRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for kind, st := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			wins := 0
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					b := []byte{byte(i)}
					err := st.Put(ctx, "rec.json", bytes.NewReader(b), 1, objstore.PutOptions{IfAbsent: true})
					if err == nil {
						mu.Lock()
						wins++
						mu.Unlock()
					} else if !errors.Is(err, objstore.ErrExists) {
						t.Errorf("put %d: %v", i, err)
					}
				}()
			}
			wg.Wait()
			if wins != 1 {
				t.Fatalf("%d conditional puts succeeded, want 1", wins)
			}
		})
	}
}

func TestS3Errors(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "real-bucket")
	ctx := context.Background()
	// A bucket that does not exist.
	st, err := objstore.Open(ctx, "s3://missing-bucket/x", srv.Reach(objstore.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Stat(ctx, "a")
	if !errors.Is(err, objstore.ErrNoBucket) || !errors.Is(err, objstore.ErrNotExist) || !strings.Contains(err.Error(), "bucket missing-bucket does not exist") {
		t.Fatalf("missing bucket: %v", err)
	}
	err = st.List(ctx, "", func(objstore.Info) error { return nil })
	if !errors.Is(err, objstore.ErrNotExist) {
		t.Fatalf("list of a missing bucket: %v", err)
	}
	// Wrong credentials: refused, and neither key is in the message.
	wrong := srv.Reach(objstore.Options{})
	wrong.Credentials = objstore.Credentials{AccessKeyID: "AKWRONGKEYID", SecretAccessKey: "WRONGSECRETwrongsecretWRONGSECRET"}
	st, err = objstore.Open(ctx, "s3://real-bucket/x", wrong)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		st.Put(ctx, "a", bytes.NewReader([]byte("x")), 1, objstore.PutOptions{}),
		func() error { _, err := st.Stat(ctx, "a"); return err }(),
		st.List(ctx, "", func(objstore.Info) error { return nil }),
	} {
		if !errors.Is(err, objstore.ErrDenied) {
			t.Fatalf("wrong credentials: %v, want ErrDenied", err)
		}
		for _, secret := range []string{"WRONGSECRETwrongsecretWRONGSECRET", "AKWRONGKEYID", srv.SecretKey} {
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error carries a credential: %v", err)
			}
		}
	}
	// Bad locations.
	for _, loc := range []string{"s3://", "s3://UPPER/x", "s3://a/x", "s3://bucket/a//b", "s3://bucket/../x",
		"s3://bucket//x", "s3://bucket/x//", "s3://KEYID:SeCrEtKeY@bucket/x", "s3://KEYID@bucket/x"} {
		_, err := objstore.Open(ctx, loc, srv.Reach(objstore.Options{}))
		if !errors.Is(err, objstore.ErrBadLocation) {
			t.Errorf("Open(%q): %v, want ErrBadLocation", loc, err)
		} else if strings.Contains(err.Error(), "SeCrEtKeY") || strings.Contains(err.Error(), "KEYID") {
			t.Errorf("Open(%q): the error carries the credential: %v", loc, err)
		}
	}
	for _, loc := range []string{"s3://bucket", "s3://bucket/", "s3://bucket/x/", "s3://bucket/a@b/c"} {
		if _, _, err := objstore.ParseS3(loc); err != nil {
			t.Errorf("ParseS3(%q): %v", loc, err)
		}
	}
}

// TestTimeoutsFromEnv: the bounds take Go durations or seconds, and refuse
// anything else.
func TestTimeoutsFromEnv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		idle, connect string
		want          objstore.Timeouts
		ok            bool
	}{
		{"", "", objstore.Timeouts{Connect: objstore.DefaultConnectTimeout, Idle: objstore.DefaultIdleTimeout}, true},
		{"2", "1.5", objstore.Timeouts{Connect: 1500 * time.Millisecond, Idle: 2 * time.Second}, true},
		{"2m", "45s", objstore.Timeouts{Connect: 45 * time.Second, Idle: 2 * time.Minute}, true},
		{"soon", "", objstore.Timeouts{}, false},
		{"0", "", objstore.Timeouts{}, false},
		{"", "-3s", objstore.Timeouts{}, false},
	} {
		env := map[string]string{objstore.EnvTimeout: c.idle, objstore.EnvConnectTimeout: c.connect}
		got, err := objstore.TimeoutsFromEnv(func(k string) string { return env[k] })
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q, %q: %+v, %v; want %+v (ok %v)", c.idle, c.connect, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, objstore.ErrSetting) {
			t.Errorf("%q, %q: %v does not match ErrSetting", c.idle, c.connect, err)
		}
	}
}

// TestUserinfoRedacted: a credential typed into a location never leaves
// RedactLocation.
func TestUserinfoRedacted(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"s3://AK:SECRET@bkt/x":           "s3://[redacted]@bkt/x",
		"copy s3://AK@bkt to s3://b/c@d": "copy s3://[redacted]@bkt to s3://b/c@d",
		"s3://bkt/x@y":                   "s3://bkt/x@y",
	} {
		if got := objstore.RedactLocation(in); got != want {
			t.Errorf("RedactLocation(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAbortUploads: a multipart upload left by a killed run is found and
// abandoned.
func TestAbortUploads(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "bkt")
	ctx := context.Background()
	c := srv.Client()
	if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("ds/media/pack-0003.zip")}); err != nil {
		t.Fatal(err)
	}
	st, err := objstore.Open(ctx, "s3://bkt/ds", srv.Reach(objstore.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	n, err := st.(*objstore.S3).AbortUploads(ctx, "")
	if err != nil || n != 1 {
		t.Fatalf("AbortUploads = %d, %v; want 1", n, err)
	}
	out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt")})
	if err != nil || len(out.Uploads) != 0 {
		t.Fatalf("uploads left: %v, %v", out, err)
	}
}

func TestSeqReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for kind, st := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			for _, size := range []int{0, 1, 1000, 3<<20 + 17} {
				b := random(t, size)
				if err := st.Put(ctx, "obj", bytes.NewReader(b), int64(size), objstore.PutOptions{}); err != nil {
					t.Fatal(err)
				}
				obj, err := st.Open(ctx, "obj")
				if err != nil {
					t.Fatal(err)
				}
				r := objstore.NewSeqReader(ctx, obj, objstore.SeqOptions{Chunk: 1 << 20, Ahead: 2})
				got, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(got, b) {
					t.Fatalf("size %d: read %d bytes, %v", size, len(got), err)
				}
				r.Close()
				// Closed early, mid-object: no goroutine keeps reading.
				r = objstore.NewSeqReader(ctx, obj, objstore.SeqOptions{Chunk: 1 << 20, Ahead: 2})
				io.ReadFull(r, make([]byte, min(size, 10)))
				r.Close()
				obj.Close()
			}
		})
	}
}

// TestCopy: a copy inside a store holds the same bytes and recorded digest,
// in one request or in parts above MaxCopySize, and on S3 moves no payload
// through this process; names that need escaping copy too, and a missing
// source matches ErrNotExist.
func TestCopy(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "bucket-c")
	ctx := context.Background()
	stats := &objstore.Stats{}
	remote, err := objstore.Open(ctx, "s3://bucket-c/p", srv.Reach(objstore.Options{PartSize: 5 << 20, MaxCopySize: 6 << 20, Stats: stats}))
	if err != nil {
		t.Fatal(err)
	}
	local, err := objstore.Open(ctx, t.TempDir(), objstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	small := random(t, 1000)
	big := random(t, 12<<20+12345) // three copied parts of 5 MiB on S3
	for kind, st := range map[string]objstore.Store{"local": local, "s3": remote} {
		t.Run(kind, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				data []byte
				to   string
			}{
				{"one request", small, "out/media/pack-0000.zip"},
				{"in parts", big, "out/media/pack-0001.zip"},
				{"escaped name", small, "out/a b+c/ü%20.zip"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					from := "parts/" + strings.ReplaceAll(tc.name, " ", "_") + ".zip"
					if err := st.Put(ctx, from, bytes.NewReader(tc.data), int64(len(tc.data)), objstore.PutOptions{SHA256: "cafe"}); err != nil {
						t.Fatal(err)
					}
					read, written := stats.BytesRead(), stats.BytesWritten()
					if err := st.Copy(ctx, from, tc.to); err != nil {
						t.Fatal(err)
					}
					if kind == "s3" && (stats.BytesRead() != read || stats.BytesWritten() != written) {
						t.Fatalf("copy moved %d bytes in and %d out through this process", stats.BytesRead()-read, stats.BytesWritten()-written)
					}
					got, err := objstore.ReadAll(ctx, st, tc.to, 1<<30)
					if err != nil || !bytes.Equal(got, tc.data) {
						t.Fatalf("copy holds %d bytes (%v), want the %d put", len(got), err, len(tc.data))
					}
					info, err := st.Stat(ctx, tc.to)
					if err != nil {
						t.Fatal(err)
					}
					if kind == "s3" && info.SHA256 != "cafe" {
						t.Fatalf("copy's SHA256 = %q, want the source's", info.SHA256)
					}
					// The source stays.
					if _, err := st.Stat(ctx, from); err != nil {
						t.Fatalf("source after copy: %v", err)
					}
				})
			}
			if err := st.Copy(ctx, "parts/missing.zip", "out/x.zip"); !errors.Is(err, objstore.ErrNotExist) {
				t.Fatalf("copy of a missing object: %v, want ErrNotExist", err)
			}
		})
	}
}

// TestPutFile puts a local file into both stores, large enough for a
// multipart upload on S3, and reads it back; a missing file is an error
// that leaves no object.
func TestPutFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := random(t, 6<<20+7) // two parts of 5 MiB on S3
	p := filepath.Join(t.TempDir(), "table.parquet")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	for kind, st := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			if err := objstore.PutFile(ctx, st, "data/table.parquet", p); err != nil {
				t.Fatal(err)
			}
			got, err := objstore.ReadAll(ctx, st, "data/table.parquet", 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read back %d bytes, want the %d put", len(got), len(want))
			}
			missing := filepath.Join(t.TempDir(), "missing")
			if err := objstore.PutFile(ctx, st, "data/missing", missing); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("PutFile of a missing file: %v, want an error matching fs.ErrNotExist", err)
			}
			if _, err := st.Stat(ctx, "data/missing"); !errors.Is(err, objstore.ErrNotExist) {
				t.Fatalf("Stat after a failed PutFile: %v, want objstore.ErrNotExist", err)
			}
		})
	}
}
