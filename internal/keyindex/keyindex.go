// Package keyindex maps keys to where they went (a shard number and a
// size) in little memory, outside the Go heap, for runs that hold millions
// of keys.
package keyindex

import (
	"hash/maphash"

	"github.com/bpconvert/bpconvert/internal/offheap"
)

// Index maps keys to where they went (the pack writer's keys, verify's and
// convert-wds's sample keys). It replaces a
// map[string]Loc, which costs about 110 bytes a key for short keys (the
// map's slot, the string header and the key's own allocation, often a
// substring keeping a longer path alive): here the keys lie back to back in
// one arena, each entry is 24 bytes and the open-addressing table 4 to 8
// bytes a key, so 200,000 keys of 17 bytes take about 10 MB instead of 22.
// It holds at most 2^31-1 keys (a shard holds at most 65,535).
//
// The three arrays live outside the Go heap (package offheap): on the heap
// the collector's pacing would double their cost, and their untouched
// capacity costs nothing there. An Index is not safe for concurrent use.
type Index struct {
	seed  maphash.Seed
	set   *offheap.Set
	arena offheap.Table[byte]  // every key, back to back
	ents  offheap.Table[entry] // in insertion order
	slotR *offheap.Region
	slots []int32 // entry index + 1; 0 is empty. Length a power of two.
}

// Loc is where a key went: the index of its shard (in whatever list the
// user keeps) and its size.
type Loc struct {
	Shard int32
	Size  int64
}

// entry is one key: its bytes in the arena and where it went (Loc's
// fields, laid out to make 24 bytes).
type entry struct {
	off   int64
	size  int64
	n     uint32
	shard int32
}

func (e *entry) loc() Loc { return Loc{Shard: e.shard, Size: e.size} }

// New returns an empty index. Its memory is released once it is
// unreachable.
func New() *Index {
	x := &Index{seed: maphash.MakeSeed()}
	x.set = offheap.NewSet(x)
	x.arena = offheap.NewTable[byte](x.set)
	x.ents = offheap.NewTable[entry](x.set)
	return x
}

// Len returns the number of keys.
func (x *Index) Len() int { return len(x.ents.S) }

// At returns where entry number i (see Find) went.
func (x *Index) At(i int) Loc { return x.ents.S[i].loc() }

// slot returns the slot holding key, or the empty slot where it would go.
func (x *Index) slot(key string, h uint64) int {
	mask := len(x.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return i
		}
		e := &x.ents.S[s-1]
		if int(e.n) == len(key) && string(x.arena.S[e.off:e.off+int64(e.n)]) == key {
			return i
		}
	}
}

// Get returns where key went.
func (x *Index) Get(key string) (Loc, bool) {
	i, ok := x.Find(key)
	if !ok {
		return Loc{}, false
	}
	return x.ents.S[i].loc(), true
}

// Find returns the entry number of key (its position in insertion order).
func (x *Index) Find(key string) (int, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	s := x.slots[x.slot(key, maphash.String(x.seed, key))]
	return int(s) - 1, s != 0
}

// Put records where key went; it replaces an earlier entry for key.
func (x *Index) Put(key string, loc Loc) {
	if 2*(len(x.ents.S)+1) > len(x.slots) { // load at most 1/2
		x.grow()
	}
	h := maphash.String(x.seed, key)
	i := x.slot(key, h)
	if s := x.slots[i]; s != 0 {
		x.ents.S[s-1].shard, x.ents.S[s-1].size = loc.Shard, loc.Size
		return
	}
	x.ents.Push(entry{off: int64(len(x.arena.S)), size: loc.Size, n: uint32(len(key)), shard: loc.Shard})
	offheap.PushString(&x.arena, key)
	x.slots[i] = int32(len(x.ents.S))
}

// grow doubles the table and places every entry again.
func (x *Index) grow() {
	n := max(2*len(x.slots), 1024)
	old := x.slotR
	x.slotR = x.set.Alloc(4 * n)
	x.slots = offheap.View[int32](x.slotR.Bytes(), n)
	if old != nil {
		x.set.Release(old)
	}
	mask := n - 1
	for j := range x.ents.S {
		e := &x.ents.S[j]
		h := maphash.Bytes(x.seed, x.arena.S[e.off:e.off+int64(e.n)])
		i := int(h) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = int32(j + 1)
	}
}
