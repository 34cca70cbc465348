package packcore

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadDirectory feeds hostile bytes to the central directory parser: it
// must never panic or allocate beyond the input's size.
func FuzzReadDirectory(f *testing.F) {
	dir := f.TempDir()
	w, err := Create(context.Background(), dir, WriterOptions{MaxMembers: 3})
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range mixedMembers[:3] {
		w.Add(m.key, bytes.NewReader(m.data[:min(len(m.data), 300)]), int64(min(len(m.data), 300)), "")
	}
	w.Close()
	for _, p := range []string{"pack-0000.zip"} {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(appendEndRecords(nil, 70000, 100, 0x1_0000_0000))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ReadDirectory(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		if d.Start < 0 || d.Start+d.Size > int64(len(b)) {
			t.Fatalf("directory [%d,+%d) outside %d bytes", d.Start, d.Size, len(b))
		}
		structuralProblems("fuzz", d)
	})
}

// FuzzParseRef checks that ParseRef never panics and round-trips.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"zip://a::media/p.zip", "zip://::", "zip://a::b::c", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, p, err := ParseRef(s)
		if err != nil {
			return
		}
		if FormatRef(k, p) != s {
			t.Fatalf("round trip %q -> %q", s, FormatRef(k, p))
		}
	})
}

// FuzzVerifyPassesOnlyWhatReadersServe feeds hostile shards to Verify and
// to the reader: when Verify finds no problem, the reader must open the
// shard and serve every member, by the fused read of header and payload
// (Read) and by the header read on its own (Open, OpenChecked). Seeds: a
// shard the writer wrote, and copies with a local header's encryption
// flag, method, data descriptor flag, CRC-32 or size changed.
func FuzzVerifyPassesOnlyWhatReadersServe(f *testing.F) {
	dir := f.TempDir()
	w, err := Create(context.Background(), dir, WriterOptions{NoManifest: true})
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range mixedMembers[:3] {
		w.Add(m.key, bytes.NewReader(m.data[:min(len(m.data), 300)]), int64(min(len(m.data), 300)), "")
	}
	w.Close()
	b, err := os.ReadFile(filepath.Join(dir, "pack-0000.zip"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, patch := range []struct {
		off int
		val byte
	}{{6, 1}, {6, 0x40}, {6, 8}, {8, 8}, {14, 0xAA}, {18, 0x01}, {22, 0x01}} {
		c := bytes.Clone(b)
		c[patch.off] ^= patch.val
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		open := func(context.Context, string) (*openedShard, error) {
			return &openedShard{r: bytes.NewReader(b), size: int64(len(b)), close: func() error { return nil },
				seq: func(context.Context) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }}, nil
		}
		rep, err := verifyShards(context.Background(), []string{"pack-0000.zip"}, nil, nil, open)
		if err != nil {
			t.Fatal(err)
		}
		fused, err1 := newShardFile("pack-0000.zip", bytes.NewReader(b), int64(len(b)), false)
		apart, err2 := newShardFile("pack-0000.zip", bytes.NewReader(b), int64(len(b)), false)
		if !rep.OK() {
			return
		}
		if err1 != nil || err2 != nil {
			t.Fatalf("verify passed a shard the reader refuses: %v", err1)
		}
		for i, e := range fused.dir.Entries {
			if _, err := fused.readInto(i, nil); err != nil {
				t.Fatalf("verify passed %q, Read refuses it: %v", e.Name, err)
			}
			sr, err := apart.open(i)
			if err != nil {
				t.Fatalf("verify passed %q, Open refuses it: %v", e.Name, err)
			}
			got, err := io.ReadAll(sr)
			if err != nil || crc32.ChecksumIEEE(got) != e.CRC32 {
				t.Fatalf("verify passed %q, its bytes read apart do not match its CRC-32: %v", e.Name, err)
			}
		}
	})
}
