package packcore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// procStatusKiB returns a field of /proc/self/status in KiB.
func procStatusKiB(t *testing.T, field string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return n
		}
	}
	t.Skipf("no %s in /proc/self/status", field)
	return 0
}

// manyMembersBudget is what a writer of 2,000,000 small members may add to
// the peak resident memory of its process: the key index (about 9 bytes a
// key), one shard's central directory (4 MB), the lent buffers and the
// heap. A `bpconvert pack` process needs about 28 MB before it writes (code
// and runtime, measured with `bpconvert version`), so this keeps pack of
// 2,000,000 files under 64 MiB.
const manyMembersBudget = 36 << 20

// TestManySmallMembersMemory packs 2,000,000 members of 1 KiB and checks
// that the writer's memory stays flat with the count: the peak resident
// set grows by at most manyMembersBudget. Then the pack is read back: the
// digests in the manifest match the shards (sha256 of the files), early
// and late keys are found and a repeated early key is refused (lookups in
// the key index's file).
func TestManySmallMembersMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 2,000,000 members (2 GB); skipped with -short")
	}
	const n = 2_000_000
	dir := t.TempDir()
	runtime.GC()
	// Reset the peak to the current resident set (Linux, clear_refs 5),
	// so the test binary's earlier allocations do not count.
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak resident set: %v", err)
	}
	before := procStatusKiB(t, "VmRSS")
	w, err := Create(context.Background(), dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	body := make([]byte, 1024)
	key := make([]byte, 0, 32)
	for i := range n {
		key = fmt.Appendf(key[:0], "%04d/%08d.jpg", i/1000, i)
		copy(body, key) // each member's bytes differ
		if _, err := w.AddBytes(string(key), body, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.AddBytes("0000/00000001.jpg", body, ""); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("a repeated early key: %v, want ErrDuplicateKey", err)
	}
	st, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	peak := procStatusKiB(t, "VmHWM")
	grew := (peak - before) << 10
	t.Logf("%d members in %d shards: peak resident set %.1f MiB, %.1f MiB over the %.1f MiB before (%.1f bytes a member)",
		st.Members, st.Shards, float64(peak)/1024, float64(grew)/(1<<20), float64(before)/1024, float64(grew)/n)
	if st.Members != n || st.Shards != (n+DefaultMaxMembers-1)/DefaultMaxMembers {
		t.Fatalf("%d members in %d shards", st.Members, st.Shards)
	}
	if grew > manyMembersBudget {
		t.Errorf("peak resident set grew by %.1f MiB for %d members, budget %d MiB", float64(grew)/(1<<20), n, manyMembersBudget>>20)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		k := fmt.Sprintf("%04d/%08d.jpg", i/1000, i)
		if _, size, ok := w.Lookup(k); !ok || size != 1024 {
			t.Fatalf("Lookup(%s) after Close: %d %v", k, size, ok)
		}
	}
	for _, sh := range []ShardInfo{st.ShardFiles[0], st.ShardFiles[len(st.ShardFiles)-1]} {
		f, err := os.Open(filepath.Join(dir, sh.Name))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != sh.SHA256 {
			t.Fatalf("%s: sha256 %s, manifest says %s", sh.Name, got, sh.SHA256)
		}
	}
	set, err := OpenSet(dir, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for _, i := range []int{0, 65534, 65535, n - 1} {
		k := fmt.Sprintf("%04d/%08d.jpg", i/1000, i)
		b, err := set.Read(k)
		if err != nil || len(b) != 1024 || !bytes.HasPrefix(b, []byte(k)) {
			t.Fatalf("Read(%s): %d bytes, %v", k, len(b), err)
		}
	}
}
