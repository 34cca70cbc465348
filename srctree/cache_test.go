package srctree_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/srctree"
)

// fetch is one ranged GET the server answered: [lo, hi).
type fetch struct{ lo, hi int64 }

// requestLog records the ranged GETs of one object that pass a proxy.
type requestLog struct {
	mu   sync.Mutex
	gets []fetch
}

func (l *requestLog) take() []fetch {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.gets
	l.gets = nil
	return g
}

// remoteObject uploads size random bytes as s3://src/ds/obj to a real S3
// server (versitygw) reached through a proxy that logs every ranged GET,
// and returns them, the log and a function that opens the tree afresh.
func remoteObject(t *testing.T, size int) ([]byte, *requestLog, func(t *testing.T) *srctree.Tree) {
	srv := s3test.Start(t, "src")
	body := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	if _, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("ds/obj"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	proxy := s3test.NewProxy(t, srv)
	o := srv.Reach(objstore.Options{})
	o.Endpoint = proxy.Endpoint
	log := &requestLog{}
	proxy.SetFaults(func(_ int, r *http.Request) s3test.Fault {
		var lo, hi int64
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/ds/obj") {
			if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &lo, &hi); err != nil {
				t.Errorf("a GET without a range: %q", r.Header.Get("Range"))
			}
			log.mu.Lock()
			log.gets = append(log.gets, fetch{lo, hi + 1})
			log.mu.Unlock()
		}
		return s3test.Pass
	})
	open := func(t *testing.T) *srctree.Tree {
		tr, err := srctree.Open(context.Background(), "s3://src/ds", o)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	return body, log, open
}

// noOverlap fails the test when two requests fetched the same byte.
func noOverlap(t *testing.T, gets []fetch) {
	t.Helper()
	s := slices.Clone(gets)
	slices.SortFunc(s, func(a, b fetch) int { return int(a.lo - b.lo) })
	for i := 1; i < len(s); i++ {
		if s[i].lo < s[i-1].hi {
			t.Errorf("[%d, %d) and [%d, %d) were both fetched", s[i-1].lo, s[i-1].hi, s[i].lo, s[i].hi)
		}
	}
}

