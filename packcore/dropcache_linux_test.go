package packcore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentPages returns how many of the file's pages the page cache holds,
// and how many it has.
func residentPages(t *testing.T, path string) (int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer unix.Munmap(m)
	pages := (len(m) + os.Getpagesize() - 1) / os.Getpagesize()
	vec := make([]byte, pages)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Skipf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n, pages
}

// TestShardsLeaveThePageCache: once a shard is synced and hashed, the
// writer drops its pages from the page cache (it reads only the directory
// again), with the manifest and without: a pack larger than the memory
// then does not make the kernel reclaim them while the next shards are
// written. The shards, read back, still verify.
func TestShardsLeaveThePageCache(t *testing.T) {
	t.Parallel()
	for _, noManifest := range []bool{false, true} {
		t.Run(fmt.Sprintf("no manifest %v", noManifest), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w, err := Create(context.Background(), dir, WriterOptions{MaxPackBytes: 8 << 20, NoManifest: noManifest})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			body := make([]byte, 256<<10)
			for i := range 96 {
				for j := range body {
					body[j] = byte(rng.Uint32())
				}
				if _, err := w.AddBytes(fmt.Sprintf("m%03d.bin", i), body, ""); err != nil {
					t.Fatal(err)
				}
			}
			st, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			if st.Shards < 3 {
				t.Fatalf("%d shards", st.Shards)
			}
			for _, sh := range st.ShardFiles {
				n, pages := residentPages(t, filepath.Join(dir, sh.Name))
				t.Logf("%s: %d of %d pages cached", sh.Name, n, pages)
				if n > 32+pages/16 {
					t.Errorf("%s: %d of %d pages still in the page cache", sh.Name, n, pages)
				}
			}
			rep, err := Verify(context.Background(), dir)
			if err != nil || !rep.OK() {
				t.Fatalf("verify: %v %v", err, rep)
			}
		})
	}
}
