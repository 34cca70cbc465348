package packcore

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// damagedPack writes mixedMembers and flips one payload byte of the first
// member, "images/0000.jpg", leaving its recorded CRC-32 as it was.
func damagedPack(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writePack(t, dir, WriterOptions{MaxMembers: 2}, mixedMembers)
	p := filepath.Join(dir, "pack-0000.zip")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[localLen+len("images/0000.jpg")+10] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadersCheckCRC checks that every reader that hands out a whole
// member refuses bytes whose CRC-32 fails, and that intact members still
// read.
func TestReadersCheckCRC(t *testing.T) {
	t.Parallel()
	dir := damagedPack(t)
	set, err := OpenSet(dir, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	const bad = "images/0000.jpg"
	tests := []struct {
		name string
		read func(key string) ([]byte, error)
	}{
		{"Read", set.Read},
		{"Read again (cached offset)", set.Read},
		{"ReadInto, room to spare", func(key string) ([]byte, error) {
			return set.ReadInto(key, make([]byte, 0, 4<<20))
		}},
		{"ReadInto, a buffer too small", func(key string) ([]byte, error) {
			return set.ReadInto(key, make([]byte, 3))
		}},
		{"ReadMany", func(key string) ([]byte, error) {
			out, err := set.ReadMany(context.Background(), []string{"empty.bin", key, "a:b ~x/con"}, 3)
			if err != nil {
				return nil, err
			}
			return out[1], nil
		}},
		{"OpenChecked", func(key string) ([]byte, error) {
			r, err := set.OpenChecked(key)
			if err != nil {
				return nil, err
			}
			return io.ReadAll(r)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.read(bad)
			if !errors.Is(err, ErrChecksum) || !errors.Is(err, ErrFormat) {
				t.Fatalf("damaged member: %d bytes, error %v; want ErrChecksum", len(b), err)
			}
			if !strings.Contains(err.Error(), "pack-0000.zip:"+bad) {
				t.Errorf("error %q does not name shard and member", err)
			}
			for _, m := range mixedMembers[1:] {
				got, err := tc.read(m.key)
				if err != nil || !bytes.Equal(got, m.data) {
					t.Fatalf("intact member %q: %d bytes, %v", m.key, len(got), err)
				}
			}
		})
	}
}

// rawZip writes a zip whose members are STORED with CRC and sizes in their
// local headers (archive/zip's CreateRaw, no data descriptor), under any
// name, so tests can build packs the writer would refuse.
func rawZip(t *testing.T, path string, names []string, nonUTF8 bool) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, name := range names {
		data := []byte{byte('a' + i%26)}
		fh := &zip.FileHeader{Name: name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(data),
			CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(len(data)), NonUTF8: nonUTF8}
		if !nonUTF8 && !utf8.ValidString(name) {
			fh.Flags |= 0x800 // flagged UTF-8, but not
		}
		w, err := zw.CreateRaw(fh)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyReportsUnusableKeys checks that verify fails members named
// with keys the contract refuses, one FAIL line each.
func TestVerifyReportsUnusableKeys(t *testing.T) {
	t.Parallel()
	names := []string{"../evil.txt", "/abs", "..", "", "a\x00b", "bad\xffutf8", `back\slash`, "ok.txt"}
	dir := t.TempDir()
	rawZip(t, filepath.Join(dir, "pack-0000.zip"), names, false)
	rep, err := Verify(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.Problems, "\n")
	for _, n := range names[:len(names)-1] {
		want := "pack-0000.zip:" + quoteName(n) + ": unusable key"
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, `"ok.txt"`) {
		t.Errorf("a usable key was reported:\n%s", all)
	}
}

// TestCP437NameBounds checks that a name without the UTF-8 flag whose
// bytes are code page 437 is bounded by its stored length, not by the
// longer UTF-8 of its decoding.
func TestCP437NameBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "pack-0000.zip")
	// 0x82 0x88 is "éê" in CP437: 2 bytes stored, 4 bytes decoded.
	rawZip(t, p, []string{"caf\x82\x88.txt", "next.txt"}, true)
	rep, err := Verify(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range rep.Problems {
		if strings.Contains(pr, "central directory") || strings.Contains(pr, "overlaps") {
			t.Errorf("false bounds problem: %s", pr)
		}
	}
	set, err := OpenSet(p, SetOptions{})
	if err != nil {
		t.Fatalf("reader refused a CP437 name: %v", err)
	}
	defer set.Close()
	if b, err := set.Read("caféê.txt"); err != nil || string(b) != "a" {
		t.Fatalf("read CP437 member: %q %v", b, err)
	}
}

// TestDirectoryValuesOverflow checks that zip64 sizes and offsets whose
// sum overflows int64 are refused when the directory is parsed.
func TestDirectoryValuesOverflow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "pack-0000.zip")
	rawZip(t, p, []string{"a.txt"}, false)
	b, _ := os.ReadFile(p)
	// Rewrite the central entry with a zip64 extra field: size and offset
	// 2^62 each (the largest the parser takes one by one).
	cd := bytes.Index(b, []byte{0x50, 0x4b, 0x01, 0x02})
	nameLen := int(binary.LittleEndian.Uint16(b[cd+28:]))
	extra := make([]byte, 4+24)
	binary.LittleEndian.PutUint16(extra, zip64ExtraID)
	binary.LittleEndian.PutUint16(extra[2:], 24)
	binary.LittleEndian.PutUint64(extra[4:], 1<<62)
	binary.LittleEndian.PutUint64(extra[12:], 1<<62)
	binary.LittleEndian.PutUint64(extra[20:], 1<<62)
	entry := append([]byte{}, b[cd:cd+centralLen+nameLen]...)
	binary.LittleEndian.PutUint32(entry[20:], max32)
	binary.LittleEndian.PutUint32(entry[24:], max32)
	binary.LittleEndian.PutUint32(entry[42:], max32)
	binary.LittleEndian.PutUint16(entry[30:], uint16(len(extra)))
	entry = append(entry, extra...)
	out := append(append([]byte{}, b[:cd]...), entry...)
	end := appendEndRecords(nil, 1, int64(len(entry)), int64(cd))
	out = append(out, end...)
	if _, err := ReadDirectory(bytes.NewReader(out), int64(len(out))); !errors.Is(err, ErrFormat) {
		t.Fatalf("overflowing size+offset accepted: %v", err)
	}
}

