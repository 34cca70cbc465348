package objstore

import (
	"context"
	"errors"
	"io"
	"sync"
)

// SeqOptions shape a sequential reader.
type SeqOptions struct {
	// Chunk is the size of one read; 0 means 8 MiB.
	Chunk int64
	// Ahead is how many chunks are fetched ahead of the reader; 0 means 2.
	Ahead int
}

// NewSeqReader reads obj from start to end with reads of opts.Chunk bytes,
// opts.Ahead of them in flight ahead of the caller, so a remote object is
// streamed at the store's speed instead of one request's round trip at a
// time. Memory: (Ahead+1) chunks. Close stops the read-ahead.
func NewSeqReader(ctx context.Context, obj Object, opts SeqOptions) io.ReadCloser {
	if opts.Chunk <= 0 {
		opts.Chunk = 8 << 20
	}
	if opts.Ahead <= 0 {
		opts.Ahead = 2
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &seqReader{cancel: cancel, chunks: make(chan *chunk, opts.Ahead)}
	r.wg.Add(1)
	go r.fetch(ctx, obj, opts)
	return r
}

type chunk struct {
	b    []byte
	err  error
	done chan struct{}
}

type seqReader struct {
	cancel context.CancelFunc
	chunks chan *chunk
	wg     sync.WaitGroup
	cur    *chunk
	pos    int
	err    error
}

// fetch starts the chunks' reads in order, each on a goroutine of its own,
// at most Ahead (plus the one being consumed) at once.
func (r *seqReader) fetch(ctx context.Context, obj Object, opts SeqOptions) {
	defer r.wg.Done()
	defer close(r.chunks)
	size := obj.Size()
	for off := int64(0); off < size; off += opts.Chunk {
		c := &chunk{b: make([]byte, min(opts.Chunk, size-off)), done: make(chan struct{})}
		r.wg.Add(1)
		go func(off int64) {
			defer r.wg.Done()
			defer close(c.done)
			if err := ctx.Err(); err != nil {
				c.err = err
				return
			}
			n, err := obj.ReadAt(c.b, off)
			if n == len(c.b) {
				err = nil
			} else if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			c.err = err
		}(off)
		select {
		case r.chunks <- c:
		case <-ctx.Done():
			return
		}
	}
}

// Read implements io.Reader.
func (r *seqReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	for r.cur == nil || r.pos == len(r.cur.b) {
		c, ok := <-r.chunks
		if !ok {
			r.err = io.EOF
			return 0, io.EOF
		}
		<-c.done
		if c.err != nil {
			r.err = c.err
			return 0, c.err
		}
		r.cur, r.pos = c, 0
	}
	n := copy(p, r.cur.b[r.pos:])
	r.pos += n
	return n, nil
}

// Close stops the read-ahead and waits for it.
func (r *seqReader) Close() error {
	r.cancel()
	for range r.chunks {
	}
	r.wg.Wait()
	if r.err == nil {
		r.err = errors.New("objstore: read after close")
	}
	return nil
}
