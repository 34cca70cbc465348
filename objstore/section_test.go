package objstore

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestSection reads a section of an object: its bytes only, io.EOF at and
// past its end, a short read cut at the end.
func TestSection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "o"), []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := l.Open(context.Background(), "o")
	if err != nil {
		t.Fatal(err)
	}
	s := Section(o, 3, 4) // "3456"
	defer s.Close()
	if s.Size() != 4 {
		t.Fatalf("size %d", s.Size())
	}
	for _, c := range []struct {
		off, n int
		want   string
		eof    bool
	}{
		{0, 4, "3456", false},
		{1, 2, "45", false},
		{2, 5, "56", true},
		{4, 1, "", true},
		{9, 1, "", true},
		{4, 0, "", false},
	} {
		p := make([]byte, c.n)
		n, err := s.ReadAt(p, int64(c.off))
		if string(p[:n]) != c.want || (err == io.EOF) != c.eof || (err != nil && err != io.EOF) {
			t.Errorf("ReadAt(%d bytes at %d) = %q, %v; want %q (EOF %v)", c.n, c.off, p[:n], err, c.want, c.eof)
		}
	}
}
