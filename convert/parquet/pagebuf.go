package parquet

import (
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// pageBuffers is the allocator of the reader of the direct columns (see
// direct.go): it keeps the buffers that their column chunk readers free
// when they close and hands them out again, without zeroing them, to the
// next row group's readers. Those buffers are the page reader's: the
// compressed page, the decompressed page and the dictionary, each as large
// as the chunk's largest page (tens of megabytes in tables written by
// pyarrow, whose pages hold 1,024 values). Allocated afresh for every row
// group they cost a zeroing of their size each time and, as garbage, twice
// their size in the heap until the collector runs.
//
// Handing out dirty memory is sound only because the page reader writes
// every byte of these buffers (pages are read or decompressed into them
// whole) before it reads any, which is why no other reader uses this
// allocator: every other Arrow buffer comes zeroed from mem. The tests
// fill reused buffers with a pattern (poison) and compare the output with
// that of the general path.
type pageBuffers struct {
	mem    memory.Allocator
	poison bool

	mu   sync.Mutex
	free [][]byte // full-length buffers, as mem allocated them
}

// pooledMin is the smallest buffer pageBuffers keeps, pooledMax how many
// it keeps at most.
const (
	pooledMin = 64 << 10
	pooledMax = 8
)

var _ memory.Allocator = (*pageBuffers)(nil)

// Allocate returns the smallest kept buffer of at least size bytes, or a
// new one.
func (p *pageBuffers) Allocate(size int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if len(b) >= size && (best < 0 || len(b) < len(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		p.mu.Unlock()
		return p.mem.Allocate(size)
	}
	b := p.free[best]
	p.free = slices.Delete(p.free, best, best+1)
	p.mu.Unlock()
	if p.poison {
		for i := range b {
			b[i] = 0xa5
		}
	}
	return b[:size]
}

// Reallocate grows b to size bytes, keeping its contents.
func (p *pageBuffers) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free keeps b for a later Allocate, or gives it back to mem when it is
// small or enough are kept (then the smallest goes).
func (p *pageBuffers) Free(b []byte) {
	b = b[:cap(b)]
	if len(b) < pooledMin {
		p.mem.Free(b)
		return
	}
	p.mu.Lock()
	p.free = append(p.free, b)
	var drop []byte
	if len(p.free) > pooledMax {
		i := 0
		for j := range p.free {
			if len(p.free[j]) < len(p.free[i]) {
				i = j
			}
		}
		drop = p.free[i]
		p.free = slices.Delete(p.free, i, i+1)
	}
	p.mu.Unlock()
	if drop != nil {
		p.mem.Free(drop)
	}
}

// release gives every kept buffer back to mem.
func (p *pageBuffers) release() {
	p.mu.Lock()
	free := p.free
	p.free = nil
	p.mu.Unlock()
	for _, b := range free {
		p.mem.Free(b)
	}
}
