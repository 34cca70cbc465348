package packcore

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// member is a test payload.
type member struct {
	key   string
	data  []byte
	group string
}

func payload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func writePack(t *testing.T, dir string, opts WriterOptions, members []member) Stats {
	t.Helper()
	w, err := Create(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if _, err := w.Add(m.key, bytes.NewReader(m.data), int64(len(m.data)), m.group); err != nil {
			t.Fatalf("Add(%q): %v", m.key, err)
		}
	}
	st, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func shardPaths(t *testing.T, dir string) []string {
	t.Helper()
	names, err := ListShards(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var mixedMembers = []member{
	{key: "images/0000.jpg", data: payload(1, 1000)},
	{key: "empty.bin", data: nil},
	{key: "images/ключ.jpg", data: payload(2, 70_000)},
	{key: "big/streamed.bin", data: payload(3, smallMember+12345)},
	{key: "exactly-small.bin", data: payload(4, smallMember)},
	{key: "a:b ~x/con", data: []byte("odd but legal")},
}

// TestIndependentReaders writes a pack and reads it back with unzip,
// zipinfo, Python's zipfile and Go's archive/zip.
func TestIndependentReaders(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "media")
	writePack(t, dir, WriterOptions{MaxPackBytes: 200_000}, mixedMembers)
	want := map[string]string{}
	for _, m := range mixedMembers {
		want[m.key] = sha(m.data)
	}
	shards := shardPaths(t, dir)
	if len(shards) < 2 {
		t.Fatalf("expected several shards, got %d", len(shards))
	}

	t.Run("archive/zip", func(t *testing.T) {
		seen := 0
		for _, p := range shards {
			zr, err := zip.OpenReader(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range zr.File {
				if f.Method != zip.Store {
					t.Errorf("%s: method %d", f.Name, f.Method)
				}
				if f.Flags&0x8 != 0 {
					t.Errorf("%s: data descriptor flag set", f.Name)
				}
				if f.Mode().Perm() != 0o600 {
					t.Errorf("%s: mode %v", f.Name, f.Mode())
				}
				utf := f.Flags&0x800 != 0
				if utf != needsUTF8Flag(f.Name) {
					t.Errorf("%s: UTF-8 flag %v", f.Name, utf)
				}
				rc, err := f.Open()
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				if sha(b) != want[f.Name] {
					t.Errorf("%s: bytes differ", f.Name)
				}
				seen++
			}
			zr.Close()
		}
		if seen != len(want) {
			t.Fatalf("read %d members, want %d", seen, len(want))
		}
	})

	t.Run("unzip", func(t *testing.T) {
		testtool.Require(t, "unzip", "zipinfo")
		for _, p := range shards {
			out := testtool.Run(t, "unzip", "-t", p)
			if !strings.Contains(out, "No errors detected") {
				t.Fatalf("unzip -t %s:\n%s", p, out)
			}
			info := testtool.Run(t, "zipinfo", p)
			for _, line := range strings.Split(info, "\n") {
				if strings.HasPrefix(line, "-") || strings.HasPrefix(line, "?") {
					if !strings.Contains(line, " stor ") {
						t.Errorf("zipinfo: member not stored: %s", line)
					}
				}
			}
		}
	})

	t.Run("python zipfile", func(t *testing.T) {
		testtool.Require(t, "python3")
		out := testtool.Run(t, "python3", append([]string{"testdata/zipcheck.py"}, shards...)...)
		got := 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Split(line, "\t")
			if len(f) != 6 {
				t.Fatalf("bad line %q", line)
			}
			if want[f[1]] != f[3] {
				t.Errorf("python read %q with sha %s, want %s", f[1], f[3], want[f[1]])
			}
			flags, _ := strconv.Atoi(f[4])
			if flags&0x8 != 0 || f[5] != "0" {
				t.Errorf("%q: local flags %#x, compress type %s", f[1], flags, f[5])
			}
			got++
		}
		if got != len(want) {
			t.Fatalf("python listed %d members, want %d", got, len(want))
		}
	})

	t.Run("own reader", func(t *testing.T) {
		set, err := OpenSet(dir, SetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer set.Close()
		for _, m := range mixedMembers {
			b, err := set.Read(m.key)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, m.data) {
				t.Errorf("%s: bytes differ", m.key)
			}
			b, err = set.Read(m.key) // cached data offset path
			if err != nil || !bytes.Equal(b, m.data) {
				t.Errorf("%s: second read differs: %v", m.key, err)
			}
		}
	})
}

// TestLocalHeaders checks every local header directly: CRC and sizes filled
// in, no data descriptor, fixed 1980-01-01 time, no extra field below 4 GiB.
func TestLocalHeaders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePack(t, dir, WriterOptions{}, mixedMembers)
	p := shardPaths(t, dir)[0]
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadDirectory(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.Entries {
		h := raw[e.HeaderOffset:]
		if binary.LittleEndian.Uint32(h) != sigLocal {
			t.Fatalf("%s: no local header", e.Name)
		}
		flags := binary.LittleEndian.Uint16(h[6:])
		if flags&flagDataDesc != 0 {
			t.Errorf("%s: bit 3 set", e.Name)
		}
		if got := binary.LittleEndian.Uint32(h[14:]); got != e.CRC32 {
			t.Errorf("%s: local CRC %#x, central %#x", e.Name, got, e.CRC32)
		}
		if got := int64(binary.LittleEndian.Uint32(h[22:])); got != e.Size {
			t.Errorf("%s: local size %d, central %d", e.Name, got, e.Size)
		}
		if tm, dt := binary.LittleEndian.Uint16(h[10:]), binary.LittleEndian.Uint16(h[12:]); tm != 0 || dt != 0x21 {
			t.Errorf("%s: time %#x date %#x", e.Name, tm, dt)
		}
		if x := binary.LittleEndian.Uint16(h[28:]); x != 0 {
			t.Errorf("%s: local extra of %d bytes", e.Name, x)
		}
	}
}

// TestDeterministic writes the same input twice and compares bytes.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	writePack(t, a, WriterOptions{MaxPackBytes: 100_000}, mixedMembers)
	writePack(t, b, WriterOptions{MaxPackBytes: 100_000}, mixedMembers)
	sameShards(t, a, b, "between runs")
}

// sameShards checks that pack directories a and b hold the same shards,
// byte for byte, and the same manifest or none.
func sameShards(t *testing.T, a, b, what string) {
	t.Helper()
	pa, pb := shardPaths(t, a), shardPaths(t, b)
	if len(pa) != len(pb) || len(pa) == 0 {
		t.Fatalf("%d vs %d shards", len(pa), len(pb))
	}
	for i := range pa {
		x, _ := os.ReadFile(pa[i])
		y, _ := os.ReadFile(pb[i])
		if !bytes.Equal(x, y) {
			t.Fatalf("%s differs %s", filepath.Base(pa[i]), what)
		}
	}
	ma, errA := os.ReadFile(filepath.Join(a, ManifestName))
	mb, errB := os.ReadFile(filepath.Join(b, ManifestName))
	if !bytes.Equal(ma, mb) || (errA == nil) != (errB == nil) {
		t.Fatalf("manifests differ %s: %v / %v", what, errA, errB)
	}
}

// TestManifestDigests checks that digests computed while writing match the
// bytes on disk.
func TestManifestDigests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePack(t, dir, WriterOptions{MaxPackBytes: 300_000}, mixedMembers)
	m, err := ReadManifest(dir)
	if err != nil || m == nil {
		t.Fatalf("manifest: %v", err)
	}
	shards := shardPaths(t, dir)
	if len(m.Shards) != len(shards) {
		t.Fatalf("manifest lists %d shards, %d on disk", len(m.Shards), len(shards))
	}
	for _, p := range shards {
		b, _ := os.ReadFile(p)
		got := m.Shards[filepath.Base(p)]
		if got.Bytes != int64(len(b)) || got.SHA256 != sha(b) {
			t.Errorf("%s: manifest %+v, disk %d bytes %s", filepath.Base(p), got, len(b), sha(b))
		}
	}
}

