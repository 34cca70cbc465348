package packcore

import (
	"crypto/sha256"
	"encoding"
	"fmt"
	"hash"
	"os"
	"sync"

	"github.com/bpconvert/bpconvert/internal/offheap"
)

// poolBuffers is how many buffers a writer lends: one being filled by the
// writer, one being hashed, and the rest waiting in the hasher's queue.
const poolBuffers = 4

// zip64ExtraMax is the longest extra field of a local header the writer
// writes (zip64 sizes).
const zip64ExtraMax = 20

// chunkSize is the capacity of a lent buffer: a batch of small members with
// their headers, written in one call, or a chunk of a streamed member.
const chunkSize = copyBuf + localLen + MaxKeyBytes + zip64ExtraMax

// batchBytes is how full a batch of small members gets before it is
// written (a larger member has a batch of its own): a quarter of a buffer,
// so that a run of small members touches only that much of each buffer's
// memory, and still few calls (a thousand 256-byte members a write).
const batchBytes = 256 << 10

// readBack is the chunk in which the hasher reads ranges back.
const readBack = 256 << 10

// maxLag bounds the bytes queued to be read back (see hasher).
const maxLag = 32 << 20

// hasher lends the writer its buffers and computes the SHA-256 digests of
// its shards on one goroutine, so that hashing overlaps reading and
// writing. Work arrives in shard order: buffers already written to their
// shard (chunks of streamed members, hashed from memory, never read twice)
// and ranges of a shard file (batches of small members with their headers,
// a streamed member whose header could only be completed after its
// payload, a large member added from the caller's memory, the central
// directory: read back from the page cache, at most maxLag bytes behind
// the writer).
//
// The writer waits while more than maxLag bytes are queued to be read
// back, so every range is read back soon after it was written, while the
// page cache holds it: batches were once hashed from the lent buffers, and
// the writer waited for one whenever the hasher fell behind (260-330 ms of
// a 2 GB conversion); before that bound, buffers taken back at once had
// the hasher read back from further and further behind, from the disk
// (16 GB took 1.8 times as long as without the manifest). The chunks of a
// streamed member stay in the lent buffers (a member cut off must leave no
// range to read back), and the writer waits for one when all are queued.
// The memory stays at poolBuffers buffers whatever the number of shards
// being hashed.
//
// The goroutine runs while there is work and ends when the queue is empty,
// so a writer never leaves it behind. The buffers live outside the Go heap
// (package offheap), so they do not double the heap's growth.
type hasher struct {
	set  *offheap.Set
	mu   sync.Mutex
	free [][]byte
	made int // buffers allocated
	// queue holds the work not started, oldest first, from head on.
	queue   []hashJob
	head    int
	running bool
	// lag is the bytes of the ranges queued or being read back.
	lag int64
	// waiting is set while the writer waits for a buffer or for the lag
	// to shrink; room wakes it.
	waiting bool
	room    chan struct{}
	rbuf    []byte // the goroutine's read-back buffer
}

func newHasher() *hasher {
	hs := &hasher{room: make(chan struct{}, 1)}
	hs.set = offheap.NewSet(hs)
	return hs
}

// wait waits, with hs.mu held, until the hasher gives a buffer back or
// finishes a range; it returns with hs.mu held. It may return early (a
// wake meant for an earlier wait): callers check again.
func (hs *hasher) wait() {
	hs.waiting = true
	hs.mu.Unlock()
	<-hs.room
	hs.mu.Lock()
}

// wake wakes a waiting writer; hs.mu is held.
func (hs *hasher) wake() {
	if hs.waiting {
		hs.waiting = false
		select {
		case hs.room <- struct{}{}:
		default: // a wake is pending already
		}
	}
}

