// Package offheap keeps large, pointer-free tables that live as long as
// their owner outside the Go heap. The collector lets the heap grow to
// twice what was live at its last cycle before it collects again, so a
// 10 MB table on the heap costs about 20 MB of memory; outside it, the
// table costs the pages it touches, and the heap's own growth is paced by
// the small objects alone. The tables hold no pointers, so the collector
// has nothing to find in them.
package offheap

import (
	"runtime"
	"sync"
	"unsafe"
)

// Region is one block of memory outside the heap (or on it, where the
// system would not map one).
type Region struct {
	b      []byte
	mapped bool // b is a private anonymous mapping, unmapped when freed
}

// Set owns the regions of one table owner. It is released by a
// cleanup once the owner is unreachable, so no caller has to free it and
// no use after a Close can touch freed memory. The lock orders the owner's
// last calls before the cleanup, which runs on a goroutine of its own.
type Set struct {
	mu sync.Mutex
	rs []*Region
}

// NewSet returns a set whose regions are freed once owner is unreachable.
// The owner must not be reachable from the set.
func NewSet[T any](owner *T) *Set {
	s := &Set{}
	runtime.AddCleanup(owner, func(s *Set) { s.free() }, s)
	return s
}

// Alloc returns a zeroed region of at least n bytes, recorded in the set.
func (s *Set) Alloc(n int) *Region {
	r := &Region{}
	r.b, r.mapped = mapZeroed(n)
	s.mu.Lock()
	s.rs = append(s.rs, r)
	s.mu.Unlock()
	return r
}

// Release frees r at once and forgets it (for a region replaced by a new
// one, such as a rebuilt hash table); r must not be used afterwards.
func (s *Set) Release(r *Region) {
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

// Count returns how many regions the set holds.
func (s *Set) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rs)
}

func (s *Set) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rs {
		r.free()
	}
	s.rs = nil
}

func (r *Region) free() {
	if r.mapped {
		unmap(r.b)
	}
	r.b, r.mapped = nil, false
}

// Bytes returns the region's memory.
func (r *Region) Bytes() []byte { return r.b }

// grow makes r at least n bytes long, keeping its contents. A mapping is
// moved by the kernel (no copy of the bytes where the system can remap).
func (r *Region) grow(n int) {
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

// Table is a growable array of pointer-free T in a region.
type Table[T any] struct {
	r *Region
	// S holds the elements, a view of the region: appending to it within
	// its capacity (after Reserve) stays in the region.
	S []T
}

// NewTable returns an empty table whose region belongs to set.
func NewTable[T any](set *Set) Table[T] {
	return Table[T]{r: set.Alloc(0)}
}

// View returns b as a []T of length n (capacity as far as b goes). T must
// hold no pointers.
func View[T any](b []byte, n int) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(b) < size {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)[:n]
}

// Reserve makes room for n more elements, growing the region by doubling.
func (t *Table[T]) Reserve(n int) {
	n += len(t.S)
	if n > cap(t.S) {
		var z T
		size := int(unsafe.Sizeof(z))
		t.r.grow(pageRound(max(2*len(t.r.b), n*size, 64<<10)))
		t.S = View[T](t.r.b, len(t.S))
	}
}

// Push appends v.
func (t *Table[T]) Push(v T) {
	t.Reserve(1)
	t.S = append(t.S, v)
}

// Extend appends n zero elements. They are cleared: a table whose S was
// cut back (as the pack writer's directory is, shard after shard) has old
// elements past its length.
func (t *Table[T]) Extend(n int) {
	t.Reserve(n)
	old := len(t.S)
	t.S = t.S[:old+n]
	clear(t.S[old:])
}

// PushString appends the bytes of s to a table of bytes.
func PushString(t *Table[byte], s string) {
	t.Reserve(len(s))
	t.S = append(t.S, s...)
}
