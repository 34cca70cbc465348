package offheap

import (
	"sync"
	"unsafe"
)

// Allocator hands out blocks of memory to a library that takes an
// allocator with this method set (Arrow's memory.Allocator has it), so
// that the library's large, short-lived buffers (a table writer's batch of
// columns, its encoders' pages) leave the Go heap: on the heap the
// collector lets them pile up to twice what is live before it collects
// again, outside it Free returns them to the system at once. Blocks of at
// least MapMin bytes are private anonymous mappings, grown by remapping
// (without a copy where the system can); smaller ones, and all of them
// where the system refuses a mapping, come from the heap and are left to
// the collector, as the library's own heap allocator would. Every block
// is zeroed when allocated and 64-byte aligned.
//
// A block must be given to Reallocate or Free as Allocate or Reallocate
// returned it (a shorter length is fine) and not be used after Free; a
// block never freed stays mapped. An Allocator is safe for concurrent use.
type Allocator struct {
	mu sync.Mutex
	// mapped holds the mapped length of every mapped block, by its first
	// byte.
	mapped map[*byte]int
}

// MapMin is the smallest block an Allocator maps outside the heap.
const MapMin = 64 << 10

// alignment is the alignment of every block (Arrow's).
const alignment = 64

// NewAllocator returns an allocator with no blocks.
func NewAllocator() *Allocator { return &Allocator{mapped: map[*byte]int{}} }

// Allocate returns a zeroed block of n bytes.
func (a *Allocator) Allocate(n int) []byte {
	if n >= MapMin {
		if b, ok := mapZeroed(pageRound(n)); ok {
			a.mu.Lock()
			a.mapped[unsafe.SliceData(b)] = len(b)
			a.mu.Unlock()
			return b[:n:n]
		}
	}
	return heapBlock(n)
}

// heapBlock returns n zeroed bytes of the heap, 64-byte aligned.
func heapBlock(n int) []byte {
	b := make([]byte, n+alignment)
	shift := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (alignment - 1))
	return b[shift : shift+n : shift+n]
}

// Reallocate returns b resized to n bytes, its first min(len(b), n) bytes
// kept: b itself where it has the room, else a block that replaces it (b
// must not be used afterwards).
func (a *Allocator) Reallocate(n int, b []byte) []byte {
	if cap(b) == 0 {
		return a.Allocate(n)
	}
	base := unsafe.SliceData(b)
	a.mu.Lock()
	size, ok := a.mapped[base]
	a.mu.Unlock()
	if !ok {
		if cap(b) >= n {
			return b[:n]
		}
		nb := a.Allocate(n)
		copy(nb, b)
		return nb
	}
	whole := unsafe.Slice(base, size)
	if n <= size {
		return whole[:n:n]
	}
	nb, mapped := remap(whole, true, pageRound(n))
	a.mu.Lock()
	delete(a.mapped, base)
	if mapped {
		a.mapped[unsafe.SliceData(nb)] = len(nb)
	}
	a.mu.Unlock()
	return nb[:n:n]
}

// Free returns a mapped block to the system; a heap block is left to the
// collector.
func (a *Allocator) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	base := unsafe.SliceData(b)
	a.mu.Lock()
	size, ok := a.mapped[base]
	delete(a.mapped, base)
	a.mu.Unlock()
	if ok {
		unmap(unsafe.Slice(base, size))
	}
}

// Mapped returns how many bytes of mapped blocks are allocated.
func (a *Allocator) Mapped() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, size := range a.mapped {
		n += size
	}
	return n
}
