package keyindex

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestKeyIndexMatchesMap: every put and get agrees with a Go map, through
// growth, replacement, empty and long keys and keys that share prefixes.
func TestKeyIndexMatchesMap(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	x := New()
	want := map[string]Loc{}
	keys := []string{"", "a", "a/b", "a/b/", strings.Repeat("k", 65535)}
	for i := range 50_000 {
		keys = append(keys, fmt.Sprintf("%04d/%08d.jpg", i/1000, i))
	}
	for i, k := range keys {
		loc := Loc{Shard: int32(i % 7), Size: int64(rng.Uint32())}
		x.Put(k, loc)
		want[k] = loc
		if i%3 == 0 { // replace some
			loc.Size++
			x.Put(k, loc)
			want[k] = loc
		}
	}
	if x.Len() != len(want) {
		t.Fatalf("len %d, want %d", x.Len(), len(want))
	}
	for k, w := range want {
		if got, ok := x.Get(k); !ok || got != w {
			t.Fatalf("get(%.20q) = %v %v, want %v", k, got, ok, w)
		}
	}
	for _, k := range []string{"b", "a/", "0000/00000000.jp", "0000/00000000.jpgx", strings.Repeat("k", 65534)} {
		if _, ok := x.Get(k); ok {
			t.Errorf("get(%.20q) found a key never put", k)
		}
	}
	if _, ok := New().Get("a"); ok {
		t.Error("an empty index found a key")
	}
}

// BenchmarkKeyIndexMemory reports the bytes a key costs in the index for
// 200,000 keys of 17 bytes (the shape of `pack` of many small files).
func BenchmarkKeyIndexMemory(b *testing.B) {
	keys := make([]string, 200_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("%04d/%08d.jpg", i/1000, i)
	}
	for b.Loop() {
		x := New()
		for _, k := range keys {
			x.Put(k, Loc{Size: 1})
		}
		bytes := len(x.arena.S) + 24*len(x.ents.S) + 4*len(x.slots)
		b.ReportMetric(float64(bytes)/float64(len(keys)), "B/key")
	}
}