func TestRollover(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 9))
	var ms []member
	for i := range 300 {
		ms = append(ms, member{key: fmt.Sprintf("k/%04d-%s.bin", i, strings.Repeat("n", r.IntN(40))), data: payload(uint64(i), r.IntN(5000))})
	}
	tests := []struct {
		name       string
		opts       WriterOptions
		wantShards int // 0: only check the limits
	}{
		{"by count", WriterOptions{MaxMembers: 7}, (300 + 6) / 7},
		{"by size", WriterOptions{MaxPackBytes: 50_000}, 0},
		{"by size tight", WriterOptions{MaxPackBytes: 5200}, 0},
		{"count 1", WriterOptions{MaxMembers: 1}, 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := writePack(t, dir, tc.opts, ms)
			if tc.wantShards > 0 && st.Shards != tc.wantShards {
				t.Fatalf("%d shards, want %d", st.Shards, tc.wantShards)
			}
			maxBytes := tc.opts.MaxPackBytes
			if maxBytes == 0 {
				maxBytes = DefaultMaxPackBytes
			}
			next := 0
			for i, sh := range st.ShardFiles {
				fi, err := os.Stat(filepath.Join(dir, sh.Name))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Size() != sh.Bytes {
					t.Fatalf("%s: %d bytes on disk, %d reported", sh.Name, fi.Size(), sh.Bytes)
				}
				if sh.Members > 1 && sh.Bytes > maxBytes {
					t.Errorf("%s: %d bytes exceeds cap %d", sh.Name, sh.Bytes, maxBytes)
				}
				next += sh.Members
				// Exactness: the next member would not have fit.
				if i+1 < len(st.ShardFiles) && sh.Members < max(tc.opts.MaxMembers, 1) && tc.opts.MaxMembers == 0 {
					m := ms[next]
					extra := int64(localLen+centralLen+2*len(m.key)) + int64(len(m.data))
					if sh.Bytes+extra <= maxBytes {
						t.Errorf("%s rolled at %d bytes although %q (+%d) fit under %d", sh.Name, sh.Bytes, m.key, extra, maxBytes)
					}
				}
			}
			if next != len(ms) {
				t.Fatalf("%d members in shards, want %d", next, len(ms))
			}
			rep, err := Verify(context.Background(), dir)
			if err != nil || !rep.OK() {
				t.Fatalf("verify: %v %v", err, rep.Problems)
			}
		})
	}
}

