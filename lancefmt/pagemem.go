package lancefmt

import (
	"fmt"
	"io"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
)

// pageMem is the memory a scan reuses from page to page, so that a scan of
// large pages holds about one page of a column (two where values grow in
// decoding: the page as read and its decoded values) instead of leaving a
// page's worth of garbage per page for the collector. Both come from one
// pool of buffers:
//
//   - a page's buffers are read with one positioned read into a pooled
//     buffer, which goes back to the pool once the page is decoded unless
//     the decoded array points into it (file 2.0 binary values do, and so
//     do 2.1+ full-zip binary values decoded in place): then a binary array
//     owns it through a reference count, and any other array keeps it for
//     the collector;
//   - the values of a binary column's full-zip page (2.1+) are moved to the
//     start of the page as read when none grows in decoding (plain values,
//     zstd frames of raw blocks), and otherwise decoded into a pooled
//     buffer that the page's array owns the same way;
//   - a batch that spans pages is concatenated into pooled buffers (unless
//     the dataset was opened with an allocator of the caller's).
//
// An owned buffer goes back to the pool when the last batch using it is
// released. A scan is used from one goroutine; buffers may come back from
// any goroutine that releases a batch.
type pageMem struct {
	pool valuePool
}

// maxPagePadding is the most bytes between two buffers of one page that a
// single read of the whole span may read needlessly (writers pad each
// buffer to 64 bytes).
const maxPagePadding = 4096

// readPage reads the buffers of a page. With m not nil and the buffers
// lying close together (as writers place them), it reads them with one
// positioned read into a pooled buffer, raw, which must be handed to settle
// with the array decoded from them.
func (m *pageMem) readPage(r io.ReaderAt, size int64, p *pageInfo) (bufs decode.PageBuffers, raw []byte, err error) {
	if m == nil || len(p.bufOffsets) == 0 {
		bufs, err = readPageBuffers(r, size, p)
		return bufs, nil, err
	}
	lo, hi := uint64(size), uint64(0)
	var sum uint64
	for i, off := range p.bufOffsets {
		n := p.bufSizes[i]
		if off > uint64(size) || n > uint64(size)-off {
			return nil, nil, fmt.Errorf("%w: page buffer %d at %d+%d outside the file", errCorrupt, i, off, n)
		}
		lo, hi, sum = min(lo, off), max(hi, off+n), sum+n
	}
	if hi-lo > sum+maxPagePadding*uint64(len(p.bufOffsets)) {
		bufs, err = readPageBuffers(r, size, p)
		return bufs, nil, err
	}
	raw = m.pool.get(int(hi - lo))
	if _, err := r.ReadAt(raw, int64(lo)); err != nil {
		m.pool.Free(raw)
		return nil, nil, fmt.Errorf("read page buffers: %w", err)
	}
	bufs = make(decode.PageBuffers, len(p.bufOffsets))
	for i, off := range p.bufOffsets {
		s := off - lo
		bufs[i] = raw[s : s+p.bufSizes[i] : s+p.bufSizes[i]]
	}
	return bufs, raw, nil
}

// settle is called with the array decoded from a page (nil when decoding
// failed) and the pooled buffers it was decoded from and into (raw from
// readPage, vals handed to the decoder; either may be nil). It returns the
// array to use: for a binary array whose value bytes lie in one of them,
// the same array owning that buffer through a reference count. A buffer
// the array does not point into goes back to the pool.
func (m *pageMem) settle(a arrow.Array, raw, vals []byte) arrow.Array {
	if m == nil {
		return a
	}
	for _, b := range [][]byte{vals, raw} {
		if b == nil {
			continue
		}
		if a == nil {
			m.pool.Free(b)
			continue
		}
		if owned := m.pool.adopt(a, b); owned != nil {
			a.Release()
			a = owned
			continue
		}
		if !overlaps(a.Data(), b) {
			m.pool.Free(b)
		}
		// Otherwise the array keeps b, and the collector frees it.
	}
	return a
}