func TestFindTwins(t *testing.T) {
	t.Parallel()
	nfc, nfd := "caf\u00e9.jpg", "cafe\u0301.jpg"
	tests := []struct {
		keys []string
		want []string // Kind of each group
	}{
		{[]string{nfc, nfd, "x"}, []string{"normalization"}},
		{[]string{"A.jpg", "a.jpg", "b.jpg"}, []string{"case"}},
		{[]string{"Dir/" + nfc, "dir/" + nfd}, []string{"case and normalization"}},
		{[]string{"a", "b", "a/b"}, nil},
		{[]string{"A/x", "a/x", "B", "b"}, []string{"case", "case"}},
		{[]string{"x", "x"}, nil}, // one key twice is not a pair of twins
		{[]string{"x", "X", "x"}, []string{"case"}},
		// groups in the order of their first keys: b's before a's
		{[]string{"b", "a", "A", "B", "b", nfd, nfc}, []string{"case", "case", "normalization"}},
	}
	for _, tc := range tests {
		got := FindTwins(tc.keys)
		var kinds []string
		prev := -1
		for _, g := range got {
			kinds = append(kinds, g.Kind)
			if at := slices.IndexFunc(tc.keys, func(k string) bool { return slices.Contains(g.Keys, k) }); at <= prev {
				t.Errorf("%q: group %q out of order", tc.keys, g.Keys)
			} else {
				prev = at
			}
			if len(g.Keys) < 2 || !strings.Contains(g.String(), "differ only in") {
				t.Errorf("%q: group %+v, %s", tc.keys, g, g)
			}
		}
		if strings.Join(kinds, ",") != strings.Join(tc.want, ",") {
			t.Errorf("FindTwins(%q) kinds %q, want %q", tc.keys, kinds, tc.want)
		}
	}
}

// TestLongNamesCut: a 70,000-byte name is cut in every message that names
// it (key validation, and a read of a member whose bytes fail their CRC).
func TestLongNamesCut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 70000) + "\x01"
	if err := ValidateKey(long); err == nil || len(err.Error()) > 1024 {
		t.Fatalf("ValidateKey: %d bytes of message", len(fmt.Sprint(err)))
	}
	if got := cutName(long); len(got) > 256 || !strings.HasSuffix(got, "\x01") {
		t.Fatalf("cutName keeps %d bytes", len(got))
	}
}