func TestSingletonOversize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ms := []member{
		{key: "a", data: payload(1, 100)},
		{key: "huge", data: payload(2, 5000)},
		{key: "b", data: payload(3, 100)},
	}
	st := writePack(t, dir, WriterOptions{MaxPackBytes: 1000}, ms)
	got := []int{}
	for _, s := range st.ShardFiles {
		got = append(got, s.Members)
	}
	if fmt.Sprint(got) != "[1 1 1]" {
		t.Fatalf("members per shard %v, want [1 1 1]", got)
	}
	if st.ShardFiles[1].Bytes <= 1000 {
		t.Fatalf("oversize shard is %d bytes", st.ShardFiles[1].Bytes)
	}
}

func TestGroups(t *testing.T) {
	t.Parallel()
	// Cap 10,000 bytes; groups g1 (3 x 1,000), g2 (3 x 1,000), g3 (2 x
	// 1,000), g4 (12 x 1,000, more than a shard).
	var ms []member
	add := func(group string, n, size int) {
		for i := range n {
			ms = append(ms, member{key: fmt.Sprintf("%s/%d", group, i), data: payload(uint64(len(ms)), size), group: group})
		}
	}
	add("g1", 3, 1000)
	add("g2", 3, 1000)
	add("g3", 2, 1000)
	add("g4", 12, 1000)
	cases := []struct {
		name     string
		fill     float64
		g3WithG2 bool
		g4Fresh  bool // g4 starts a shard of its own
	}{
		// default: a group past half full starts a new shard when twice
		// the largest group so far (g1, ~3.1 KB) would not fit: g3 does
		// not after g2 (~6.3 KB)
		{"twice the largest group fits", 0, false, false},
		// the reference tool's rule: a group starting once the shard holds
		// >= 5,000 bytes rolls: g2 starts below half, g3 above
		{"half full", 0.5, false, false},
		{"never", -1, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			st := writePack(t, dir, WriterOptions{MaxPackBytes: 10_000, GroupFill: c.fill}, ms)
			set, err := OpenSet(dir, SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			shardOf := map[string]string{}
			for m := range set.Members() {
				shardOf[m.Key] = m.Shard
			}
			if shardOf["g1/0"] != shardOf["g2/2"] {
				t.Errorf("g2 should share g1's shard: %s vs %s", shardOf["g1/0"], shardOf["g2/2"])
			}
			if (shardOf["g3/0"] == shardOf["g2/2"]) != c.g3WithG2 {
				t.Errorf("g3 in %s, g2 in %s: want same %v", shardOf["g3/0"], shardOf["g2/2"], c.g3WithG2)
			}
			if (shardOf["g4/0"] != shardOf["g3/1"]) != c.g4Fresh {
				t.Errorf("g4 starts in %s, g3 in %s: want a fresh shard %v", shardOf["g4/0"], shardOf["g3/1"], c.g4Fresh)
			}
			if st.GroupsSplit != 1 {
				t.Errorf("groups split = %d, want 1 (g4)", st.GroupsSplit)
			}
		})
	}
}

