package offheap

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestRemapKeepsBytes: growing a region keeps its bytes and zeroes the
// rest, for mapped memory and for heap memory (the fallback where the
// system refuses a mapping), through growths that move it.
func TestRemapKeepsBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mapped bool
	}{{"mapped", true}, {"heap", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var b []byte
			mapped := false
			if tc.mapped {
				b, mapped = mapZeroed(4096)
				if !mapped {
					t.Skip("no anonymous mapping on this system")
				}
			} else {
				b = make([]byte, 4096)
			}
			want := []byte{}
			for n := 4096; n <= 4<<20; n *= 4 {
				b, mapped = remap(b, mapped, n)
				if len(b) != n {
					t.Fatalf("grown to %d bytes, want %d", len(b), n)
				}
				if !bytes.Equal(b[:len(want)], want) || bytes.IndexFunc(b[len(want):], func(r rune) bool { return r != 0 }) >= 0 {
					t.Fatalf("at %d bytes: contents not kept or rest not zeroed", n)
				}
				for i := len(want); i < n/2; i++ {
					b[i] = byte(i * 7)
				}
				want = append([]byte(nil), b[:n/2]...)
			}
			if mapped {
				unmap(b)
			}
		})
	}
}

// TestRegionsFreed: a set's regions are released once its owner is
// unreachable, with no call from the owner's user.
func TestRegionsFreed(t *testing.T) {
	type owner struct{ t Table[uint64] }
	o := &owner{}
	set := NewSet(o)
	o.t = NewTable[uint64](set)
	for i := range 100_000 {
		o.t.Push(uint64(i))
	}
	if o.t.S[99_999] != 99_999 || set.Count() != 1 {
		t.Fatalf("table: last %d, %d regions", o.t.S[99_999], set.Count())
	}
	r := o.t.r
	o = nil
	if !testtool.WaitFor(10*time.Second, 10*time.Millisecond, func() bool {
		runtime.GC()
		return set.Count() == 0
	}) {
		t.Fatal("regions not freed after the owner became unreachable")
	}
	if r.b != nil || r.mapped {
		t.Error("region not freed")
	}
}

// TestExtendZeroes: elements appended by Extend are zero, also where the
// table was cut back over elements written before.
func TestExtendZeroes(t *testing.T) {
	t.Parallel()
	type owner struct{ t Table[uint64] }
	o := &owner{}
	o.t = NewTable[uint64](NewSet(o))
	for i := range 1000 {
		o.t.Push(uint64(i) + 1)
	}
	o.t.S = o.t.S[:10]
	o.t.Extend(500)
	if len(o.t.S) != 510 || o.t.S[9] != 10 {
		t.Fatalf("length %d, element 9 = %d", len(o.t.S), o.t.S[9])
	}
	for i, v := range o.t.S[10:] {
		if v != 0 {
			t.Fatalf("element %d = %d after Extend, want 0", 10+i, v)
		}
	}
}
