package packcore

import "hash/maphash"

// keyIndex maps every key a writer holds to where it went. It replaces a
// map[string]keyLoc, which costs about 110 bytes a key for short keys (the
// map's slot, the string header and the key's own allocation, often a
// substring keeping a longer path alive): here the keys lie back to back in
// one arena, each entry is 24 bytes and the open-addressing table 4 to 8
// bytes a key, so 200,000 keys of 17 bytes take about 10 MB instead of 22.
// It holds at most 2^31-1 keys (a shard holds at most 65,535).
type keyIndex struct {
	seed  maphash.Seed
	arena []byte     // every key, back to back
	ents  []keyEntry // in insertion order
	slots []int32    // entry index + 1; 0 is empty. Length a power of two.
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
	return &keyIndex{seed: maphash.MakeSeed()}
}

// len returns the number of keys.
func (x *keyIndex) len() int { return len(x.ents) }

// slot returns the slot holding key, or the empty slot where it would go.
func (x *keyIndex) slot(key string, h uint64) int {
	mask := len(x.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return i
		}
		e := &x.ents[s-1]
		if int(e.n) == len(key) && string(x.arena[e.off:e.off+int64(e.n)]) == key {
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
	return x.ents[i].loc(), true
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
	if 2*(len(x.ents)+1) > len(x.slots) { // load at most 1/2
		x.grow()
	}
	h := maphash.String(x.seed, key)
	i := x.slot(key, h)
	if s := x.slots[i]; s != 0 {
		x.ents[s-1].shard, x.ents[s-1].size = loc.shard, loc.size
		return
	}
	x.ents = append(x.ents, keyEntry{off: int64(len(x.arena)), size: loc.size, n: uint32(len(key)), shard: loc.shard})
	x.arena = append(x.arena, key...)
	x.slots[i] = int32(len(x.ents))
}

// grow doubles the table and places every entry again.
func (x *keyIndex) grow() {
	n := max(2*len(x.slots), 1024)
	x.slots = make([]int32, n)
	mask := n - 1
	for j := range x.ents {
		e := &x.ents[j]
		h := maphash.Bytes(x.seed, x.arena[e.off:e.off+int64(e.n)])
		i := int(h) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = int32(j + 1)
	}
}