// get returns an empty buffer of capacity chunkSize: a free one, a new one
// while fewer than poolBuffers exist, or, after waiting, one the hasher
// gives back.
func (hs *hasher) get() []byte {
	hs.mu.Lock()
	for {
		if n := len(hs.free); n > 0 {
			b := hs.free[n-1]
			hs.free = hs.free[:n-1]
			hs.mu.Unlock()
			return b[:0]
		}
		if hs.made < poolBuffers {
			hs.made++
			hs.mu.Unlock()
			return hs.set.Alloc(chunkSize).Bytes()[:0:chunkSize]
		}
		hs.wait()
	}
}

// put returns a buffer.
func (hs *hasher) put(b []byte) {
	hs.mu.Lock()
	hs.free = append(hs.free, b[:0])
	hs.wake()
	hs.mu.Unlock()
}

// push queues a job and starts the goroutine if it is not running. After
// a range it waits while more than maxLag bytes queued before it are still
// to be read back (a range larger than that, such as a large member
// streamed before its CRC-32 was known, is read back while the writer
// goes on).
func (hs *hasher) push(j hashJob) {
	hs.mu.Lock()
	hs.queue = append(hs.queue, j)
	if !hs.running {
		hs.running = true
		go hs.run()
	}
	if j.kind == jobRange {
		hs.lag += j.n
		for hs.lag-j.n > maxLag {
			hs.wait()
		}
	}
	hs.mu.Unlock()
}

func (hs *hasher) run() {
	for {
		hs.mu.Lock()
		if hs.head == len(hs.queue) {
			hs.queue, hs.head = hs.queue[:0], 0
			hs.running = false
			hs.mu.Unlock()
			return
		}
		if hs.head >= 64 && 2*hs.head >= len(hs.queue) {
			// A hasher that never catches up: drop the jobs done.
			n := copy(hs.queue, hs.queue[hs.head:])
			clear(hs.queue[n:])
			hs.queue, hs.head = hs.queue[:n], 0
		}
		j := hs.queue[hs.head]
		hs.queue[hs.head] = hashJob{}
		hs.head++
		hs.mu.Unlock()
		j.p.do(hs, j)
		if j.kind == jobRange {
			hs.mu.Lock()
			hs.lag -= j.n
			hs.wake()
			hs.mu.Unlock()
		}
	}
}

// hashJob is one piece of a shard, in shard order, or a mark.
type hashJob struct {
	p      *hashPipe
	kind   jobKind
	b      []byte // jobBuf: bytes to hash, a lent buffer given back afterwards
	off, n int64  // jobRange: where the bytes are in the shard file
}

type jobKind uint8

const (
	jobBuf      jobKind = iota // hash b
	jobRange                   // read n bytes of the shard at off and hash them
	jobMark                    // remember the digest's state
	jobRollback                // return to the remembered state
	jobEnd                     // the shard is complete
)

// hashPipe is one shard's digest, computed by the writer's hasher.
type hashPipe struct {
	hs   *hasher
	f    *os.File
	h    hash.Hash
	done chan struct{}
	// err is the first failure of the hashing; read after done.
	err   error
	saved []byte // the state jobMark remembered
	shut  bool
	// pend is a range of the shard not yet queued: adjacent ranges join
	// it, so the hasher reads back in large chunks.
	pendOff, pendN int64
}

// maxPend is the most a pending range holds before it is queued.
const maxPend = 8 << 20

// newHashPipe starts a digest of the shard file f. A pipe that does not hash
// (for packs written without a manifest) only returns buffers.
func newHashPipe(hashing bool, f *os.File, hs *hasher) *hashPipe {
	p := &hashPipe{hs: hs, f: f, done: make(chan struct{})}
	if !hashing {
		p.shut = true
		close(p.done)
		return p
	}
	p.h = sha256.New()
	return p
}

