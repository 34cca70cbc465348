package packcore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCRCJoin checks the joined CRC of two parts against the CRC of the
// whole, for parts of every small length and some large ones.
func TestCRCJoin(t *testing.T) {
	data := payload(1, 1<<20+37)
	cuts := [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {3, 5}, {0, 4096}, {4096, 0}, {511, 513}, {1 << 19, 1<<20 + 37 - 1<<19}, {7, 1<<20 + 30}}
	for n := 0; n < 70; n++ {
		cuts = append(cuts, [2]int{n, 70 - n})
	}
	for _, c := range cuts {
		a, b := data[:c[0]], data[c[0]:c[0]+c[1]]
		want := crc32.ChecksumIEEE(data[:c[0]+c[1]])
		if got := crcJoin(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), int64(len(b))); got != want {
			t.Errorf("parts of %d and %d bytes: joined %08x, whole %08x", c[0], c[1], got, want)
		}
	}
}

// tempFile writes data to a new file and opens it for reading; the file is
// closed when the test ends.
func tempFile(t *testing.T, data []byte) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// TestFileRangeCRC checks fileRangeCRC against the CRC of the same bytes,
// for ranges below and above the size it divides, in 1 to 5 parts whatever
// the cores here, at offsets and lengths that do not divide evenly, read
// from a file (mapped) and from memory (read), and that a range past the
// end of the file or a cancelled context is an error.
func TestFileRangeCRC(t *testing.T) {
	data := payload(3, 3*splitCRCMin+12345)
	f, _ := tempFile(t, data)
	for _, tc := range []struct {
		name      string
		off, size int64
	}{
		{"empty", 0, 0},
		{"small", 17, 1000},
		{"just below the split", 1, splitCRCMin - 1},
		{"at the split", 0, splitCRCMin},
		{"uneven parts", 5, 2*splitCRCMin + 3},
		{"whole file", 0, int64(len(data))},
	} {
		for parts := 1; parts <= 5; parts++ {
			want := crc32.ChecksumIEEE(data[tc.off : tc.off+tc.size])
			for src, r := range map[string]io.ReaderAt{"file": f, "memory": bytes.NewReader(data)} {
				got, err := fileRangeCRC(context.Background(), r, tc.off, tc.size, parts, make([]byte, copyBuf))
				if err != nil || got != want {
					t.Errorf("%s, %d parts, from %s: CRC %08x, %v; want %08x", tc.name, parts, src, got, err, want)
				}
			}
		}
	}
	if _, err := fileRangeCRC(context.Background(), f, int64(len(data))-splitCRCMin, 2*splitCRCMin, 2, make([]byte, copyBuf)); err == nil {
		t.Error("a range past the end of the file: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fileRangeCRC(ctx, bytes.NewReader(data), 0, int64(len(data)), 2, make([]byte, copyBuf)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

// TestMappedCRCFault checks that a file shorter than the range mapped (as
// when it is cut short while it is read) gives an error, not a crash, and
// that the range it holds is checksummed without a copy where it can be.
func TestMappedCRCFault(t *testing.T) {
	data := payload(5, 1<<20)
	f, path := tempFile(t, data)
	crc, ok, err := mappedCRC(context.Background(), f, 3, int64(len(data))-3)
	if ok && (err != nil || crc != crc32.ChecksumIEEE(data[3:])) {
		t.Errorf("the file's bytes: CRC %08x, %v; want %08x", crc, err, crc32.ChecksumIEEE(data[3:]))
	}
	if !ok {
		t.Skip("this system does not map files: read instead")
	}
	_, ok, err = mappedCRC(context.Background(), f, 0, 4*int64(len(data)))
	if !ok || err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a range past the end of the file: ok %v, error %v; want an error naming the file", ok, err)
	}
}

// TestFileCutWhilePacked adds a file large enough for its CRC-32 to be
// taken on every core through mappings, while another goroutine keeps
// cutting it to half its size and writing it back: every Add either
// succeeds with the bytes the file held while it was copied or fails with
// an error (never a crash or a member that mixes states), and the pack
// verifies.
func TestFileCutWhilePacked(t *testing.T) {
	t.Parallel()
	data := payload(7, 2*splitCRCMin+4097)
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "pack")
	w, err := Create(context.Background(), dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	cutter := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			cutter <- err
			return
		}
		defer f.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				cutter <- nil
				return
			default:
			}
			if err := f.Truncate(int64(len(data) / 2)); err != nil {
				cutter <- err
				return
			}
			if _, err := f.WriteAt(data[len(data)/2:], int64(len(data)/2)); err != nil {
				cutter <- err
				return
			}
		}
	}()
	var added []string
	for i := range 12 {
		key := fmt.Sprintf("m/%d", i)
		if _, err := w.AddFile(key, p, ""); err == nil {
			added = append(added, key)
		}
	}
	close(stop)
	if err := <-cutter; err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(added) == 0 {
		return // every Add met a cut: nothing to check but that none crashed
	}
	rep, err := Verify(context.Background(), dir)
	if err != nil || !rep.OK() || rep.Members != len(added) {
		t.Fatalf("verify: %v %+v, want %d members", err, rep, len(added))
	}
	set, err := OpenSet(dir, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for _, k := range added {
		// The file, at any moment, holds a first part of data (its size
		// grows while the second half is written back): a member is the
		// file as it was while it was copied.
		b, err := set.Read(k)
		if err != nil || len(b) < len(data)/2 || !bytes.Equal(b, data[:len(b)]) {
			t.Errorf("%s: %d bytes, %v; want the first %d or more bytes of the file's", k, len(b), err, len(data)/2)
		}
	}
}
