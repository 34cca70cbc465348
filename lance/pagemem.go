package lance

import (
	"fmt"
	"io"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/bpconvert/bpconvert/lance/internal/decode"
)

// pageMem is the memory a scan reuses from page to page, so that a scan of
// large pages holds about two pages (the one read and its decoded values)
// instead of leaving a page's worth of garbage per page for the collector:
//
//   - raw holds the bytes of the last page read, read with one positioned
//     read; it is reused for the next page unless the decoded array points
//     into it (then the array keeps it and the next page gets a new one);
//   - vals recycles the value buffers of binary columns' full-zip pages: a
//     page's array owns its buffer through a reference count and hands it
//     back when the last batch using it is released.
//
// A scan is used from one goroutine; vals may be handed buffers back from
// any goroutine that releases a batch.
type pageMem struct {
	raw  []byte
	vals valuePool
}

// maxPagePadding is the most bytes between two buffers of one page that a
// single read of the whole span may read needlessly (writers pad each
// buffer to 64 bytes).
const maxPagePadding = 4096

// readPage reads the buffers of a page. With m not nil and the buffers
// lying close together (as writers place them), it reads them with one
// positioned read into m's reusable buffer; settle must then be called
// with the array decoded from them.
func (m *pageMem) readPage(r io.ReaderAt, size int64, p *pageInfo) (decode.PageBuffers, error) {
	if m == nil || len(p.bufOffsets) == 0 {
		return readPageBuffers(r, size, p)
	}
	lo, hi := uint64(size), uint64(0)
	var sum uint64
	for i, off := range p.bufOffsets {
		n := p.bufSizes[i]
		if off > uint64(size) || n > uint64(size)-off {
			return nil, fmt.Errorf("%w: page buffer %d at %d+%d outside the file", errCorrupt, i, off, n)
		}
		lo, hi, sum = min(lo, off), max(hi, off+n), sum+n
	}
	if hi-lo > sum+maxPagePadding*uint64(len(p.bufOffsets)) {
		return readPageBuffers(r, size, p)
	}
	span := int(hi - lo)
	if cap(m.raw) < span {
		m.raw = make([]byte, span)
	}
	b := m.raw[:span]
	if _, err := r.ReadAt(b, int64(lo)); err != nil {
		return nil, fmt.Errorf("read page buffers: %w", err)
	}
	bufs := make(decode.PageBuffers, len(p.bufOffsets))
	for i, off := range p.bufOffsets {
		s := off - lo
		bufs[i] = b[s : s+p.bufSizes[i] : s+p.bufSizes[i]]
	}
	return bufs, nil
}

// settle is called with the array decoded from the page last read and the
// value buffer vals handed to the decoder (nil if none). It returns the
// array to use: for a binary array whose values are vals, the same array
// owning vals through a reference count. The page buffer is kept for reuse
// unless the array points into it.
func (m *pageMem) settle(a arrow.Array, vals []byte) arrow.Array {
	if m == nil {
		return a
	}
	if m.raw != nil && a != nil && overlaps(a.Data(), m.raw) {
		m.raw = nil
	}
	if vals == nil {
		return a
	}
	if a != nil {
		if owned := m.vals.adopt(a, vals); owned != nil {
			a.Release()
			return owned
		}
		if overlaps(a.Data(), vals) {
			return a // the collector frees it with the array
		}
	}
	m.vals.Free(vals)
	return a
}

// release drops the reusable buffers.
func (m *pageMem) release() {
	if m == nil {
		return
	}
	m.raw = nil
	m.vals.mu.Lock()
	m.vals.free = nil
	m.vals.mu.Unlock()
}

// overlaps reports whether any buffer of d (or of its children or
// dictionary) lies in b's memory.
func overlaps(d arrow.ArrayData, b []byte) bool {
	if cap(b) == 0 || d == nil {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := lo + uintptr(cap(b))
	for _, buf := range d.Buffers() {
		if buf == nil || buf.Cap() == 0 {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(buf.Buf())))
		if p >= lo && p < hi {
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

// maxFreeVals is how many value buffers a pool keeps for reuse.
const maxFreeVals = 2

// valuePool recycles value buffers. It is the memory.Allocator of the
// buffers it hands out, so Arrow gives them back (Free) when the last array
// using one is released.
type valuePool struct {
	mu   sync.Mutex
	free [][]byte
}

var _ memory.Allocator = (*valuePool)(nil)

// get returns a buffer of length n, reused if one is free; its contents are
// not zeroed.
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

// Allocate implements memory.Allocator.
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
// largest maxFreeVals buffers.
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
// bytes are vals from the start, with the value buffer owned by p (handed
// back when the copy is released); nil for any other array.
func (p *valuePool) adopt(a arrow.Array, vals []byte) arrow.Array {
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
	if len(v) == 0 || len(v) > len(vals) || unsafe.SliceData(v) != unsafe.SliceData(vals) {
		return nil
	}
	owned := []*memory.Buffer{bufs[0], bufs[1], memory.NewBufferWithAllocator(vals[:len(v)], p)}
	nd := array.NewData(d.DataType(), d.Len(), owned, nil, d.NullN(), d.Offset())
	defer nd.Release()
	owned[2].Release() // nd holds it
	return array.MakeFromData(nd)
}