func TestRefusedKeys(t *testing.T) {
	t.Parallel()
	bad := []string{"", " a", "a ", `a\b`, "/abs", "a::b", "a//b", "a/", "./x", "a/./b", "a/../b", "..", "a\x00b", "a\nb", "a\x7fb", strings.Repeat("k", MaxKeyBytes+1), "\xff"}
	for _, k := range bad {
		if err := ValidateKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
	good := []string{"a", "a:b", "~x", "con", "ключ.jpg", "a/b/c.d", "x y", strings.Repeat("k", MaxKeyBytes)}
	for _, k := range good {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v", k, err)
		}
	}
	dir := t.TempDir()
	w, err := Create(context.Background(), dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range bad {
		_, err := w.Add(k, strings.NewReader("x"), 1, "")
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Add(%q) = %v", k, err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a writer that added nothing wrote %d files", len(ents))
	}
}

func TestDuplicateKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Create(context.Background(), dir, WriterOptions{MaxMembers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add("x", strings.NewReader("1"), 1, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Add("y", strings.NewReader("2"), 1, ""); err != nil {
		t.Fatal(err)
	}
	_, err = w.Add("x", strings.NewReader("3"), 1, "") // across shards
	var ke *KeyError
	if !errors.Is(err, ErrDuplicateKey) || !errors.As(err, &ke) || ke.Key != "x" {
		t.Fatalf("duplicate: %v", err)
	}
	st, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Members != 2 || st.Shards != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestStreamLengthMismatch(t *testing.T) {
	t.Parallel()
	for _, size := range []int{100, smallMember + 500} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			dir := t.TempDir()
			w, err := Create(context.Background(), dir, WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			good := payload(1, 50)
			if _, err := w.Add("before", bytes.NewReader(good), 50, ""); err != nil {
				t.Fatal(err)
			}
			data := payload(2, size)
			_, err = w.Add("short", bytes.NewReader(data[:size-1]), int64(size), "")
			if !errors.Is(err, ErrSizeMismatch) || !strings.Contains(err.Error(), `"short"`) {
				t.Fatalf("short stream: %v", err)
			}
			_, err = w.Add("long", bytes.NewReader(append(data, 1)), int64(size), "")
			if !errors.Is(err, ErrSizeMismatch) {
				t.Fatalf("long stream: %v", err)
			}
			if _, err := w.Add("after", bytes.NewReader(good), 50, ""); err != nil {
				t.Fatalf("writer unusable after a bad stream: %v", err)
			}
			if _, err := w.Close(); err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(context.Background(), dir)
			if err != nil || !rep.OK() || rep.Members != 2 {
				t.Fatalf("verify: %v %+v", err, rep)
			}
		})
	}
}

// cancelAfter cancels its context once n bytes were read.
type cancelAfter struct {
	r      io.Reader
	n      int64
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	return k, err
}

func TestCancelMidShard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := Create(ctx, dir, WriterOptions{MaxMembers: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := w.Add(fmt.Sprint("done", i), bytes.NewReader(payload(1, 10)), 10, ""); err != nil {
			t.Fatal(err)
		}
	}
	size := int64(8 * copyBuf)
	_, err = w.Add("cut", &cancelAfter{r: bytes.NewReader(payload(2, int(size))), n: 3 * copyBuf, cancel: cancel}, size, "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Add after cancel: %v", err)
	}
	w.Abort()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	// The completed first shard stays; the open one and its temp file go.
	if fmt.Sprint(names) != "[pack-0000.zip]" {
		t.Fatalf("left behind: %v", names)
	}
	rep, err := Verify(context.Background(), dir)
	if err != nil || !rep.OK() {
		t.Fatalf("verify after cancel: %v %v", err, rep.Problems)
	}
}

func TestRefuseExistingAndResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePack(t, dir, WriterOptions{MaxMembers: 2, NoManifest: true}, mixedMembers[:4])
	// A crashed writer leaves a temporary shard behind.
	junk := filepath.Join(dir, ".pack-0002.zip.123.tmp")
	os.WriteFile(junk, []byte("PK\x03\x04partial"), 0o600)

	if _, err := Create(context.Background(), dir, WriterOptions{}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("existing shards: %v", err)
	}
	w, err := Create(context.Background(), dir, WriterOptions{MaxMembers: 2, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(junk); !os.IsNotExist(err) {
		t.Fatal("stale temporary shard not removed")
	}
	for _, m := range mixedMembers {
		if ref, size, ok := w.Lookup(m.key); ok {
			if size != int64(len(m.data)) || !strings.HasPrefix(ref, "zip://"+m.key+"::") {
				t.Fatalf("lookup %q: %s %d", m.key, ref, size)
			}
			continue
		}
		if _, err := w.Add(m.key, bytes.NewReader(m.data), int64(len(m.data)), ""); err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Members != int64(len(mixedMembers)-4) || len(st.ShardFiles) != 3 {
		t.Fatalf("resumed stats %+v", st)
	}
	rep, err := Verify(context.Background(), dir)
	if err != nil || !rep.OK() || rep.Members != len(mixedMembers) || !rep.Manifest {
		t.Fatalf("verify resumed pack: %v %+v", err, rep)
	}

	// A damaged shard is never trusted on resume.
	p := filepath.Join(dir, "pack-0000.zip")
	b, _ := os.ReadFile(p)
	b[40] ^= 0xff
	os.WriteFile(p, b, 0o644)
	if _, err := Create(context.Background(), dir, WriterOptions{Resume: true}); err == nil {
		t.Fatal("resume accepted a corrupt shard")
	}
}

func TestVerifyFindsProblems(t *testing.T) {
	t.Parallel()
	mk := func(t *testing.T) string {
		dir := t.TempDir()
		writePack(t, dir, WriterOptions{MaxMembers: 2}, mixedMembers)
		return dir
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   []string
	}{
		{"payload byte", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "pack-0000.zip")
			b, _ := os.ReadFile(p)
			b[localLen+len("images/0000.jpg")+10] ^= 1
			os.WriteFile(p, b, 0o644)
		}, []string{"pack-0000.zip:images/0000.jpg: CRC mismatch", "pack-0000.zip: does not match manifest"}},
		{"missing shard", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "pack-0001.zip"))
		}, []string{"pack-0001.zip: listed in manifest but missing"}},
		{"extra shard", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "pack-0001.zip"))
			os.WriteFile(filepath.Join(dir, "pack-0009.zip"), b, 0o644)
		}, []string{"pack-0009.zip: not listed in manifest", "duplicate key (also in pack-0001.zip)"}},
		{"truncated", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "pack-0002.zip")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-10], 0o644)
		}, []string{"pack-0002.zip: unreadable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := mk(t)
			tc.damage(t, dir)
			rep, err := Verify(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(rep.Problems, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestVerifyForeignZips checks that compressed and data-descriptor members
// written by archive/zip are reported.
func TestVerifyForeignZips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, _ := os.Create(filepath.Join(dir, "pack-0000.zip"))
	zw := zip.NewWriter(f)
	w, _ := zw.Create("deflated.txt")
	w.Write(bytes.Repeat([]byte("a"), 1000))
	w, _ = zw.CreateHeader(&zip.FileHeader{Name: "stored-dd.txt", Method: zip.Store})
	w.Write([]byte("hello"))
	zw.Close()
	f.Close()
	rep, err := Verify(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"deflated.txt: not STORED", "stored-dd.txt: local header defers CRC and sizes to a data descriptor"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if _, err := OpenSet(dir, SetOptions{}); err == nil {
		t.Error("reader accepted a compressed member")
	}
}

// TestNoTemporaryLeftovers checks that no temporary file leaks into the
// final directory.
func TestNoTemporaryLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writePack(t, dir, WriterOptions{MaxPackBytes: 100_000}, mixedMembers)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

func TestNoManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := writePack(t, dir, WriterOptions{MaxPackBytes: 100_000, NoManifest: true}, mixedMembers)
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); !os.IsNotExist(err) {
		t.Fatalf("manifest written: %v", err)
	}
	for _, s := range st.ShardFiles {
		if s.SHA256 != "" {
			t.Fatalf("%s: digest computed without a manifest", s.Name)
		}
	}
	rep, err := Verify(context.Background(), dir)
	if err != nil || !rep.OK() || rep.Manifest {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestFileMembersDigests adds large members from files (CRC-32 computed
// before the copy, payload hashed as it passes), from plain streams (payload
// hashed back from the shard) and small ones, over several shards, with
// members cut off on the way, and checks every digest against the bytes on
// disk.
func TestFileMembersDigests(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	dir := filepath.Join(t.TempDir(), "pack")
	w, err := Create(context.Background(), dir, WriterOptions{MaxPackBytes: 3 * smallMember})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		data := payload(uint64(i), smallMember+1000*i+1)
		p := filepath.Join(src, strconv.Itoa(i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := w.AddFile(fmt.Sprintf("file/%d", i), p, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Add(fmt.Sprintf("stream/%d", i), bytes.NewReader(data), int64(len(data)), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Add(fmt.Sprintf("small/%d", i), bytes.NewReader(data[:100]), 100, ""); err != nil {
			t.Fatal(err)
		}
		// A file holding more than the declared size: its CRC-32 is taken
		// over the declared bytes, the copy finds more, and the member,
		// already partly hashed, is cut off.
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Add(fmt.Sprintf("long/%d", i), f, int64(len(data)-1), "")
		f.Close()
		if !errors.Is(err, ErrSizeMismatch) {
			t.Fatalf("long file: %v", err)
		}
	}
	st, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Shards < 4 || st.Members != 24 {
		t.Fatalf("stats %+v", st)
	}
	m, err := ReadManifest(dir)
	if err != nil || m == nil {
		t.Fatalf("manifest: %v", err)
	}
	for _, p := range shardPaths(t, dir) {
		b, _ := os.ReadFile(p)
		if got := m.Shards[filepath.Base(p)]; got.SHA256 != sha(b) || got.Bytes != int64(len(b)) {
			t.Errorf("%s: manifest %+v, disk %d bytes %s", filepath.Base(p), got, len(b), sha(b))
		}
	}
	rep, err := Verify(context.Background(), dir)
	if err != nil || !rep.OK() || rep.Members != 24 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// TestOnShardWhenInPlace checks that OnShard is called for a shard once it
// is in place, at a fixed point: within the Add that completes the next
// shard (the shard is synced in the background meanwhile), or EndShard, or
// Close, whatever the progress of its digest, so that callers see the same
// sequence each run.
func TestOnShardWhenInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var seen []string
	w, err := Create(context.Background(), dir, WriterOptions{MaxMembers: 2, OnShard: func(s ShardInfo) {
		if _, err := os.Stat(filepath.Join(dir, s.Name)); err != nil {
			t.Errorf("OnShard(%s): %v", s.Name, err)
		}
		seen = append(seen, s.Name)
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		data := payload(uint64(i), smallMember+10)
		if _, err := w.Add(fmt.Sprintf("m%d", i), bytes.NewReader(data), int64(len(data)), ""); err != nil {
			t.Fatal(err)
		}
		if want := max(i/2-1, 0); len(seen) != want {
			t.Fatalf("after member %d: OnShard called for %v, want %d shards", i, seen, want)
		}
	}
	// EndShard completes the open shard and waits for both unreported ones.
	if err := w.EndShard(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Fatalf("after EndShard: OnShard called for %v, want 3 shards", seen)
	}
	data := payload(9, 10)
	if _, err := w.Add("m9", bytes.NewReader(data), int64(len(data)), ""); err != nil {
		t.Fatal(err)
	}
	st, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 || st.Shards != 4 {
		t.Fatalf("OnShard saw %v, stats %+v", seen, st)
	}
	for _, sh := range st.ShardFiles {
		if len(sh.SHA256) != 64 {
			t.Fatalf("%s: digest %q", sh.Name, sh.SHA256)
		}
	}
}

// TestAbortWaitsForDigests aborts a writer right after it completed shards
// whose digests may still be being computed: they stay, complete and
// listed with their digests, and no temporary file is left.
func TestAbortWaitsForDigests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Create(context.Background(), dir, WriterOptions{MaxMembers: 1})
	if err != nil {
		t.Fatal(err)
	}
	data := payload(5, 3*smallMember)
	for i := range 4 {
		if _, err := w.Add(fmt.Sprintf("m%d", i), bytes.NewReader(data), int64(len(data)), ""); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort()
	done := w.Completed()
	if len(done) != 3 {
		t.Fatalf("completed %+v, want the 3 shards before the open one", done)
	}
	for _, sh := range done {
		b, err := os.ReadFile(filepath.Join(dir, sh.Name))
		if err != nil || sh.SHA256 != sha(b) {
			t.Fatalf("%s: digest %q, file %v", sh.Name, sh.SHA256, err)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
}

// TestAddBytesSameAsAdd checks that AddBytes writes the same shards and
// manifest as Add with a reader of the same bytes, for payloads on either
// side of the sizes where its path changes (copied with the header below
// rangeHashMin, hashed back from the shard above; read-back ranges joined
// up to maxPend), and that it keeps nothing of the caller's slice: every
// slice is overwritten as soon as AddBytes returns.
func TestAddBytesSameAsAdd(t *testing.T) {
	t.Parallel()
	members := slices.Clone(mixedMembers)
	for i, n := range []int{rangeHashMin - 1, rangeHashMin, rangeHashMin + 1, 100 << 10, 100 << 10, 100 << 10, maxPend + 5, 3 << 20, 0, 7} {
		members = append(members, member{key: fmt.Sprintf("sized/%02d.bin", i), data: payload(uint64(100+i), n), group: fmt.Sprint(i / 3)})
	}
	for _, tc := range []struct {
		name string
		opts WriterOptions
	}{
		{"manifest", WriterOptions{}},
		{"manifest, small shards", WriterOptions{MaxPackBytes: 400_000}},
		{"no manifest", WriterOptions{NoManifest: true}},
		{"no manifest, small shards", WriterOptions{NoManifest: true, MaxPackBytes: 400_000, MaxMembers: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := t.TempDir(), t.TempDir()
			writePack(t, a, tc.opts, members)
			w, err := Create(context.Background(), b, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range members {
				buf := slices.Clone(m.data)
				if _, err := w.AddBytes(m.key, buf, m.group); err != nil {
					t.Fatalf("AddBytes(%q): %v", m.key, err)
				}
				for i := range buf {
					buf[i] = 0xEE
				}
			}
			if _, err := w.Close(); err != nil {
				t.Fatal(err)
			}
			sameShards(t, a, b, "between Add and AddBytes")
			if _, err := os.Stat(filepath.Join(b, ManifestName)); (err == nil) == tc.opts.NoManifest {
				t.Fatalf("manifest: %v, with NoManifest %v", err, tc.opts.NoManifest)
			}
			rep, err := Verify(context.Background(), b)
			if err != nil || !rep.OK() || rep.Members != len(members) {
				t.Fatalf("verify: %v %+v", err, rep)
			}
		})
	}
}

// TestBackgroundSyncFailure checks that a shard whose rename into place
// fails on the sync goroutine fails the writer at the next point that waits
// for it (here Close), with an error naming the pack, and leaves neither
// its temporary file nor a manifest.
func TestBackgroundSyncFailure(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"Close", "EndShard", "next shard"} {
		t.Run(end, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Create(context.Background(), dir, WriterOptions{MaxMembers: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			add := func(key string) error {
				_, err := w.AddBytes(key, payload(1, 1000), "")
				return err
			}
			if err := add("m0"); err != nil {
				t.Fatal(err)
			}
			// A directory where the open shard is to be renamed to.
			if err := os.Mkdir(filepath.Join(dir, "pack-0000.zip"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := add("m1"); err != nil { // finishes pack-0000 in the background
				t.Fatal(err)
			}
			switch end {
			case "Close":
				_, err = w.Close()
			case "EndShard":
				err = w.EndShard()
			case "next shard":
				err = add("m2")
			}
			if err == nil || !strings.Contains(err.Error(), dir) {
				t.Fatalf("%s: err = %v, want the failed rename", end, err)
			}
			if _, err := w.Close(); err == nil {
				t.Fatal("Close after the failure succeeded")
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".tmp") || e.Name() == ManifestName || (e.Name() != "pack-0000.zip" && !e.IsDir()) {
					t.Errorf("left behind: %s", e.Name())
				}
			}
		})
	}
}

// TestManyShardsAllocation: a run of many small shards allocates per shard
// what that shard needs, not a fixed read-back buffer of 1 MiB for the
// digest of its directory (500 shards of 8 members allocated 530 MB at
// fccfa5c, the first commit that hashed directories back from the file;
// 38 MB now; the bound is 128 MB).
func TestManyShardsAllocation(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 500 shards; skipped with -short")
	}
	dir := t.TempDir()
	w, err := Create(context.Background(), dir, WriterOptions{MaxMembers: 8})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	payload := bytes.Repeat([]byte("x"), 100)
	for i := range 4000 {
		if _, err := w.AddBytes(fmt.Sprintf("k/%06d", i), payload, ""); err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d shards: %.1f MB allocated", st.Shards, float64(alloc)/1e6)
	if st.Shards != 500 {
		t.Fatalf("%d shards, want 500", st.Shards)
	}
	if alloc > 128e6 {
		t.Errorf("%d shards allocated %.1f MB", st.Shards, float64(alloc)/1e6)
	}
}

// TestStreamedMemberCutOff: a member streamed from a file with its CRC-32
// known beforehand (the file holds more bytes than declared, so it is cut
// off after its payload, every chunk of which was queued for the hasher)
// leaves the shard and its manifest as if it had never been added: they
// equal those of a pack written without it, and verify passes.
func TestStreamedMemberCutOff(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	open := func(name string, b []byte) *os.File {
		t.Helper()
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	before, long, after := payload(1, 3*copyBuf+5), payload(2, 12*copyBuf), payload(3, 2*copyBuf+9)
	var dirs []string
	for _, withCut := range []bool{true, false} {
		dir := t.TempDir()
		dirs = append(dirs, dir)
		w, err := Create(context.Background(), dir, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Add("before", open("before", before), int64(len(before)), ""); err != nil {
			t.Fatal(err)
		}
		if withCut {
			if _, err := w.Add("long", open("long", long), int64(len(long))-1, ""); !errors.Is(err, ErrSizeMismatch) {
				t.Fatalf("a file longer than declared: %v", err)
			}
		}
		if _, err := w.Add("after", open("after", after), int64(len(after)), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"pack-0000.zip", ManifestName} {
		a, errA := os.ReadFile(filepath.Join(dirs[0], name))
		b, errB := os.ReadFile(filepath.Join(dirs[1], name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s differs from the pack written without the member cut off (%v, %v)", name, errA, errB)
		}
	}
	rep, err := Verify(context.Background(), dirs[0])
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}
