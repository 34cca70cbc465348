package packcore

import (
	"runtime"
	"sync"
	"unsafe"
)

// Large tables that live as long as a writer (the key index) are kept
// outside the Go heap. The collector lets the heap grow to twice what was
// live at its last cycle before it collects again, so a 10 MB table on the
// heap costs about 20 MB of memory; outside it, the table costs what it
// touches, and the heap's own growth is paced by the small objects alone.
// The tables hold no pointers, so the collector has nothing to find in them.

// region is one block of memory outside the heap (or on it, where the
// system would not map one).
type region struct {
	b      []byte
	mapped bool // b is a private anonymous mapping, unmapped when freed
}

// regionSet owns the regions of one table owner. It is released by a
// cleanup once the owner is unreachable, so no caller has to free it and
// no use after a Close can touch freed memory. The lock orders the owner's
// last calls before the cleanup, which runs on a goroutine of its own.
type regionSet struct {
	mu sync.Mutex
	rs []*region
}

// newRegionSet returns a set whose regions are freed once owner is
// unreachable.
func newRegionSet[T any](owner *T) *regionSet {
	s := &regionSet{}
	runtime.AddCleanup(owner, func(s *regionSet) { s.free() }, s)
	return s
}

// alloc returns a zeroed region of at least n bytes, recorded in the set.
func (s *regionSet) alloc(n int) *region {
	r := &region{}
	r.b, r.mapped = mapZeroed(n)
	s.mu.Lock()
	s.rs = append(s.rs, r)
	s.mu.Unlock()
	return r
}

// release frees r at once and forgets it (for a region replaced by a new
// one, such as a rebuilt hash table).
func (s *regionSet) release(r *region) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.rs {
		if x == r {
			s.rs = append(s.rs[:i], s.rs[i+1:]...)
			break
		}
	}
	r.free()
}

// count returns how many regions the set holds.
func (s *regionSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rs)
}

func (s *regionSet) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rs {
		r.free()
	}
	s.rs = nil
}

func (r *region) free() {
	if r.mapped {
		unmap(r.b)
	}
	r.b, r.mapped = nil, false
}

// grow makes r at least n bytes long, keeping its contents. A mapping is
// moved by the kernel (no copy of the bytes where the system can remap).
func (r *region) grow(n int) {
	if n <= len(r.b) {
		return
	}
	r.b, r.mapped = remap(r.b, r.mapped, n)
}

// pageRound rounds n up to a whole number of pages.
func pageRound(n int) int {
	const page = 4096
	return (n + page - 1) &^ (page - 1)
}

// table is a growable array of pointer-free T in a region.
type table[T any] struct {
	r *region
	s []T // the elements, a view of r.b
}

func newTable[T any](set *regionSet) table[T] {
	return table[T]{r: set.alloc(0)}
}

// viewOf returns b as a []T of length n (capacity as far as b goes).
func viewOf[T any](b []byte, n int) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(b) < size {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)[:n]
}

// reserve makes room for n more elements, growing the region by doubling.
func (t *table[T]) reserve(n int) {
	n += len(t.s)
	if n > cap(t.s) {
		var z T
		size := int(unsafe.Sizeof(z))
		t.r.grow(pageRound(max(2*len(t.r.b), n*size, 64<<10)))
		t.s = viewOf[T](t.r.b, len(t.s))
	}
}

// push appends v.
func (t *table[T]) push(v T) {
	t.reserve(1)
	t.s = append(t.s, v)
}

// pushString appends the bytes of s to a table of bytes.
func pushString(t *table[byte], s string) {
	t.reserve(len(s))
	t.s = append(t.s, s...)
}
