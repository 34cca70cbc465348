package packcore

import (
	"crypto/sha256"
	"encoding"
	"fmt"
	"hash"
	"os"
)

// bufPool lends the writer's member buffers. A buffer goes back to the pool
// once written and, when the shard is hashed, once its hasher is done with
// it, so memory stays bounded at poolBuffers buffers whatever the number of
// shards being hashed.
type bufPool struct{ free chan []byte }

// poolBuffers is how many buffers a writer lends: enough for the reader to
// fill one while the hasher works through the others.
const poolBuffers = 4

// zip64ExtraMax is the longest extra field of a local header the writer
// writes (zip64 sizes).
const zip64ExtraMax = 20

// newBufPool returns a pool of poolBuffers buffers, each allocated when
// first needed and only as large as the members it held: a pack of small
// files never holds megabytes of buffers.
func newBufPool() *bufPool {
	p := &bufPool{free: make(chan []byte, poolBuffers)}
	for range poolBuffers {
		p.free <- nil
	}
	return p
}

// get returns an empty buffer of capacity at least n, waiting for one.
func (p *bufPool) get(n int) []byte {
	b := <-p.free
	if cap(b) < n {
		// Grow in steps so a run of slightly larger members does not
		// reallocate every time.
		b = make([]byte, 0, max(n, min(2*cap(b), copyBuf+localLen+MaxKeyBytes+zip64ExtraMax)))
	}
	return b[:0]
}

// put returns a buffer to the pool.
func (p *bufPool) put(b []byte) { p.free <- b[:0] }

// hashJob is one piece of a shard, in shard order, or a mark.
type hashJob struct {
	kind   jobKind
	b      []byte // jobBuf: bytes to hash, a pooled buffer given back afterwards
	off, n int64  // jobRange: bytes of the shard file
}

type jobKind uint8

const (
	jobBuf      jobKind = iota // hash b
	jobRange                   // read n bytes of the shard at off and hash them
	jobMark                    // remember the digest's state
	jobRollback                // return to the remembered state
)

// hashPipe computes one shard's SHA-256 on a goroutine of its own, so that
// hashing overlaps reading and writing, and a completed shard's hashing
// overlaps the next shard's writing. Work arrives in shard order: buffers
// (small members with their headers, hashed from memory, never read twice)
// and ranges of the shard file (a streamed member whose header could only be
// completed after its payload was written, a large member added from
// memory, the central directory: the hasher reads those bytes back, from
// the page cache, while the writer goes on).
type hashPipe struct {
	jobs chan hashJob
	pool *bufPool
	done chan struct{}
	f    *os.File
	h    hash.Hash
	// err is the first failure of the hashing goroutine; read after done.
	err  error
	shut bool
	// pend is a range of the shard not yet queued: adjacent ranges join
	// it, so the hasher reads back in large chunks.
	pendOff, pendN int64
}

// maxPend is the most a pending range holds before it is queued.
const maxPend = 8 << 20

// pipeJobs bounds the queued work; a full queue makes the writer wait.
const pipeJobs = 64

// newHashPipe starts a pipe over the shard file f. A pipe that does not hash
// (for packs written without a manifest) only returns buffers to the pool.
func newHashPipe(hashing bool, f *os.File, pool *bufPool) *hashPipe {
	p := &hashPipe{pool: pool, f: f, done: make(chan struct{})}
	if !hashing {
		p.shut = true
		close(p.done)
		return p
	}
	p.h = sha256.New()
	p.jobs = make(chan hashJob, pipeJobs)
	go p.run()
	return p
}

func (p *hashPipe) run() {
	defer close(p.done)
	var (
		rbuf []byte
		mark []byte
	)
	for j := range p.jobs {
		switch j.kind {
		case jobBuf:
			if p.err == nil {
				p.h.Write(j.b)
			}
			p.pool.put(j.b)
		case jobRange:
			if p.err != nil {
				continue
			}
			if len(rbuf) < copyBuf && int64(len(rbuf)) < j.n {
				// Sized to what is read back: a shard of small members
				// reads only its directory (tens of KiB), and a run may
				// write thousands of shards.
				rbuf = make([]byte, min(copyBuf, max(64<<10, int(j.n), 2*len(rbuf))))
			}
			for j.n > 0 {
				chunk := rbuf[:min(int64(len(rbuf)), j.n)]
				if _, err := p.f.ReadAt(chunk, j.off); err != nil {
					p.err = fmt.Errorf("reading back for the digest: %w", err)
					break
				}
				p.h.Write(chunk)
				j.off += int64(len(chunk))
				j.n -= int64(len(chunk))
			}
		case jobMark:
			if p.err == nil {
				mark, p.err = p.h.(encoding.BinaryMarshaler).MarshalBinary()
			}
		case jobRollback:
			if p.err == nil {
				p.err = p.h.(encoding.BinaryUnmarshaler).UnmarshalBinary(mark)
			}
		}
	}
}

// hashing reports whether the pipe computes a digest.
func (p *hashPipe) hashing() bool { return p.h != nil }

// send queues a pooled buffer for hashing; it belongs to the pipe afterwards.
func (p *hashPipe) send(b []byte) {
	if p.h == nil {
		p.pool.put(b)
		return
	}
	p.flush()
	p.jobs <- hashJob{kind: jobBuf, b: b}
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
		p.jobs <- hashJob{kind: jobRange, off: p.pendOff, n: p.pendN}
		p.pendN = 0
	}
}

// mark remembers the digest's state at this point of the shard; rollback
// returns to it, for a member cut off after some of its bytes were queued.
func (p *hashPipe) mark() {
	if p.h != nil {
		p.flush()
		p.jobs <- hashJob{kind: jobMark}
	}
}

func (p *hashPipe) rollback() {
	if p.h != nil {
		p.flush()
		p.jobs <- hashJob{kind: jobRollback}
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

// close ends the queue: the goroutine finishes what is queued and stops.
// It may be called more than once.
func (p *hashPipe) close() {
	if !p.shut {
		p.flush()
		p.shut = true
		close(p.jobs)
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