// readAt reads n bytes of f at off, checking them against body.
func readAt(t *testing.T, f srctree.File, body []byte, off, n int64) {
	t.Helper()
	p := make([]byte, n)
	if k, err := f.ReadAt(p, off); int64(k) != n || (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(p, body[off:off+n]) {
		t.Fatalf("ReadAt(%d bytes at %d): %d, %v", n, off, k, err)
	}
}

// TestInterleavedRuns reads two, three and MaxRuns streams of one object
// in turn, 64 KiB from each (as a reader of several column chunks of a row
// group does): each stream's requests grow, doubling to 8 MiB, as a stream
// read alone does, rather than each read fetching its own blocks; no byte
// is fetched twice, and what is fetched past a stream's end is at most its
// read-ahead. Of MaxRuns+1 streams, all but two keep their runs.
func TestInterleavedRuns(t *testing.T) {
	t.Parallel()
	// each stream's length, and the distance between their starts: a
	// stream's read-ahead reaches 12 MiB past its last read
	const per, apart = 6 << 20, 6<<20 + 2*srctree.MaxAhead
	body, log, open := remoteObject(t, (srctree.MaxRuns+1)*apart)
	for _, streams := range []int{2, 3, srctree.MaxRuns, srctree.MaxRuns + 1} {
		t.Run(fmt.Sprint(streams), func(t *testing.T) {
			tr := open(t)
			f, err := tr.Open(context.Background(), "obj")
			if err != nil {
				t.Fatal(err)
			}
			log.take()
			const step = 64 << 10
			start := func(i int) int64 { return int64(i) * apart }
			grew := 0
			for pos := int64(0); pos < per; pos += step {
				for i := range streams {
					readAt(t, f, body, start(i)+pos, step)
				}
			}
			f.Close()
			gets := log.take()
			noOverlap(t, gets)
			for i := range streams {
				var sizes []int64
				var fetched int64
				for _, g := range gets {
					if g.lo >= start(i) && g.lo < start(i)+per {
						sizes = append(sizes, g.hi-g.lo)
						fetched += g.hi - g.lo
					}
				}
				t.Logf("stream %d of %d: %d requests: %v", i, streams, len(sizes), sizes)
				if fetched < per {
					t.Errorf("stream %d: %d bytes fetched of %d read", i, fetched, per)
				}
				if len(sizes) > 10 || slices.Max(sizes) < 2<<20 {
					if streams <= srctree.MaxRuns {
						t.Errorf("stream %d: requests of %v (%d bytes) for %d bytes read", i, sizes, fetched, per)
					}
					continue
				}
				grew++
				for j := 1; j < len(sizes)-1; j++ { // the last may end at the next stream's blocks
					if sizes[j] < sizes[j-1] {
						t.Errorf("stream %d: request %d of %d bytes after one of %d", i, j, sizes[j], sizes[j-1])
					}
				}
			}
			want := streams
			if streams > srctree.MaxRuns {
				want = srctree.MaxRuns - 1
			}
			if grew != want {
				t.Errorf("%d of %d streams were read in growing requests, want %d", grew, streams, want)
			}
		})
	}
}

// TestKeptBound reads an object of 40 MiB front to back in 64 KiB reads,
// as one stream and as two read in turn: what the file keeps stays within
// twice MaxAhead for each run, and 8 blocks, after every read, and every
// byte is fetched once (the spans let go of are those already read).
func TestKeptBound(t *testing.T) {
	t.Parallel()
	const size = 40 << 20
	body, log, open := remoteObject(t, size)
	for _, streams := range []int{1, 2} {
		tr := open(t)
		f, err := tr.Open(context.Background(), "obj")
		if err != nil {
			t.Fatal(err)
		}
		log.take()
		bound := int64(streams)*2*srctree.MaxAhead + 8*srctree.BlockSize
		per := int64(size / streams)
		var most int64
		for pos := int64(0); pos < per; pos += 64 << 10 {
			for i := range streams {
				readAt(t, f, body, int64(i)*per+pos, 64<<10)
				most = max(most, srctree.Kept(f))
			}
		}
		f.Close()
		gets := log.take()
		noOverlap(t, gets)
		var fetched int64
		for _, g := range gets {
			fetched += g.hi - g.lo
		}
		t.Logf("%d streams: at most %d bytes kept, %d fetched in %d requests", streams, most, fetched, len(gets))
		if most > bound || fetched != size {
			t.Errorf("%d streams: %d bytes kept (bound %d), %d fetched of %d", streams, most, bound, fetched, size)
		}
	}
}

// TestLargeRead: one read of 30 MiB is fetched in requests of at most
// MaxAhead that follow one another (the next in flight while one is
// copied), every byte once; a read that an exact reader makes of the same
// size too, without fetching past it.
func TestLargeRead(t *testing.T) {
	t.Parallel()
	body, log, open := remoteObject(t, 40<<20)
	for _, exact := range []bool{false, true} {
		tr := open(t)
		f, err := tr.Open(context.Background(), "obj")
		if err != nil {
			t.Fatal(err)
		}
		if exact {
			f = srctree.Exact(f)
		}
		log.take()
		readAt(t, f, body, 1000, 30<<20)
		f.Close()
		gets := log.take()
		noOverlap(t, gets)
		var fetched int64
		for _, g := range gets {
			fetched += g.hi - g.lo
			if g.hi-g.lo > srctree.MaxAhead {
				t.Errorf("exact %v: a request of %d bytes", exact, g.hi-g.lo)
			}
		}
		t.Logf("exact %v: %d requests, %d bytes", exact, len(gets), fetched)
		// the read, rounded out to blocks; without Exact the next span of
		// the run it began may be in flight
		if fetched < 30<<20 || exact && fetched > 30<<20+2*srctree.BlockSize || fetched > 30<<20+2*srctree.MaxAhead {
			t.Errorf("exact %v: %d bytes fetched for a read of %d", exact, fetched, 30<<20)
		}
	}
}

// TestSharedOpen: Files of one object open at once read what the others
// fetched; once all are closed, a File opened again fetches anew.
func TestSharedOpen(t *testing.T) {
	t.Parallel()
	body, log, open := remoteObject(t, 4<<20)
	tr := open(t)
	ctx := context.Background()
	a, err := tr.Open(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	readAt(t, a, body, 0, 1<<20)
	if g := log.take(); len(g) == 0 {
		t.Fatal("nothing fetched")
	}
	b, err := tr.Open(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	readAt(t, b, body, 0, 1<<20)
	a.Close()
	readAt(t, b, body, 100, 1<<19)
	if g := log.take(); len(g) != 0 {
		t.Errorf("a second File of the object fetched %v again", g)
	}
	if err := a.Close(); err != nil { // a second Close does nothing
		t.Errorf("second Close: %v", err)
	}
	readAt(t, b, body, 3<<20, 1000)
	b.Close()
	log.take()
	c, err := tr.Open(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	readAt(t, c, body, 0, 1000)
	c.Close()
	if g := log.take(); len(g) != 1 || g[0].lo != 0 {
		t.Errorf("after every File was closed, a read fetched %v", g)
	}
}

// TestSampleKept: what exact reads fetched (a plan's sample of a table) is
// read again by the File opened after them (the conversion) without being
// fetched again, so that the object is fetched once in all; the tree lets
// go of it when that File, which read ahead, is closed, and another exact
// File does not.
func TestSampleKept(t *testing.T) {
	t.Parallel()
	const size = 20 << 20
	body, log, open := remoteObject(t, size)
	tr := open(t)
	ctx := context.Background()
	sample := func() {
		for range 2 {
			f, err := tr.Open(ctx, "obj")
			if err != nil {
				t.Fatal(err)
			}
			f = srctree.Exact(f)
			for _, off := range []int64{size - 100, 0, 5 << 20, 15<<20 + 10} {
				readAt(t, f, body, off, min(1<<20, size-off))
			}
			f.Close()
		}
	}
	sample()
	gets := log.take()
	var kept int64
	for _, g := range gets {
		kept += g.hi - g.lo
	}
	if len(gets) != 4 || srctree.SampleKept(tr) != kept {
		t.Fatalf("the sample, read twice: %d requests, %d bytes, %d kept", len(gets), kept, srctree.SampleKept(tr))
	}
	f, err := tr.Open(ctx, "obj")
	if err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < size; off += 1 << 20 {
		readAt(t, f, body, off, min(1<<20, size-off))
	}
	conv := log.take()
	noOverlap(t, append(conv, gets...))
	var fetched int64
	for _, g := range append(conv, gets...) {
		fetched += g.hi - g.lo
	}
	if fetched != size {
		t.Errorf("the sample and the reads after it fetched %d bytes of %d", fetched, size)
	}
	if srctree.SampleKept(tr) != kept {
		t.Errorf("the sample was let go of before the File that read it was closed")
	}
	f.Close()
	if n := srctree.SampleKept(tr); n != 0 {
		t.Errorf("%d bytes kept after the File that read them ahead was closed", n)
	}
}

// TestBuffersReused reads one object from eight goroutines at once: two
// streams of sequential reads, two of reads of 2 MiB (one through a
// section of the object), random reads, all through Files open at once,
// closed and opened again: every byte read is the object's, spans are let
// go of and their buffers fetched into again (run with -race: no read
// copies out of a buffer while a request fills it anew).
func TestBuffersReused(t *testing.T) {
	t.Parallel()
	const size = 48 << 20
	body, _, open := remoteObject(t, size)
	tr := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	check := func(f srctree.File, base int64, p []byte, off int64) bool {
		n, err := f.ReadAt(p, off)
		if n != len(p) || (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(p, body[base+off:base+off+int64(n)]) {
			errs <- fmt.Errorf("ReadAt(%d bytes at %d of %d): %d, %v", len(p), off, base, n, err)
			return false
		}
		return true
	}
	stream := func(lo, hi int64, step int, section bool) {
		defer wg.Done()
		for pass := range 2 {
			var f srctree.File
			var err error
			base := int64(0)
			if section {
				f, err = tr.OpenSection(ctx, "obj", lo, hi-lo)
				base, lo, hi = lo, 0, hi-lo
			} else {
				f, err = tr.Open(ctx, "obj")
			}
			if err != nil {
				errs <- err
				return
			}
			p := make([]byte, step)
			for off := lo; off+int64(step) <= hi; off += int64(step) {
				if !check(f, base, p, off) {
					break
				}
			}
			f.Close()
			if section {
				lo, hi = base, base+hi
			}
			_ = pass
		}
	}
	wg.Add(4)
	go stream(0, 12<<20, 64<<10, false)
	go stream(12<<20, 24<<20, 100<<10, false)
	go stream(24<<20, 36<<20, 2<<20, false)
	go stream(36<<20, 48<<20, 2<<20, true)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			f, err := tr.Open(ctx, "obj")
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			for range 200 {
				off := rng.Int64N(size - 1)
				if !check(f, 0, make([]byte, min(rng.Int64N(200<<10)+1, size-off)), off) {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	handed, reused := srctree.Buffers(tr)
	t.Logf("%d spans fetched, %d into buffers reused", handed, reused)
	if reused == 0 || reused > handed {
		t.Errorf("%d spans fetched, %d into buffers reused", handed, reused)
	}
}
