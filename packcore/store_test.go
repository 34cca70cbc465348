package packcore

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// writeKeys writes keys (each of size bytes, different contents) into a
// new pack directory with at most perShard members a shard.
func writeKeys(t *testing.T, keys []string, size, perShard int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "media")
	w, err := Create(context.Background(), dir, WriterOptions{MaxMembers: perShard})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		b := payload(uint64(i), size)
		if _, err := w.Add(k, bytes.NewReader(b), int64(len(b)), ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// upload puts every file of the local directory dir under prefix in st.
func upload(t *testing.T, st objstore.Store, dir, prefix string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(context.Background(), objstore.Join(prefix, e.Name()), bytes.NewReader(b), int64(len(b)), objstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// tailRead is how many bytes the first read of a shard takes.
func tailRead(size int64) int64 { return min(size, maxTail+end64LocLen) }

// TestSetInS3 opens packs on a real S3 server and counts what each step
// costs: opening a set is one listing and one ranged read per shard when
// its directory fits in the tail (two when it does not), a member is one
// ranged read, and every byte read equals the local pack's.
func TestSetInS3(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "packs")
	ctx := context.Background()
	up, err := objstore.Open(ctx, "s3://packs/ds", srv.Reach(objstore.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		keys     int
		keyLen   int
		size     int
		perShard int
		// dirReads is the reads per shard that opening takes.
		dirReads int64
	}{
		{"small directories", 300, 20, 1000, 100, 1},
		{"directory over 64 KiB", 1500, 60, 10, 1500, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys := make([]string, c.keys)
			for i := range keys {
				keys[i] = fmt.Sprintf("%0*d.bin", c.keyLen, i)
			}
			local := writeKeys(t, keys, c.size, c.perShard)
			prefix := strings.ReplaceAll(c.name, " ", "-") + "/media"
			upload(t, up, local, prefix)
			want, err := OpenSet(local, SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()

			var stats objstore.Stats
			st, err := objstore.Open(ctx, "s3://packs/ds", srv.Reach(objstore.Options{Stats: &stats}))
			if err != nil {
				t.Fatal(err)
			}
			set, err := OpenSetIn(ctx, st, prefix, SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			shards := int64(len(set.Shards()))
			if shards != int64((c.keys+c.perShard-1)/c.perShard) {
				t.Fatalf("%d shards", shards)
			}
			var wantBytes int64
			for _, sf := range set.shards {
				wantBytes += tailRead(sf.size)
				if c.dirReads == 2 {
					wantBytes += sf.size - tailRead(sf.size) - sf.dir.Start
				}
			}
			if got, want := stats.Requests(), 1+shards*c.dirReads; got != want {
				t.Errorf("opening %d shards took %d requests, want %d (one listing, %d read(s) a shard)", shards, got, want, c.dirReads)
			}
			if got := stats.BytesRead(); got != wantBytes {
				t.Errorf("opening fetched %d bytes, want %d", got, wantBytes)
			}
			t.Logf("opening %d shards (%d members): %d requests, %d bytes", shards, set.Len(), stats.Requests(), stats.BytesRead())
			if set.RefBase() != "media" || set.Len() != want.Len() {
				t.Fatalf("ref base %q, %d members; want media, %d", set.RefBase(), set.Len(), want.Len())
			}
			var got, wantM []Member
			for m := range set.Members() {
				got = append(got, m)
			}
			for m := range want.Members() {
				wantM = append(wantM, m)
			}
			if fmt.Sprint(got) != fmt.Sprint(wantM) {
				t.Fatalf("members differ from the local set's")
			}

			// Each member: one ranged read, header and payload together.
			before, beforeBytes := stats.Requests(), stats.BytesRead()
			var payloadBytes int64
			for i, k := range keys {
				b, err := set.Read(k)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(b, payload(uint64(i), c.size)) {
					t.Fatalf("%s: bytes differ", k)
				}
				payloadBytes += int64(len(b))
			}
			if got := stats.Requests() - before; got != int64(len(keys)) {
				t.Errorf("%d member reads took %d requests", len(keys), got)
			}
			// header (30 + name) and slack per member at most
			if got := stats.BytesRead() - beforeBytes; got > payloadBytes+int64(len(keys))*(localLen+int64(c.keyLen+4)+headerSlack) {
				t.Errorf("member reads fetched %d bytes for %d payload bytes", got, payloadBytes)
			}
			// A second read knows the header: exactly the payload.
			before, beforeBytes = stats.Requests(), stats.BytesRead()
			if _, err := set.ReadInto(keys[0], make([]byte, 0, c.size)); err != nil {
				t.Fatal(err)
			}
			if stats.Requests()-before != 1 || stats.BytesRead()-beforeBytes != int64(c.size) {
				t.Errorf("a second read took %d requests and %d bytes", stats.Requests()-before, stats.BytesRead()-beforeBytes)
			}
		})
	}
}

// TestStreamsInS3 reads a member larger than one streamed read through
// OpenChecked and OpenRange from S3, and finds a flipped byte with both
// OpenChecked and VerifyIn.
func TestStreamsInS3(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "packs")
	ctx := context.Background()
	keys := []string{"small.bin", "big.bin", "tail.bin"}
	dir := filepath.Join(t.TempDir(), "media")
	w, err := Create(ctx, dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data := map[string][]byte{"small.bin": payload(1, 5000), "big.bin": payload(2, streamChunk*2+12345), "tail.bin": payload(3, 100)}
	for _, k := range keys {
		if _, err := w.Add(k, bytes.NewReader(data[k]), int64(len(data[k])), ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var stats objstore.Stats
	st, err := objstore.Open(ctx, "s3://packs/", srv.Reach(objstore.Options{Stats: &stats}))
	if err != nil {
		t.Fatal(err)
	}
	upload(t, st, dir, "media")
	set, err := OpenSetIn(ctx, st, "media/pack-0000.zip", SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for _, k := range keys {
		before := stats.Requests()
		r, err := set.OpenChecked(k)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(b, data[k]) {
			t.Fatalf("%s: %d bytes, %v", k, len(b), err)
		}
		// one read for a small member; header, then 8 MiB reads
		want := int64(1)
		if len(b) > streamChunk {
			want = 1 + int64((len(b)+streamChunk-1)/streamChunk)
		}
		if got := stats.Requests() - before; got != want {
			t.Errorf("%s: OpenChecked took %d requests, want %d", k, got, want)
		}
	}
	r, err := set.OpenRange("big.bin", streamChunk-10, streamChunk+20)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(b, data["big.bin"][streamChunk-10:2*streamChunk+10]) {
		t.Fatalf("OpenRange: %d bytes, %v", len(b), err)
	}

	rep, err := VerifyIn(ctx, st, "media")
	if err != nil || !rep.OK() || !rep.Manifest || rep.Members != 3 {
		t.Fatalf("clean pack: %+v, %v", rep, err)
	}
	// A flipped byte in the big member's payload, uploaded over the shard.
	shard, err := os.ReadFile(filepath.Join(dir, "pack-0000.zip"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := set.Stat("big.bin")
	shard[m.HeaderOffset+localLen+int64(len("big.bin"))+20+1000] ^= 0x40
	if err := st.Put(ctx, "media/pack-0000.zip", bytes.NewReader(shard), int64(len(shard)), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	before, beforeBytes := stats.Requests(), stats.BytesRead()
	rep, err = VerifyIn(ctx, st, "media")
	if err != nil {
		t.Fatal(err)
	}
	probs := strings.Join(rep.Problems, "\n")
	if !strings.Contains(probs, "pack-0000.zip:big.bin: CRC mismatch") || !strings.Contains(probs, "does not match manifest") {
		t.Fatalf("problems:\n%s", probs)
	}
	// one listing, the manifest (a HEAD and a read), the tail, the stream
	// of the rest
	head := int64(len(shard)) - tailRead(int64(len(shard)))
	streamed := (head + verifyChunk - 1) / verifyChunk
	t.Logf("verifying a shard of %d bytes: %d requests, %d bytes", len(shard), stats.Requests()-before, stats.BytesRead()-beforeBytes)
	if got, want := stats.Requests()-before, 1+2+1+streamed; got != want {
		t.Errorf("VerifyIn took %d requests, want %d", got, want)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stats.BytesRead()-beforeBytes, int64(len(shard)+len(manifest)); got != want {
		t.Errorf("VerifyIn fetched %d bytes for a shard of %d and a manifest of %d, want each byte once", got, len(shard), len(manifest))
	}
	set2, err := OpenSetIn(ctx, st, "media", SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set2.Close()
	r, err = set2.OpenChecked("big.bin")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, r)
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "CRC-32 mismatch") {
		t.Fatalf("flipped byte read back with %v", err)
	}
}

// countingReader counts the positioned reads of a file.
type countingReader struct {
	r     io.ReaderAt
	reads int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.r.ReadAt(p, off)
}

// TestReadDirectoryReads checks the directory read against Go's
// archive/zip on shards whose directory fits in the tail and on one whose
// directory does not, with and without bytes prepended to the archive,
// and counts the reads: one when the tail holds the directory, two when not.
func TestReadDirectoryReads(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		keys    int
		prepend int
		reads   int
	}{
		{"small", 50, 0, 1},
		{"small, prepended", 50, 1000, 1},
		{"large", 1500, 0, 2},
		{"large, prepended", 1500, 70000, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			keys := make([]string, c.keys)
			for i := range keys {
				keys[i] = fmt.Sprintf("dir/%060d.bin", i)
			}
			b, err := os.ReadFile(filepath.Join(writeKeys(t, keys, 10, c.keys), "pack-0000.zip"))
			if err != nil {
				t.Fatal(err)
			}
			b = append(bytes.Repeat([]byte{'x'}, c.prepend), b...)
			cr := &countingReader{r: bytes.NewReader(b)}
			d, err := ReadDirectory(cr, int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if cr.reads != c.reads {
				t.Errorf("%d reads, want %d (directory of %d bytes)", cr.reads, c.reads, d.Size)
			}
			zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if len(zr.File) != len(d.Entries) {
				t.Fatalf("%d entries, archive/zip reads %d", len(d.Entries), len(zr.File))
			}
			for i, f := range zr.File {
				e := d.Entries[i]
				off, err := f.DataOffset()
				if err != nil {
					t.Fatal(err)
				}
				if e.Name != f.Name || e.CRC32 != f.CRC32 || uint64(e.Size) != f.UncompressedSize64 || e.HeaderOffset+localLen+int64(len(f.Name)) != off {
					t.Fatalf("entry %d: %+v; archive/zip: %s crc %08x size %d data at %d", i, e, f.Name, f.CRC32, f.UncompressedSize64, off)
				}
			}
		})
	}
}
