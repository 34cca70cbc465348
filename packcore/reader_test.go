package packcore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, key, shard string
		ok              bool
	}{
		{"zip://images/0000.jpg::media/pack-0000.zip", "images/0000.jpg", "media/pack-0000.zip", true},
		{"zip://a::b::c", "a", "b::c", true},
		{"zip://a.jpg::pack-0000.zip", "a.jpg", "pack-0000.zip", true},
		{"media/a.jpg", "", "", false},
		{"zip://a.jpg", "", "", false},
		{"zip://::media/p.zip", "", "", false},
		{"zip://a::", "", "", false},
		{"ZIP://a::b", "", "", false},
	}
	for _, tc := range tests {
		k, s, err := ParseRef(tc.ref)
		if (err == nil) != tc.ok || k != tc.key || s != tc.shard {
			t.Errorf("ParseRef(%q) = %q, %q, %v", tc.ref, k, s, err)
		}
		if tc.ok && FormatRef(k, s) != tc.ref {
			t.Errorf("FormatRef round trip of %q = %q", tc.ref, FormatRef(k, s))
		}
		if !tc.ok && !errors.Is(err, ErrNotRef) {
			t.Errorf("ParseRef(%q) error %v does not wrap ErrNotRef", tc.ref, err)
		}
	}
	for in, want := range map[string]string{"": "", ".": "", "./media": "media", "a/b/../c": "a/c", `a\b`: "a/b",
		"/abs/ds/media/": "/abs/ds/media", "s3://bucket/ds/media/": "s3://bucket/ds/media", "https://host/a/./b": "https://host/a/b"} {
		if got := CleanRefBase(in); got != want {
			t.Errorf("CleanRefBase(%q) = %q, want %q", in, got, want)
		}
	}
	for _, tc := range []struct{ base, want string }{
		{"", "pack-0000.zip"},
		{"media", "media/pack-0000.zip"},
		{"/abs/ds/media", "/abs/ds/media/pack-0000.zip"},
		{"s3://bucket/ds/media", "s3://bucket/ds/media/pack-0000.zip"},
		{"https://host/ds/media/", "https://host/ds/media/pack-0000.zip"},
	} {
		if got := JoinShardPath(tc.base, "pack-0000.zip"); got != tc.want {
			t.Errorf("JoinShardPath(%q) = %q, want %q", tc.base, got, tc.want)
		}
	}
}

