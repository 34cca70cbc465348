package packcore

import "hash/maphash"

// keyIndex maps every key a writer holds to where it went. It replaces a
// map[string]keyLoc, which costs about 110 bytes a key for short keys (the
// map's slot, the string header and the key's own allocation, often a
// substring keeping a longer path alive): here the keys lie back to back in
// one arena, each entry is 24 bytes and the open-addressing table 4 to 8
// bytes a key, so 200,000 keys of 17 bytes take about 10 MB instead of 22.
// It holds at most 2^31-1 keys (a shard holds at most 65,535).
//
// The three arrays live outside the Go heap (see offheap.go): on the heap
// the collector's pacing would double their cost, and their untouched
// capacity costs nothing there.
type keyIndex struct {
	seed  maphash.Seed
	set   *regionSet
	arena table[byte]     // every key, back to back
	ents  table[keyEntry] // in insertion order
	slotR *region
	slots []int32 // entry index + 1; 0 is empty. Length a power of two.
}

// keyEntry is one key: its bytes in the arena and where it went (keyLoc's
// fields, laid out to make 24 bytes).
type keyEntry struct {
	off   int64
	size  int64
	n     uint32
	shard int32
}

func (e *keyEntry) loc() keyLoc { return keyLoc{shard: e.shard, size: e.size} }

func newKeyIndex() *keyIndex {
	x := &keyIndex{seed: maphash.MakeSeed()}
	x.set = newRegionSet(x)
	x.arena = newTable[byte](x.set)
	x.ents = newTable[keyEntry](x.set)
	return x
}

// len returns the number of keys.
func (x *keyIndex) len() int { return len(x.ents.s) }

// entry returns entry number i.
func (x *keyIndex) entry(i int) *keyEntry { return &x.ents.s[i] }

// slot returns the slot holding key, or the empty slot where it would go.
func (x *keyIndex) slot(key string, h uint64) int {
	mask := len(x.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return i
		}
		e := &x.ents.s[s-1]
		if int(e.n) == len(key) && string(x.arena.s[e.off:e.off+int64(e.n)]) == key {
			return i
		}
	}
}

// get returns where key went.
func (x *keyIndex) get(key string) (keyLoc, bool) {
	i, ok := x.find(key)
	if !ok {
		return keyLoc{}, false
	}
	return x.ents.s[i].loc(), true
}

// find returns the entry number of key (its position in insertion order).
func (x *keyIndex) find(key string) (int, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	s := x.slots[x.slot(key, maphash.String(x.seed, key))]
	return int(s) - 1, s != 0
}

// put records where key went; it replaces an earlier entry for key.
func (x *keyIndex) put(key string, loc keyLoc) {
	if 2*(len(x.ents.s)+1) > len(x.slots) { // load at most 1/2
		x.grow()
	}
	h := maphash.String(x.seed, key)
	i := x.slot(key, h)
	if s := x.slots[i]; s != 0 {
		x.ents.s[s-1].shard, x.ents.s[s-1].size = loc.shard, loc.size
		return
	}
	x.ents.push(keyEntry{off: int64(len(x.arena.s)), size: loc.size, n: uint32(len(key)), shard: loc.shard})
	pushString(&x.arena, key)
	x.slots[i] = int32(len(x.ents.s))
}

// grow doubles the table and places every entry again.
func (x *keyIndex) grow() {
	n := max(2*len(x.slots), 1024)
	old := x.slotR
	x.slotR = x.set.alloc(4 * n)
	x.slots = viewOf[int32](x.slotR.b, n)
	if old != nil {
		x.set.release(old)
	}
	mask := n - 1
	for j := range x.ents.s {
		e := &x.ents.s[j]
		h := maphash.Bytes(x.seed, x.arena.s[e.off:e.off+int64(e.n)])
		i := int(h) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = int32(j + 1)
	}
}
