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
	n     int
}

// buildMemberIndex indexes every entry of shards, in order; a key in two
// entries is reported as dup, with the two locations.
func buildMemberIndex(shards []*shardFile) (x *memberIndex, dup *[2]memberLoc) {
	total := 0
	for _, sf := range shards {
		total += len(sf.dir.Entries)
	}
	x = &memberIndex{seed: maphash.MakeSeed()}
	size := 1 << bits.Len(uint(2*total)) // load at most 1/2
	r := offheap.NewSet(x).Alloc(8 * size)
	x.slots = offheap.View[uint64](r.Bytes(), size)
	for si, sf := range shards {
		for i := range sf.dir.Entries {
			j, found := x.slot(shards, sf.dir.Entries[i].Name)
			if found {
				prev := shards[x.slots[j]>>32]
				return nil, &[2]memberLoc{{prev, int(uint32(x.slots[j])) - 1}, {sf, i}}
			}
			x.slots[j] = uint64(si)<<32 | uint64(i+1)
			x.n++
		}
	}
	return x, nil
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

// find returns where key is.
func (x *memberIndex) find(shards []*shardFile, key string) (memberLoc, bool) {
	j, ok := x.slot(shards, key)
	if !ok {
		return memberLoc{}, false
	}
	v := x.slots[j]
	return memberLoc{shards[v>>32], int(uint32(v)) - 1}, true
}
