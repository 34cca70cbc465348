// Package capalloc bounds what an Arrow reader of untrusted bytes may
// allocate. A length field in a hostile file can ask arrow-go for a buffer
// far larger than the file, and an allocation the machine cannot satisfy
// ends the process; wrapped in an Allocator, such a request panics with an
// *Error instead, which the reader's caller recovers and reports as a
// malformed input.
//
// It is for readers of Arrow IPC data (Lance deletion files, Hugging Face
// save_to_disk shards). It is not an accounting allocator (see
// memory.CheckedAllocator) and does not make an allocator safe for
// concurrent use.
package capalloc

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Limits are an Allocator's bounds; a zero field is no bound.
type Limits struct {
	// Buffer caps the size of each buffer asked for.
	Buffer int64
	// Total caps the bytes held at once: those allocated and not yet
	// freed. With a Total, a negative size is refused too.
	Total int64
}

// Allocator passes requests within its Limits to the allocator it wraps and
// panics with an *Error for one beyond them. It is not safe for concurrent
// use.
type Allocator struct {
	inner  memory.Allocator
	limits Limits
	used   int64
}

var _ memory.Allocator = (*Allocator)(nil)

// New returns an allocator that serves requests from inner within l.
func New(inner memory.Allocator, l Limits) *Allocator {
	return &Allocator{inner: inner, limits: l}
}

// Error is the panic value of a request beyond an Allocator's limits.
type Error struct {
	// Size is the size asked for.
	Size int64
	// Buffer is true when the request was over Limits.Buffer, false when it
	// would have brought the bytes held over Limits.Total.
	Buffer bool
}

func (e *Error) Error() string {
	if e.Buffer {
		return fmt.Sprintf("a buffer of %d bytes, more than a file of this size can hold", e.Size)
	}
	return "allocation limit exceeded"
}

// Allocate returns a buffer of n bytes from the wrapped allocator.
func (a *Allocator) Allocate(n int) []byte {
	a.grow(n, 0)
	return a.inner.Allocate(n)
}

// Reallocate resizes b to n bytes with the wrapped allocator.
func (a *Allocator) Reallocate(n int, b []byte) []byte {
	a.grow(n, len(b))
	return a.inner.Reallocate(n, b)
}

// Free returns b to the wrapped allocator.
func (a *Allocator) Free(b []byte) {
	a.used -= int64(len(b))
	a.inner.Free(b)
}

// grow counts a request for n bytes that replaces old ones, or panics when
// it is beyond the limits (a refused request is not counted).
func (a *Allocator) grow(n, old int) {
	if a.limits.Buffer > 0 && int64(n) > a.limits.Buffer {
		panic(&Error{Size: int64(n), Buffer: true})
	}
	used := a.used + int64(n) - int64(old)
	if a.limits.Total > 0 && (n < 0 || used > a.limits.Total) {
		panic(&Error{Size: int64(n)})
	}
	a.used = used
}
