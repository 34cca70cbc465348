package packcore

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestHasherTakesBackBuffers: a writer that needs a buffer while every one
// waits in the queue takes back the newest that is not pinned, and the
// hasher reads that range back from the file instead, so the digest is
// still the file's; a pinned buffer (a member that may yet be cut off) is
// never taken back. The goroutine is held off until the queue is full, as
// a hasher whose core is busy elsewhere would be.
func TestHasherTakesBackBuffers(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "shard"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hs := newHasher()
	hs.running = true // the goroutine does not start yet
	p := newHashPipe(true, f, hs)
	var off int64
	write := func(b []byte, fill byte, n int) []byte {
		t.Helper()
		b = append(b, bytes.Repeat([]byte{fill}, n)...)
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
		p.send(b, off)
		off += int64(n)
		return b
	}
	// The oldest buffer is pinned, as streamKnownCRC's are.
	p.mark()
	write(hs.get(), 'a', 1000)
	p.unmark()
	for i := range poolBuffers - 1 {
		write(hs.get(), byte('b'+i), 2000+i)
	}
	taken := hs.get() // every buffer is queued: the newest comes back
	newest := hs.queue[len(hs.queue)-1]
	if newest.kind != jobRange || newest.b != nil || newest.n != int64(2000+poolBuffers-2) {
		t.Fatalf("newest job after a buffer was taken back: kind %d, %d bytes of buffer, range %d", newest.kind, len(newest.b), newest.n)
	}
	write(taken, 'z', 3000) // the buffer now holds other bytes
	// Take back every unpinned buffer and hold them: the pinned one is
	// all that waits, and the next get waits for a buffer given back.
	var held [][]byte
	for range poolBuffers - 1 {
		held = append(held, hs.get())
	}
	got := make(chan []byte, 1)
	go func() { got <- hs.get() }()
	for i := 0; ; i++ { // until the get waits (bounded: it must, or return)
		hs.mu.Lock()
		waiting := hs.waiting
		hs.mu.Unlock()
		if waiting {
			break
		}
		select {
		case <-got:
			t.Fatal("get took back the pinned buffer instead of waiting for one given back")
		default:
		}
		if i == 1e7 {
			t.Fatal("get neither waits nor returns")
		}
		runtime.Gosched()
	}
	hs.put(held[0])
	if b := <-got; &b[:1][0] != &held[0][:1][0] {
		t.Fatal("get returned another buffer than the one given back")
	}
	if j := hs.queue[1]; j.kind != jobBuf || !j.pinned || len(j.b) != 1000 {
		t.Fatalf("the pinned buffer was taken back: kind %d, pinned %v, %d bytes", j.kind, j.pinned, len(j.b))
	}
	hs.mu.Lock()
	go hs.run()
	hs.mu.Unlock()
	digest, err := p.sum()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(b); !bytes.Equal(digest, want[:]) {
		t.Fatalf("digest %x, want the file's %x", digest, want)
	}
	if hs.made != poolBuffers {
		t.Fatalf("%d buffers made, want %d", hs.made, poolBuffers)
	}
}

// TestHasherWaitsBeforeTakingBack: a writer that needs a buffer while every
// one waits in the queue waits for one to come back rather than take one
// back at once (a hasher slower than the writer would otherwise read back
// nearly everything); once it has waited takeBackAfter it takes back
// buffers, but no more than maxTakeBack bytes of them queued at a time,
// and then waits again. The digest is the file's.
func TestHasherWaitsBeforeTakingBack(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "shard"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hs := newHasher()
	hs.running = true // the goroutine does not start yet
	p := newHashPipe(true, f, hs)
	var off int64
	fill := func(b []byte, c byte) {
		t.Helper()
		b = append(b, bytes.Repeat([]byte{c}, copyBuf)...)
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
		p.send(b, off)
		off += int64(len(b))
	}
	for i := range poolBuffers {
		fill(hs.get(), byte('a'+i))
	}
	// waitsFor checks that a get started now waits (for takeBackAfter at
	// most, but here the goroutine is held) and returns its channel.
	waits := func() chan []byte {
		t.Helper()
		got := make(chan []byte, 1)
		go func() { got <- hs.get() }()
		for i := 0; ; i++ {
			hs.mu.Lock()
			waiting := hs.waiting
			hs.mu.Unlock()
			if waiting {
				return got
			}
			select {
			case <-got:
				t.Fatal("get returned a buffer while every one was queued")
			default:
			}
			if i == 1e7 {
				t.Fatal("get neither waits nor returns")
			}
			runtime.Gosched()
		}
	}
	ranges := func() (n int) {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		for _, j := range hs.queue[hs.head:] {
			if j.kind == jobRange {
				n++
			}
		}
		return n
	}

	hs.takeBackAfter = time.Hour
	got := waits()
	if n := ranges(); n != 0 {
		t.Fatalf("%d buffers taken back at once", n)
	}
	// Taking back after no wait at all: up to maxTakeBack bytes.
	hs.mu.Lock()
	hs.takeBackAfter = 0
	hs.mu.Unlock()
	hs.put(hs.set.Alloc(chunkSize).Bytes()[:0:chunkSize]) // wakes the get
	fill(<-got, 'x')
	want := int(maxTakeBack / copyBuf)
	for range want {
		fill(hs.get(), 'y')
	}
	if n := ranges(); n != want {
		t.Fatalf("%d buffers taken back, want %d (maxTakeBack)", n, want)
	}
	got = waits() // beyond maxTakeBack
	hs.mu.Lock()
	go hs.run()
	hs.mu.Unlock()
	hs.put(<-got)
	digest, err := p.sum()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if w := sha256.Sum256(b); !bytes.Equal(digest, w[:]) {
		t.Fatalf("digest %x, want the file's %x", digest, w)
	}
	if hs.lag != 0 || hs.takenBack != 0 {
		t.Fatalf("lag %d, taken back %d after the digest", hs.lag, hs.takenBack)
	}
}
