package offheap

import (
	"bytes"
	"sync"
	"testing"
	"unsafe"
)

// TestAllocatorBlocks: every block has the length asked for, is zeroed and
// 64-byte aligned, on the heap below MapMin and mapped from it; Free
// returns the mapped ones.
func TestAllocatorBlocks(t *testing.T) {
	t.Parallel()
	a := NewAllocator()
	for _, tc := range []struct {
		n      int
		mapped bool
	}{
		{0, false}, {1, false}, {100, false}, {MapMin - 1, false},
		{MapMin, true}, {MapMin + 1, true}, {3<<20 + 5, true},
	} {
		b := a.Allocate(tc.n)
		if len(b) != tc.n || cap(b) != tc.n {
			t.Fatalf("Allocate(%d): len %d cap %d", tc.n, len(b), cap(b))
		}
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(b))); tc.n > 0 && p%alignment != 0 {
			t.Fatalf("Allocate(%d) at %#x, not 64-byte aligned", tc.n, p)
		}
		if bytes.IndexFunc(b, func(r rune) bool { return r != 0 }) >= 0 {
			t.Fatalf("Allocate(%d) not zeroed", tc.n)
		}
		if got := a.Mapped() > 0; got != tc.mapped && mappable(t) {
			t.Fatalf("Allocate(%d): mapped %v, want %v", tc.n, got, tc.mapped)
		}
		for i := range b {
			b[i] = 0xA5
		}
		a.Free(b)
		if a.Mapped() != 0 {
			t.Fatalf("Free of a block of %d left %d bytes mapped", tc.n, a.Mapped())
		}
	}
}

// mappable reports whether the system gives anonymous mappings (else every
// block is on the heap).
func mappable(t *testing.T) bool {
	b, ok := mapZeroed(4096)
	if ok {
		unmap(b)
	}
	return ok
}

// TestAllocatorReallocate grows a block as a builder does, from the heap
// across MapMin into a mapping and on (remapped, moving), shrinks it and
// grows it again within its mapping: its bytes are kept every time, and
// once freed nothing stays mapped.
func TestAllocatorReallocate(t *testing.T) {
	t.Parallel()
	a := NewAllocator()
	var want []byte
	b := a.Allocate(0)
	for _, n := range []int{64, 1000, MapMin - 64, MapMin + 64, 1 << 20, 1<<20 + 1, 9 << 20, 4096, 8 << 20, 1 << 20} {
		b = a.Reallocate(n, b)
		if len(b) != n {
			t.Fatalf("Reallocate(%d): len %d", n, len(b))
		}
		keep := min(len(want), n)
		if !bytes.Equal(b[:keep], want[:keep]) {
			t.Fatalf("Reallocate(%d) lost the block's first %d bytes", n, keep)
		}
		for i := keep; i < n; i++ {
			b[i] = byte(i*31 + n)
		}
		want = append(want[:0], b...)
	}
	if mappable(t) && a.Mapped() == 0 {
		t.Fatal("a block of 1 MiB is not mapped")
	}
	a.Free(b)
	if a.Mapped() != 0 {
		t.Fatalf("%d bytes still mapped after Free", a.Mapped())
	}
}

// TestAllocatorConcurrent: blocks allocated, grown and freed from several
// goroutines at once keep their own bytes, and all are returned.
func TestAllocatorConcurrent(t *testing.T) {
	t.Parallel()
	a := NewAllocator()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				n := MapMin/2 + (g*50+i)*4096
				b := a.Allocate(n)
				b[n-1] = byte(g)
				b = a.Reallocate(2*n, b)
				if b[n-1] != byte(g) {
					t.Errorf("goroutine %d: a block's byte changed", g)
				}
				a.Free(b)
			}
		}()
	}
	wg.Wait()
	if a.Mapped() != 0 {
		t.Fatalf("%d bytes still mapped", a.Mapped())
	}
}