// do carries out one job on the hasher's goroutine.
func (p *hashPipe) do(hs *hasher, j hashJob) {
	switch j.kind {
	case jobBuf:
		if p.err == nil {
			p.h.Write(j.b)
		}
		hs.put(j.b)
	case jobRange:
		if p.err != nil {
			return
		}
		if hs.rbuf == nil {
			// Its pages are touched only as far as a read goes: a
			// shard of small members reads back only its directory.
			hs.rbuf = hs.set.Alloc(readBack).Bytes()[:readBack]
		}
		for j.n > 0 {
			chunk := hs.rbuf[:min(int64(len(hs.rbuf)), j.n)]
			if _, err := p.f.ReadAt(chunk, j.off); err != nil {
				p.err = fmt.Errorf("reading back for the digest: %w", err)
				return
			}
			p.h.Write(chunk)
			j.off += int64(len(chunk))
			j.n -= int64(len(chunk))
		}
	case jobMark:
		if p.err == nil {
			p.saved, p.err = p.h.(encoding.BinaryMarshaler).MarshalBinary()
		}
	case jobRollback:
		if p.err == nil {
			p.err = p.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(p.saved)
		}
	case jobEnd:
		close(p.done)
	}
}

// hashing reports whether the pipe computes a digest.
func (p *hashPipe) hashing() bool { return p.h != nil }

// send queues a lent buffer holding the next bytes of the shard, already
// written, for hashing; it belongs to the hasher afterwards.
func (p *hashPipe) send(b []byte) {
	if p.h == nil {
		p.hs.put(b)
		return
	}
	p.flush()
	p.hs.push(hashJob{p: p, kind: jobBuf, b: b})
}

// sendWritten hands back a lent buffer whose bytes were written to the
// shard at off (a batch of small members with their headers) and queues
// them to be hashed back from the file. Read back, a batch costs the
// hasher a copy from the page cache, but the writer no longer waits for
// the hasher to give the buffer back: it goes on while up to maxLag bytes
// wait to be hashed (a few batches of lent buffers, 1 MiB, were the most
// it could run ahead before: converting 2 GB of WebDataset it waited
// 260-330 ms for them, and the manifest cost 1.35x --no-manifest instead
// of 1.15x).
func (p *hashPipe) sendWritten(b []byte, off int64) {
	n := int64(len(b))
	p.hs.put(b)
	p.sendRange(off, n)
}

// sendRange queues n bytes of the shard file at off, already written.
// A range that continues the one before joins it.
func (p *hashPipe) sendRange(off, n int64) {
	if p.h == nil || n <= 0 {
		return
	}
	if p.pendN > 0 && p.pendOff+p.pendN == off {
		p.pendN += n
	} else {
		p.flush()
		p.pendOff, p.pendN = off, n
	}
	if p.pendN >= maxPend {
		p.flush()
	}
}

// flush queues the pending range; every other job calls it first, so the
// work stays in shard order.
func (p *hashPipe) flush() {
	if p.pendN > 0 {
		p.hs.push(hashJob{p: p, kind: jobRange, off: p.pendOff, n: p.pendN})
		p.pendN = 0
	}
}

// mark remembers the digest's state at this point of the shard; rollback
// returns to it, for a member cut off after some of its bytes were queued
// (as lent buffers, never as ranges: their bytes may be cut off the file).
func (p *hashPipe) mark() {
	if p.h != nil {
		p.flush()
		p.hs.push(hashJob{p: p, kind: jobMark})
	}
}

func (p *hashPipe) rollback() {
	if p.h != nil {
		p.flush()
		p.hs.push(hashJob{p: p, kind: jobRollback})
	}
}

// finished reports, without waiting, whether everything queued before the
// pipe was closed has been hashed.
func (p *hashPipe) finished() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// close ends the shard's work: the hasher finishes what is queued for it.
// It may be called more than once.
func (p *hashPipe) close() {
	if !p.shut {
		p.flush()
		p.shut = true
		p.hs.push(hashJob{p: p, kind: jobEnd})
	}
}

// sum closes the pipe, waits for the queued work and returns the digest, or
// nil when the pipe does not hash.
func (p *hashPipe) sum() ([]byte, error) {
	p.close()
	<-p.done
	if p.h == nil {
		return nil, nil
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.h.Sum(nil), nil
}
