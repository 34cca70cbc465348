package packcore

import (
	"hash/maphash"
	"math/bits"

	"github.com/bpconvert/bpconvert/internal/offheap"
)

// memberIndex finds a member of a Set by key. It replaces a
// map[string]memberLoc (about 40 bytes a member on the heap, doubled by the
// collector's headroom): an open-addressing table of 8-byte slots outside
// the heap (package offheap), whose keys are the names in the shards'
// directories, so no key is stored twice. 200,000 members take 4 MB.
type memberIndex struct {
	seed  maphash.Seed
	slots []uint64 // shard index << 32 | entry index + 1; 0 is empty
	n     int      // members, repeated keys counted each time
	// dups holds, for each key that more than one shard holds, every
	// location in shard order (the slot keeps the first). Packs bpconvert
	// writes have none; a pack with many would keep them on the heap.
	dups map[string][]memberLoc
}

// buildMemberIndex indexes every entry of shards, in order. A key in
// several shards is indexed at each location (see dups).
func buildMemberIndex(shards []*shardFile) *memberIndex {
	total := 0
	for _, sf := range shards {
		total += len(sf.dir.Entries)
	}
	x := &memberIndex{seed: maphash.MakeSeed()}
	size := 1 << bits.Len(uint(2*total)) // load at most 1/2
	r := offheap.NewSet(x).Alloc(8 * size)
	x.slots = offheap.View[uint64](r.Bytes(), size)
	for si, sf := range shards {
		for i := range sf.dir.Entries {
			x.n++
			name := sf.dir.Entries[i].Name
			j, found := x.slot(shards, name)
			if !found {
				x.slots[j] = uint64(si)<<32 | uint64(i+1)
				continue
			}
			if x.dups == nil {
				x.dups = map[string][]memberLoc{}
			}
			if x.dups[name] == nil {
				x.dups[name] = []memberLoc{x.loc(shards, j)}
			}
			x.dups[name] = append(x.dups[name], memberLoc{sf, i})
		}
	}
	return x
}

// loc is the location slot j holds.
func (x *memberIndex) loc(shards []*shardFile, j int) memberLoc {
	v := x.slots[j]
	return memberLoc{shards[v>>32], int(uint32(v)) - 1}
}

// slot returns the slot holding key and true, or the empty slot where it
// would go.
func (x *memberIndex) slot(shards []*shardFile, key string) (int, bool) {
	mask := len(x.slots) - 1
	for j := int(maphash.String(x.seed, key)) & mask; ; j = (j + 1) & mask {
		v := x.slots[j]
		if v == 0 {
			return j, false
		}
		if shards[v>>32].dir.Entries[uint32(v)-1].Name == key {
			return j, true
		}
	}
}

// find returns where key is (its first location when several shards hold
// it).
func (x *memberIndex) find(shards []*shardFile, key string) (memberLoc, bool) {
	j, ok := x.slot(shards, key)
	if !ok {
		return memberLoc{}, false
	}
	return x.loc(shards, j), true
}

// findIn returns where key is in shard sf.
func (x *memberIndex) findIn(shards []*shardFile, key string, sf *shardFile) (memberLoc, bool) {
	if locs, ok := x.dups[key]; ok {
		for _, l := range locs {
			if l.shard == sf {
				return l, true
			}
		}
		return memberLoc{}, false
	}
	loc, ok := x.find(shards, key)
	return loc, ok && loc.shard == sf
}
