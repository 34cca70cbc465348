package keyindex

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// TestSpilledMatchesMap: every put and get agrees with a Go map, through
// growth, empty and long keys, keys that share prefixes and records that
// straddle what is written and what is still gathered; lookups in order
// and out of order, and keys by number. The directory shows no file,
// during or after.
func TestSpilledMatchesMap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	x := NewSpilled(dir, ".keys-*.tmp")
	want := map[string]Loc{}
	keys := []string{"", "a", "a/b", "a/b/", strings.Repeat("k", 65535), strings.Repeat("k", 65534)}
	for i := range 60_000 {
		keys = append(keys, fmt.Sprintf("%04d/%08d.jpg", i/1000, i))
		if i%5000 == 0 {
			keys = append(keys, strings.Repeat(fmt.Sprint(i), 3000)) // long keys between short ones
		}
	}
	for i, k := range keys {
		if _, ok, err := x.Get(k); err != nil || ok {
			t.Fatalf("get(%.20q) before put: %v %v", k, ok, err)
		}
		loc := Loc{Shard: int32(i % 7), Size: int64(rng.Uint32()) << (i % 32)}
		if err := x.Put(k, loc); err != nil {
			t.Fatal(err)
		}
		want[k] = loc
		if i%1000 == 0 { // a key just put, still gathered in memory
			if got, ok, err := x.Get(k); err != nil || !ok || got != loc {
				t.Fatalf("get(%.20q) right after put = %v %v %v, want %v", k, got, ok, err, loc)
			}
		}
	}
	if x.Len() != len(want) {
		t.Fatalf("len %d, want %d", x.Len(), len(want))
	}
	for k, w := range want {
		if got, ok, err := x.Get(k); err != nil || !ok || got != w {
			t.Fatalf("get(%.20q) = %v %v %v, want %v", k, got, ok, err, w)
		}
	}
	for _, k := range []string{"b", "a/", "0000/00000000.jp", "0000/00000000.jpgx", strings.Repeat("k", 65533)} {
		if _, ok, err := x.Get(k); err != nil || ok {
			t.Errorf("get(%.20q) found a key never put (%v)", k, err)
		}
	}
	for i := len(keys) - 1; i >= 0; i -= 7 { // backwards: no block read before
		if got, ok, err := x.Get(keys[i]); err != nil || !ok || got != want[keys[i]] {
			t.Fatalf("get(%.20q) = %v %v %v, want %v", keys[i], got, ok, err, want[keys[i]])
		}
	}
	for i := len(keys) - 1; i >= 0; i -= 997 { // by number, as put
		if k, err := x.Key(i); err != nil || k != keys[i] {
			t.Fatalf("key %d = %.20q %v, want %.20q", i, k, err, keys[i])
		}
	}
	if _, err := x.Key(len(keys)); err == nil {
		t.Error("a key number past the last was found")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("%s shows in the directory", ents[0].Name())
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("%s left after Close", ents[0].Name())
	}
	if _, ok, _ := NewSpilled(dir, "x-*").Get("a"); ok {
		t.Error("an empty index found a key")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatal("an index that was never put to made a file")
	}
}

// BenchmarkSpilledMemory reports the bytes of memory a key costs in a
// Spilled index for 2,000,000 keys of 17 bytes (the shape of `pack` of
// many small files), and the bytes of file.
func BenchmarkSpilledMemory(b *testing.B) {
	keys := make([]string, 2_000_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("%04d/%08d.jpg", i/1000, i)
	}
	for b.Loop() {
		x := NewSpilled(b.TempDir(), "k-*")
		for _, k := range keys {
			if err := x.Put(k, Loc{Size: 1024, Shard: 12}); err != nil {
				b.Fatal(err)
			}
		}
		mem := 5*len(x.nums) + 8*len(x.blocks.S)
		b.ReportMetric(float64(mem)/float64(len(keys)), "B/key")
		b.ReportMetric(float64(x.written+int64(len(x.wbuf)))/float64(len(keys)), "file-B/key")
		x.Close()
	}
}