// release drops the pooled buffers.
func (m *pageMem) release() {
	if m == nil {
		return
	}
	m.pool.mu.Lock()
	m.pool.free = nil
	m.pool.mu.Unlock()
}

// overlaps reports whether any buffer of d (or of its children or
// dictionary) lies in b's memory.
func overlaps(d arrow.ArrayData, b []byte) bool {
	if cap(b) == 0 || d == nil {
		return false
	}
	for _, buf := range d.Buffers() {
		if buf != nil && within(buf.Buf(), b) {
			return true
		}
	}
	for _, c := range d.Children() {
		if overlaps(c, b) {
			return true
		}
	}
	if dd, ok := d.Dictionary().(*array.Data); ok && dd != nil {
		return overlaps(dd, b)
	}
	return false
}

// within reports whether x starts inside b's memory (up to its capacity).
func within(x, b []byte) bool {
	if cap(x) == 0 || cap(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(x)))
	return p >= lo && p < lo+uintptr(cap(b))
}

// maxFreeVals is how many buffers a pool keeps for reuse: enough for the
// pages a batch of a file 2.0 column spans (their buffers come back after
// the batch is concatenated from them) and the batch itself.
const maxFreeVals = 8

// valuePool recycles page and value buffers. It is the memory.Allocator of the
// buffers it hands out, so Arrow gives them back (Free) when the last array
// using one is released.
type valuePool struct {
	mu   sync.Mutex
	free [][]byte
}

var _ memory.Allocator = (*valuePool)(nil)

// get returns a buffer of length n, the smallest free one that fits if any;
// its contents are not zeroed.
func (p *valuePool) get(n int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		p.free = append(p.free[:best], p.free[best+1:]...)
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return make([]byte, n)
}

// Allocate implements memory.Allocator (for the arrays a scan concatenates
// from several pages).
func (p *valuePool) Allocate(n int) []byte {
	b := p.get(n)
	clear(b)
	return b
}

// Reallocate implements memory.Allocator.
func (p *valuePool) Reallocate(n int, b []byte) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := p.Allocate(n)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free implements memory.Allocator: b may be reused. The pool keeps the
// largest maxFreeVals buffers (never more than the scan held at once).
func (p *valuePool) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < maxFreeVals {
		p.free = append(p.free, b[:0])
		return
	}
	small := 0
	for i := range p.free {
		if cap(p.free[i]) < cap(p.free[small]) {
			small = i
		}
	}
	if cap(p.free[small]) < cap(b) {
		p.free[small] = b[:0]
	}
}

// adopt returns a copy of a, a binary or large binary array whose value
// bytes lie in b (and no other of its buffers), with the value buffer a
// slice of b, which p owns: b comes back to p when the copy is released.
// It returns nil for any other array.
func (p *valuePool) adopt(a arrow.Array, b []byte) arrow.Array {
	switch a.(type) {
	case *array.Binary, *array.LargeBinary:
	default:
		return nil
	}
	d := a.Data()
	bufs := d.Buffers()
	if len(bufs) != 3 || bufs[2] == nil || len(d.Children()) != 0 {
		return nil
	}
	v := bufs[2].Bytes()
	if len(v) == 0 || !within(v, b) || (bufs[0] != nil && within(bufs[0].Buf(), b)) || (bufs[1] != nil && within(bufs[1].Buf(), b)) {
		return nil
	}
	off := int(uintptr(unsafe.Pointer(unsafe.SliceData(v))) - uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	if off+len(v) > cap(b) {
		return nil
	}
	whole := memory.NewBufferWithAllocator(b[:cap(b)], p)
	values := memory.SliceBuffer(whole, off, len(v))
	whole.Release() // values holds it
	owned := []*memory.Buffer{bufs[0], bufs[1], values}
	nd := array.NewData(d.DataType(), d.Len(), owned, nil, d.NullN(), d.Offset())
	values.Release() // nd holds it
	defer nd.Release()
	return array.MakeFromData(nd)
}
