package packcore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestPublishAndStored: a writer that publishes its shards (moving them
// out of the directory as an upload does), killed after some, and a second
// writer resuming from the moved shards (Stored), write together what one
// writer writes without either.
func TestPublishAndStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	payload := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1000+i*37) }
	const n = 200
	opts := WriterOptions{MaxMembers: 10, RefBase: "media"}
	root := t.TempDir()

	// The whole run, without publishing.
	clean := filepath.Join(root, "clean")
	w, err := Create(ctx, clean, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := w.AddBytes(fmt.Sprintf("k%04d.bin", i), payload(i), fmt.Sprint(i/2)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}

	store := filepath.Join(root, "store")
	os.MkdirAll(store, 0o755)
	dir := filepath.Join(root, "staged")
	publish := func(s ShardInfo) error {
		return os.Rename(filepath.Join(dir, s.Name), filepath.Join(store, s.Name))
	}
	po := opts
	po.Publish = publish
	w, err = Create(ctx, dir, po)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 75 {
		if _, err := w.AddBytes(fmt.Sprintf("k%04d.bin", i), payload(i), fmt.Sprint(i/2)); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort() // the kill: what is published stays
	os.RemoveAll(dir)

	var stored []StoredShard
	names, _ := ListShards(store)
	for _, name := range names {
		f, err := os.Open(filepath.Join(store, name))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		d, err := ReadDirectory(f, st.Size())
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, StoredShard{Info: ShardInfo{Name: name, Bytes: st.Size(), SHA256: fileSHA256(t, filepath.Join(store, name))}, Dir: d})
	}
	if len(stored) == 0 {
		t.Fatal("nothing was published before the kill")
	}
	po.Resume, po.Stored = true, stored
	w, err = Create(ctx, dir, po)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		key := fmt.Sprintf("k%04d.bin", i)
		if _, size, ok := w.Lookup(key); ok {
			if size != int64(len(payload(i))) {
				t.Fatalf("%s: size %d", key, size)
			}
			w.Replay(key, size, fmt.Sprint(i/2))
			continue
		}
		if _, err := w.AddBytes(key, payload(i), fmt.Sprint(i/2)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(dir, "pack.manifest.json"), filepath.Join(store, "pack.manifest.json"))
	want, _ := ListShards(clean)
	got, _ := ListShards(store)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("shards %v, want %v", got, want)
	}
	for _, name := range append(want, "pack.manifest.json") {
		a, _ := os.ReadFile(filepath.Join(clean, name))
		b, _ := os.ReadFile(filepath.Join(store, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from the uninterrupted run's", name)
		}
	}
}

func fileSHA256(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
