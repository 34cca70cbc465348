package packcore

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// TestRemapKeepsBytes: growing a region keeps its bytes and zeroes the
// rest, for mapped memory and for heap memory (the fallback where the
// system refuses a mapping), through growths that move it.
func TestRemapKeepsBytes(t *testing.T) {
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

// TestRegionsFreed: the key index's memory outside the heap is released
// once the index is unreachable, with no call from its user.
func TestRegionsFreed(t *testing.T) {
	x := newKeyIndex()
	for i := range 20_000 {
		x.put(string(rune('a'+i%26))+string(rune(i)), keyLoc{size: int64(i)})
	}
	set := x.set
	if set.count() != 3 { // arena, entries, slots (old slot tables released)
		t.Fatalf("%d regions, want 3", set.count())
	}
	regions := append([]*region(nil), set.rs...)
	x = nil
	deadline := time.Now().Add(10 * time.Second)
	for set.count() > 0 {
		if time.Now().After(deadline) {
			t.Fatal("regions not freed after the index became unreachable")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	for i, r := range regions {
		if r.b != nil || r.mapped {
			t.Errorf("region %d not freed", i)
		}
	}
}
