package packcore

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckWrittenShard: the writer's re-read of a shard it wrote accepts
// the shard as written and names each way the bytes on disk can disagree.
func TestCheckWrittenShard(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		edit func(b []byte, cd int) []byte // cd: offset of the central directory
		want string
	}{
		{"as written", func(b []byte, _ int) []byte { return b }, ""},
		{"method", func(b []byte, cd int) []byte { binary.LittleEndian.PutUint16(b[cd+10:], 8); return b }, "not as written"},
		{"encrypted", func(b []byte, cd int) []byte { b[cd+8] |= 1; return b }, "not as written"},
		{"unknown name", func(b []byte, cd int) []byte { b[cd+centralLen] = 'z'; return b }, "differs from the one written"},
		{"duplicate name", func(b []byte, cd int) []byte { // second entry renamed to the first's name
			second := cd + centralLen + 5
			copy(b[second+centralLen:], "k/000")
			return b
		}, "differs from the one written"},
		{"size", func(b []byte, cd int) []byte {
			binary.LittleEndian.PutUint32(b[cd+20:], 4)
			binary.LittleEndian.PutUint32(b[cd+24:], 4)
			return b
		}, "differs from the one written"},
		{"offset overlaps", func(b []byte, cd int) []byte { // second entry moved onto the first
			binary.LittleEndian.PutUint32(b[cd+centralLen+5+42:], 0)
			return b
		}, "overlaps"},
		{"file size", func(b []byte, _ int) []byte { return append(b, 0) }, "bytes on disk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Create(context.Background(), dir, WriterOptions{NoManifest: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"k/000", "k/001", "k/002"} {
				if _, err := w.Add(k, strings.NewReader(k+"-payload"), int64(len(k)+8), ""); err != nil {
					t.Fatal(err)
				}
			}
			st, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			info := st.ShardFiles[0]
			path := filepath.Join(dir, info.Name)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cd := bytes.Index(b, []byte{'P', 'K', 1, 2})
			if err := os.WriteFile(path, c.edit(b, cd), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = w.checkWrittenShard(path, info, nil)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("shard as written refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}