func TestReaderResolution(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "media")
	ms := []member{
		{key: "a.jpg", data: payload(1, 500)},
		{key: "b.jpg", data: payload(2, 500)},
		{key: "c.jpg", data: payload(3, 5000)},
	}
	w, err := Create(context.Background(), dir, WriterOptions{MaxMembers: 2})
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]string{}
	for _, m := range ms {
		ref, err := w.Add(m.key, bytes.NewReader(m.data), int64(len(m.data)), "")
		if err != nil {
			t.Fatal(err)
		}
		refs[m.key] = ref
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if refs["c.jpg"] != "zip://c.jpg::media/pack-0001.zip" {
		t.Fatalf("ref %q", refs["c.jpg"])
	}
	set, err := OpenSet(dir, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if set.Len() != 3 || strings.Join(set.Shards(), ",") != "pack-0000.zip,pack-0001.zip" {
		t.Fatalf("set: %d members, shards %v", set.Len(), set.Shards())
	}
	for _, m := range ms {
		for _, q := range []string{m.key, refs[m.key]} {
			b, err := set.Read(q)
			if err != nil || !bytes.Equal(b, m.data) {
				t.Errorf("Read(%q): %v", q, err)
			}
		}
	}
	for _, bad := range []string{
		"zip://a.jpg::other/pack-0000.zip", // wrong directory
		"zip://a.jpg::media/pack-0009.zip", // unknown shard
		"zip://a.jpg::media/pack-0001.zip", // key lives in another shard
		"missing.jpg",
	} {
		if _, err := set.Read(bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("Read(%q) = %v, want ErrNotFound", bad, err)
		}
	}
	// A set opened with "." accepts any directory.
	any, err := OpenSet(dir, SetOptions{RefBase: "."})
	if err != nil {
		t.Fatal(err)
	}
	defer any.Close()
	if _, err := any.Read("zip://a.jpg::elsewhere/pack-0000.zip"); err != nil {
		t.Errorf("any-directory set: %v", err)
	}

	// Open is bounded to the member.
	r, err := set.Open(refs["c.jpg"])
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != 5000 {
		t.Fatalf("size %d", r.Size())
	}
	if _, err := r.Seek(4990, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if !bytes.Equal(rest, ms[2].data[4990:]) {
		t.Fatalf("tail read %d bytes", len(rest))
	}
	if n, err := r.ReadAt(make([]byte, 10), 5000); n != 0 || err != io.EOF {
		t.Fatalf("read past end: %d %v", n, err)
	}

	got, err := set.ReadMany(context.Background(), []string{"c.jpg", refs["a.jpg"], "b.jpg", "a.jpg"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"c.jpg", "a.jpg", "b.jpg", "a.jpg"} {
		want := ms[map[string]int{"a.jpg": 0, "b.jpg": 1, "c.jpg": 2}[k]].data
		if !bytes.Equal(got[i], want) {
			t.Errorf("ReadMany[%d] differs", i)
		}
	}
	if _, err := set.ReadMany(context.Background(), []string{"a.jpg", "nope"}, 2); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadMany with a missing key: %v", err)
	}

	// Iteration order: shard order, then directory order.
	var keys []string
	for m := range set.Members() {
		keys = append(keys, m.Key)
	}
	if strings.Join(keys, ",") != "a.jpg,b.jpg,c.jpg" {
		t.Fatalf("order %v", keys)
	}

	// A single shard opens on its own; its references name its directory.
	one, err := OpenSet(filepath.Join(dir, "pack-0001.zip"), SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if _, err := one.Read(refs["c.jpg"]); err != nil {
		t.Fatal(err)
	}
}

// TestDuplicateKeyAcrossShards: in a pack where two shards hold the key
// same.bin (two packs written apart, the second's shard renamed into the
// first's directory), a reference reads the member of the shard it names,
// the bare key is refused as ambiguous, Unique names the key and Verify
// reports it.
func TestDuplicateKeyAcrossShards(t *testing.T) {
	t.Parallel()
	dir, other := filepath.Join(t.TempDir(), "media"), t.TempDir()
	writePack(t, dir, WriterOptions{}, []member{{key: "a.bin", data: []byte("a")}, {key: "same.bin", data: []byte("first")}})
	writePack(t, other, WriterOptions{NoManifest: true}, []member{{key: "same.bin", data: []byte("second")}, {key: "b.bin", data: []byte("b")}})
	if err := os.Rename(filepath.Join(other, "pack-0000.zip"), filepath.Join(dir, "pack-0001.zip")); err != nil {
		t.Fatal(err)
	}
	set, err := OpenSet(dir, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for ref, want := range map[string]string{
		"zip://same.bin::media/pack-0000.zip": "first",
		"zip://same.bin::media/pack-0001.zip": "second",
		"a.bin":                               "a",
		"zip://b.bin::media/pack-0001.zip":    "b",
	} {
		if b, err := set.Read(ref); err != nil || string(b) != want {
			t.Errorf("Read(%s) = %q, %v; want %q", ref, b, err, want)
		}
		if m, err := set.Stat(ref); err != nil || m.Size != int64(len(want)) {
			t.Errorf("Stat(%s) = %+v, %v", ref, m, err)
		}
	}
	if _, err := set.Read("same.bin"); !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), `"same.bin" is in pack-0000.zip and pack-0001.zip`) {
		t.Errorf("bare key: %v, want ErrDuplicateKey naming both shards", err)
	}
	if _, err := set.Read("zip://a.bin::media/pack-0001.zip"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a key in the other shard: %v", err)
	}
	if err := set.Unique(); !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), "same.bin") {
		t.Errorf("Unique: %v", err)
	}
	if set.Len() != 4 {
		t.Errorf("Len = %d, want 4", set.Len())
	}
	rep, err := Verify(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(rep.Problems, "\n"); !strings.Contains(all, "pack-0001.zip:same.bin: duplicate key (also in pack-0000.zip)") {
		t.Errorf("verify problems:\n%s", all)
	}
}

func TestShardOrderIsNumeric(t *testing.T) {
	t.Parallel()
	names := []string{"pack-10000.zip", "pack-9999.zip", "other.zip", "pack-0002.zip"}
	sortShardNames(names)
	if got := strings.Join(names, ","); got != "pack-0002.zip,pack-9999.zip,pack-10000.zip,other.zip" {
		t.Fatalf("order %s", got)
	}
}

func TestCP437Table(t *testing.T) {
	t.Parallel()
	if len(cp437) != 128 {
		t.Fatalf("cp437 table has %d entries", len(cp437))
	}
	if got := decodeName([]byte{0x82, 'x'}, 0); got != "éx" {
		t.Fatalf("cp437 decode %q", got)
	}
}

// TestReadIntoReusesBuffer reads every member into one buffer, first with
// header and payload in one read and then from the cached offset, checks
// that the bytes land in the caller's buffer, and that a read of a member
// whose header was checked allocates nothing.
func TestReadIntoReusesBuffer(t *testing.T) {
	dir := t.TempDir()
	writePack(t, dir, WriterOptions{MaxMembers: 3}, mixedMembers)
	set, err := OpenSet(dir, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	buf := make([]byte, 0, 2*smallMember)
	for round := range 2 {
		for _, m := range mixedMembers {
			got, err := set.ReadInto(m.key, buf)
			if err != nil || !bytes.Equal(got, m.data) {
				t.Fatalf("round %d, %q: %d bytes, %v", round, m.key, len(got), err)
			}
			if len(got) > 0 && &got[:1][0] != &buf[:1][0] {
				t.Fatalf("round %d, %q: read into a new slice, not the caller's buffer", round, m.key)
			}
		}
	}
	key := mixedMembers[2].key
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := set.ReadInto(key, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ReadInto allocates %v times per read, want 0", allocs)
	}
	// A reference resolves without allocating too.
	m, err := set.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	ref := set.Ref(m)
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := set.ReadInto(ref, buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ReadInto by reference allocates %v times per read, want 0", allocs)
	}
}

// BenchmarkRandomReads reads members of 100 KiB in random order through
// each whole-member read path (go test -bench RandomReads ./packcore).
func BenchmarkRandomReads(b *testing.B) {
	dir := b.TempDir()
	const n, size = 1000, 100 << 10
	w, err := Create(context.Background(), dir, WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, n)
	data := payload(1, size)
	for i := range keys {
		keys[i] = fmt.Sprintf("%06d.jpg", i)
		data[0] = byte(i)
		if _, err := w.Add(keys[i], bytes.NewReader(data), size, ""); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		b.Fatal(err)
	}
	set, err := OpenSet(dir, SetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer set.Close()
	paths := []struct {
		name string
		read func(key string, buf []byte) ([]byte, error)
	}{
		{"Read", func(key string, _ []byte) ([]byte, error) { return set.Read(key) }},
		{"ReadInto", set.ReadInto},
		{"OpenChecked", func(key string, buf []byte) ([]byte, error) {
			r, err := set.OpenChecked(key)
			if err != nil {
				return nil, err
			}
			buf = buf[:size]
			if _, err := io.ReadFull(r, buf); err != nil {
				return nil, err
			}
			return buf, nil
		}},
	}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			buf := make([]byte, 0, size)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.read(keys[rng.IntN(n)], buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
