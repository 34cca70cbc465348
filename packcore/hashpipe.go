package packcore

import (
	"crypto/sha256"
	"hash"
)

// hashPipe computes a shard's SHA-256 on a second goroutine so hashing
// overlaps with reading and writing. Buffers come from a small free list, so
// memory stays bounded at pipeBuffers buffers.
type hashPipe struct {
	ch   chan []byte
	free chan []byte
	done chan struct{}
	h    hash.Hash
	shut bool
}

const pipeBuffers = 4

// pipeBufSize fits a local header with the longest name plus a small member.
const pipeBufSize = localLen + MaxKeyBytes + 20 + smallMember

// newHashPipe starts a pipe; a pipe that does not hash (for packs written
// without a manifest) only lends buffers.
func newHashPipe(hashing bool) *hashPipe {
	p := &hashPipe{
		ch:   make(chan []byte, pipeBuffers),
		free: make(chan []byte, pipeBuffers),
		done: make(chan struct{}),
	}
	for range pipeBuffers {
		p.free <- make([]byte, 0, pipeBufSize)
	}
	if !hashing {
		p.shut = true
		close(p.done)
		return p
	}
	p.h = sha256.New()
	go func() {
		defer close(p.done)
		for b := range p.ch {
			p.h.Write(b)
			p.free <- b[:0]
		}
	}()
	return p
}

// buf returns an empty buffer of capacity pipeBufSize.
func (p *hashPipe) buf() []byte { return <-p.free }

// release returns a buffer that will not be sent.
func (p *hashPipe) release(b []byte) { p.free <- b[:0] }

// send queues b for hashing; b belongs to the pipe afterwards.
func (p *hashPipe) send(b []byte) {
	if p.h == nil {
		p.release(b)
		return
	}
	p.ch <- b
}

// sum waits for queued buffers and returns the digest, or nil when the pipe
// does not hash.
func (p *hashPipe) sum() []byte {
	p.stop()
	if p.h == nil {
		return nil
	}
	return p.h.Sum(nil)
}

// stop ends the hashing goroutine; it may be called more than once.
func (p *hashPipe) stop() {
	if !p.shut {
		p.shut = true
		close(p.ch)
		<-p.done
	}
}
