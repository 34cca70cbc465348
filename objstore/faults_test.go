package objstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// TestReadFaults: a ranged read through a proxy that stalls, cuts, swaps
// or widens the answer returns the object's own bytes once a retry gets
// past the fault, fails as a store fault (ErrUnavailable, the object
// named) when every attempt meets it, within the bounds, and fails with
// ErrChanged when the object is replaced between two reads.
func TestReadFaults(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "bkt")
	proxy := s3test.NewProxy(t, srv)
	proxy.SetSwap(func(p string) string { return strings.Replace(p, "/a.bin", "/b.bin", 1) })
	ctx := context.Background()
	a, b := make([]byte, 3<<20), make([]byte, 3<<20)
	rand.Read(a)
	rand.Read(b)
	put := func(key string, data []byte) {
		t.Helper()
		if _, err := srv.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
	}
	put("a.bin", a)
	put("b.bin", b)
	o := srv.Reach(objstore.Options{Timeouts: objstore.Timeouts{Connect: time.Second, Idle: time.Second}, MaxAttempts: 3})
	o.Endpoint = proxy.Endpoint
	st, err := objstore.Open(ctx, "s3://bkt", o)
	if err != nil {
		t.Fatal(err)
	}
	ranged := func(r *http.Request) bool { return r.Method == http.MethodGet && r.Header.Get("Range") != "" }
	read := func() ([]byte, error) {
		obj, err := st.Open(ctx, "a.bin")
		if err != nil {
			return nil, err
		}
		defer obj.Close()
		p := make([]byte, 1<<20)
		_, err = obj.ReadAt(p, 1<<20)
		return p, err
	}
	for _, c := range []struct {
		name  string
		fault s3test.Fault
		times int // 0: every ranged read
		want  error
	}{
		{"stall headers once", s3test.StallHeaders, 1, nil},
		{"stall body once", s3test.StallBody, 1, nil},
		{"reset body once", s3test.ResetBody, 1, nil},
		{"truncate once", s3test.Truncate, 1, nil},
		{"swap once", s3test.Swap, 1, nil},
		{"ignore range", s3test.IgnoreRange, 0, nil},
		{"stall every body", s3test.StallBody, 0, objstore.ErrUnavailable},
		{"truncate every time", s3test.Truncate, 0, objstore.ErrUnavailable},
		{"swap every time", s3test.Swap, 0, objstore.ErrChanged},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			proxy.SetFaults(func(_ int, r *http.Request) s3test.Fault {
				mu.Lock()
				defer mu.Unlock()
				if !ranged(r) || (c.times > 0 && n >= c.times) {
					return s3test.Pass
				}
				n++
				return c.fault
			})
			defer proxy.SetFaults(nil)
			start := time.Now()
			got, err := read()
			if took := time.Since(start); took > 60*time.Second {
				t.Fatalf("the read took %s", took)
			}
			if n == 0 {
				t.Fatal("no fault was injected")
			}
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("read: %v", err)
			case c.want == nil && !bytes.Equal(got, a[1<<20:2<<20]):
				t.Fatal("the bytes read are not the object's")
			case c.want != nil && (!errors.Is(err, c.want) || !strings.Contains(err.Error(), "s3://bkt/a.bin") || !strings.Contains(err.Error(), "after 3 attempts")):
				t.Fatalf("read: %v, want %v naming s3://bkt/a.bin after 3 attempts", err, c.want)
			}
		})
	}
	t.Run("overwritten between reads", func(t *testing.T) {
		obj, err := st.Open(ctx, "a.bin")
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 1<<20)
		if _, err := obj.ReadAt(p, 0); err != nil {
			t.Fatal(err)
		}
		put("a.bin", b) // same size, other bytes
		_, err = obj.ReadAt(p, 1<<20)
		want := "s3://bkt/a.bin: it changed while it was read; rerun to convert the new version"
		if !errors.Is(err, objstore.ErrChanged) || err.Error() != want {
			t.Fatalf("read after the overwrite: %v, want %q", err, want)
		}
	})
}
