package packcore

import (
	"bytes"
	"context"
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
