package packcore

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestHasherWaitsForABuffer: a writer that needs a buffer while every one
// waits in the queue waits until the hasher gives one back (the buffers of
// a member being streamed may yet be cut off the file, so none is taken
// back to be read back instead); lent buffers and ranges read back from
// the file, in turn, give the file's digest, and no lag is left.
func TestHasherWaitsForABuffer(t *testing.T) {
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
	fill := func(b []byte, c byte, lent bool) {
		t.Helper()
		b = append(b, bytes.Repeat([]byte{c}, copyBuf)...)
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
		if lent {
			p.send(b)
		} else {
			p.sendWritten(b, off)
		}
		off += int64(len(b))
	}
	fill(hs.get(), 'r', false) // read back: its buffer is free again
	for i := range poolBuffers {
		fill(hs.get(), byte('a'+i), true)
	}
	got := make(chan []byte, 1)
	go func() { got <- hs.get() }()
	for i := 0; ; i++ {
		hs.mu.Lock()
		waiting := hs.waiting
		hs.mu.Unlock()
		if waiting {
			break
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
	hs.mu.Lock()
	lent := 0
	for _, j := range hs.queue[hs.head:] {
		if j.kind == jobBuf {
			lent++
		}
	}
	if lent != poolBuffers {
		t.Fatalf("%d lent buffers queued while get waits, want all %d", lent, poolBuffers)
	}
	go hs.run()
	hs.mu.Unlock()
	fill(<-got, 'z', false)
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
	if hs.lag != 0 || hs.made != poolBuffers {
		t.Fatalf("lag %d after the digest, %d buffers made (want %d)", hs.lag, hs.made, poolBuffers)
	}
}
