package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCat writes blobs to stdout by key and by reference, whole (CRC-32
// checked) and in parts (positioned reads), and refuses what does not
// resolve. The pack is written by pack; the corruption is made by Python's
// zipfile locating the member's first payload byte.
func TestCat(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	blob := strings.Repeat("0123456789", 1000) // 10,000 bytes
	writeTree(t, src, map[string]string{"a/blob.bin": blob, "b.txt": "hello"})
	ds := filepath.Join(root, "ds")
	if r := bp(t, "pack", src, filepath.Join(ds, "media"), "--quiet"); r.code != 0 {
		t.Fatalf("pack: %+v", r)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"key in a pack dir", []string{"b.txt", filepath.Join(ds, "media")}, "hello"},
		{"key in a dataset root", []string{"a/blob.bin", ds}, blob},
		{"reference from the root", []string{"zip://b.txt::media/pack-0000.zip", ds}, "hello"},
		{"key in one shard", []string{"b.txt", filepath.Join(ds, "media", "pack-0000.zip")}, "hello"},
		{"offset and length", []string{"a/blob.bin", ds, "--offset", "9995", "--length", "3"}, "567"},
		{"offset to the end", []string{"a/blob.bin", ds, "--offset", "9998"}, "89"},
		{"length 0", []string{"a/blob.bin", ds, "--length", "0"}, ""},
		{"length past the end", []string{"b.txt", ds, "--offset", "1", "--length", "100"}, "ello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bp(t, append([]string{"cat"}, tc.args...)...)
			if r.code != 0 || r.stdout != tc.want {
				t.Fatalf("exit %d, %d bytes, want %d:\n%s", r.code, len(r.stdout), len(tc.want), r.stderr)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no such key", []string{"nope.txt", ds}, exitFailure, `key "nope.txt"`},
		{"wrong shard", []string{"zip://b.txt::media/pack-0007.zip", ds}, exitInvalid, "shard media/pack-0007.zip"},
		{"offset past the end", []string{"b.txt", ds, "--offset", "6"}, exitUsage, "past the end"},
		{"json", []string{"b.txt", ds, "--json"}, exitUsage, "stdout carries the blob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bp(t, append([]string{"cat"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want %d and %q:\n%s", r.code, tc.code, tc.want, r.stderr)
			}
		})
	}

	t.Run("corrupt payload", func(t *testing.T) {
		shard := filepath.Join(ds, "media", "pack-0000.zip")
		python(t, `
import sys, zipfile, struct
path = sys.argv[1]
with zipfile.ZipFile(path) as z:
    info = z.getinfo("a/blob.bin")
with open(path, "r+b") as f:
    f.seek(info.header_offset)
    h = f.read(30)
    n, m = struct.unpack("<HH", h[26:30])
    f.seek(info.header_offset + 30 + n + m + 10)
    c = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([c[0] ^ 0xff]))
`, shard)
		r := bp(t, "cat", "a/blob.bin", ds)
		if r.code != exitInvalid || !strings.Contains(r.stderr, "CRC-32") {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
		// A part is a positioned read, not checked: it returns the bytes
		// stored there.
		r = bp(t, "cat", "a/blob.bin", ds, "--offset", "9", "--length", "3")
		if r.code != 0 || r.stdout[0] != '9' || r.stdout[1] == '0' {
			t.Fatalf("part of a corrupt blob: exit %d %q", r.code, r.stdout)
		}
	})
	if _, err := os.Stat(ds); err != nil {
		t.Fatal(err)
	}
}
