package fsst

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// table serializes a symbol table as Lance does: the u64 header ("FSST",
// encoder switch, symbol count), the symbols as u64 words, their lengths.
func table(enabled bool, syms ...string) []byte {
	h := uint64(0x46535354) << 32
	if enabled {
		h |= 1 << 24
	}
	h |= uint64(len(syms))
	b := binary.LittleEndian.AppendUint64(nil, h)
	for _, s := range syms {
		var w [8]byte
		copy(w[:], s)
		b = append(b, w[:]...)
	}
	for _, s := range syms {
		b = append(b, byte(len(s)))
	}
	return b
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tab, err := ParseTable(table(true, "hello", " ", "world!!!"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{[]byte{0, 1, 2}, "hello world!!!"},
		{[]byte{255, 'x', 0}, "xhello"},
		{nil, ""},
	} {
		got, err := tab.Decode(nil, c.in, 1<<20)
		if err != nil || string(got) != c.want {
			t.Fatalf("Decode(%v) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	off, err := ParseTable(table(false, "ab"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := off.Decode(nil, []byte("raw"), 1<<20); string(got) != "raw" {
		t.Fatalf("disabled table: got %q", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	tab, err := ParseTable(table(true, "ab"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		in    []byte
		limit int
	}{
		{"unknown code", []byte{1}, 1 << 20},
		{"escape at end", []byte{255}, 1 << 20},
		{"over the limit", []byte{0, 0, 0}, 5},
	} {
		if _, err := tab.Decode(nil, c.in, c.limit); !errors.Is(err, wire.ErrCorrupt) {
			t.Fatalf("%s: got %v, want a corrupt-data error", c.name, err)
		}
	}
	bad := table(true, "ab")
	bad[4] = 'X' // magic
	for _, b := range [][]byte{nil, bad, table(true, "ab")[:12]} {
		if _, err := ParseTable(b); !errors.Is(err, wire.ErrCorrupt) {
			t.Fatalf("ParseTable(%x): got %v, want a corrupt-data error", b, err)
		}
	}
}
