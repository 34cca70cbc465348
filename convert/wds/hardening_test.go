package wds

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/stage"
)

// shardList turns paths into the shard sources a listing gives.
func shardList(paths []string) []shardSource {
	out := make([]shardSource, len(paths))
	for i, p := range paths {
		out[i] = shardSource{Name: p, Path: p, Stem: ShardStem(p)}
	}
	return out
}

// TestTableNames: __shard__ never holds the absolute path the source was
// typed with.
func TestTableNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		paths []string
		want  []string
	}{
		{[]string{"/data/shards/a.tar", "/data/shards/b.tar"}, []string{"a.tar", "b.tar"}},
		{[]string{"/data/shards/a.tar"}, []string{"a.tar"}},
		{[]string{"/data/x/a.tar", "/data/y/a.tar"}, []string{"x/a.tar", "y/a.tar"}},
		{[]string{"/data/x/a.tar", "/data/x/deep/b.tar"}, []string{"a.tar", "deep/b.tar"}},
		{[]string{"/a.tar", "/b/c.tar"}, []string{"a.tar", "b/c.tar"}},
	}
	for _, c := range cases {
		got := tableNames(shardList(c.paths))
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("tableNames(%v) = %v, want %v", c.paths, got, c.want)
		}
	}
	if got := tableNames([]shardSource{{Name: "-", Stem: "stdin"}}); got[0] != "stdin" {
		t.Errorf("standard input named %q", got[0])
	}
}

// gnuTar writes a tar of members (name -> size, bytes 'a'+i) with GNU tar
// in the given format and returns its bytes.
func gnuTar(t *testing.T, format string, sizes []int) []byte {
	t.Helper()
	testtool.Require(t, "tar")
	dir := t.TempDir()
	var names []string
	for i, n := range sizes {
		name := "sample" + string(rune('0'+i)) + ".txt"
		if err := os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte{byte('a' + i)}, n), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	out := filepath.Join(t.TempDir(), "x.tar")
	testtool.Run(t, "tar", append([]string{"--format=" + format, "--sort=name", "--owner=0", "--group=0", "--mtime=@0", "-cf", out, "-C", dir}, names...)...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compressWith runs a compressor (gzip, bzip2, xz, zstd) over b.
func compressWith(t *testing.T, tool string, b []byte) []byte {
	t.Helper()
	testtool.Require(t, tool)
	cmd := exec.Command(tool, "-c")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return out
}

// TestTruncatedInsidePadding: a tar cut inside a member's data padding is
// truncated, as GNU tar and Python's tarfile say, with or without a
// compressor around it (one that closes its stream properly over the cut
// tar), in the header pass and in the conversion.
func TestTruncatedInsidePadding(t *testing.T) {
	t.Parallel()
	whole := gnuTar(t, "gnu", []int{100, 50})
	// sample0.txt: header 0, data 512-612, padding to 1024; sample1.txt:
	// header 1024, data 1536-1586, padding to 2048.
	cuts := []struct {
		at     int
		member string
		off    int64
	}{
		{612, "sample0.txt", 0},  // right after the data
		{812, "sample0.txt", 0},  // inside the padding
		{1023, "sample0.txt", 0}, // one byte short of the next header
		{1586, "sample1.txt", 1024},
		{2000, "sample1.txt", 1024},
	}
	for _, c := range cuts {
		for _, comp := range []string{"", "gzip", "bzip2", "xz", "zstd"} {
			b := whole[:c.at]
			if comp != "" {
				b = compressWith(t, comp, b)
			}
			p := filepath.Join(t.TempDir(), "cut.tar")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("tar", "-tf", p).CombinedOutput(); err == nil {
				t.Fatalf("GNU tar accepts the cut at %d (%s): %s", c.at, comp, out)
			}
			_, err := inspect(context.Background(), Options{src: p}, nil)
			checkInputError(t, err, p, c.member, c.off, "unexpected EOF", ErrInvalidInput, HintTruncated)
			_, err = convertShards(context.Background(), Options{src: p, dst: converttest.Dest(t, filepath.Join(t.TempDir(), "out"))}, nil)
			checkInputError(t, err, p, c.member, c.off, "unexpected EOF", ErrInvalidInput, HintTruncated)
		}
	}
}

// TestCorruptCompressedStream: a bzip2 stream whose bytes are damaged
// decompresses into garbage before its checksum fails; the error blames
// the decompression, not the tar.
func TestCorruptCompressedStream(t *testing.T) {
	t.Parallel()
	b := compressWith(t, "bzip2", gnuTar(t, "gnu", []int{3000, 2000}))
	for _, at := range []int{len(b) / 3, len(b) / 2, len(b) - 20} {
		bad := bytes.Clone(b)
		bad[at] ^= 0x55
		p := filepath.Join(t.TempDir(), "bad.tar.bz2")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("bzip2", "-t", p).CombinedOutput(); err == nil {
			t.Fatalf("bzip2 -t accepts the damaged stream: %s", out)
		}
		_, err := convertShards(context.Background(), Options{src: p, dst: converttest.Dest(t, filepath.Join(t.TempDir(), "out"))}, nil)
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "bzip2") || strings.Contains(err.Error(), "holds no tar archive") {
			t.Errorf("damaged at %d: %v, want a bzip2 decompression error", at, err)
		}
	}
}

// TestHugeExtendedHeaders: PAX records and GNU long names over 1 MiB (which
// Go's and GNU's readers refuse) are invalid input naming the header.
func TestHugeExtendedHeaders(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "python3")
	dir := t.TempDir()
	script := `
import io, sys, tarfile
out, fmt = sys.argv[1], sys.argv[2]
name = "d/" + "n" * (1100 * 1024) + ".txt"
with tarfile.open(out, "w", format=tarfile.GNU_FORMAT if fmt == "gnu" else tarfile.PAX_FORMAT) as tf:
    ti = tarfile.TarInfo("first.txt"); ti.size = 1
    tf.addfile(ti, io.BytesIO(b"x"))
    ti = tarfile.TarInfo(name); ti.size = 1
    if fmt == "paxrec":
        ti.name = "second.txt"; ti.pax_headers = {"comment": "c" * (1100 * 1024)}
    tf.addfile(ti, io.BytesIO(b"y"))
`
	member := map[string]string{"gnu": "d/nnnn", "pax": "d/nnnn", "paxrec": "././@PaxHeader"}
	for _, format := range []string{"gnu", "pax", "paxrec"} {
		p := filepath.Join(dir, format+".tar")
		testtool.Run(t, "python3", "-c", script, p, format)
		for _, run := range []string{"inspect", "convert"} {
			var err error
			if run == "inspect" {
				_, err = inspect(context.Background(), Options{src: p}, nil)
			} else {
				_, err = convertShards(context.Background(), Options{src: p, dst: converttest.Dest(t, filepath.Join(t.TempDir(), "out"))}, nil)
			}
			checkInputError(t, err, p, anyMember, 1024, "larger than 1 MiB", ErrInvalidInput, "")
			if !strings.Contains(err.Error(), `member "`+member[format]) {
				t.Errorf("%s %s: %v does not name the member %q", format, run, err, member[format])
			}
			if len(err.Error()) > 1000 {
				t.Errorf("%s %s: message of %d bytes", format, run, len(err.Error()))
			}
		}
	}
}

// TestShardNotRegular: a FIFO, a socket or a device named as a shard is
// refused at once, naming it, instead of blocking on a read.
func TestShardNotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.tar")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	shards := filepath.Join(t.TempDir(), "shards")
	if err := os.MkdirAll(shards, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(shards, "b.tar"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{fifo, "/dev/zero", shards} {
		p := src
		if src == shards {
			p = filepath.Join(shards, "b.tar")
		}
		done := make(chan error, 1)
		go func() {
			_, err := convertShards(context.Background(), Options{src: src, dst: converttest.Dest(t, filepath.Join(t.TempDir(), "out"))}, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want refused as not a regular file", p, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the conversion blocked", p)
		}
	}
}

// TestStdinCancelled: a cancelled context ends a conversion whose read on
// standard input is blocked (a writer that sends nothing).
func TestStdinCancelled(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	out := filepath.Join(t.TempDir(), "out")
	done := make(chan error, 1)
	began := &readBegun{r: r, began: make(chan struct{})}
	go func() {
		_, err := convertShards(ctx, Options{src: "-", dst: converttest.Dest(t, out), Stdin: began}, nil)
		done <- err
	}()
	select {
	case <-began.began:
	case <-time.After(20 * time.Second):
		t.Fatal("the conversion never read standard input")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a cancelled conversion stayed blocked on standard input")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("destination left behind: %v", err)
	}
}

// TestDestinationInsideSource: the output may not go inside a source
// directory (usage error, stage.ErrOverlap): the conversion refuses it in
// convert.Begin, and nothing is written.
func TestDestinationInsideSource(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "shards")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.tar"), gnuTar(t, "gnu", []int{10}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{filepath.Join(src, "out"), filepath.Join(src, "deep", "out")} {
		if _, err := convertShards(context.Background(), Options{src: src, dst: converttest.Dest(t, dst)}, nil); !errors.Is(err, stage.ErrOverlap) {
			t.Errorf("Convert into %s: %v, want ErrOverlap", dst, err)
		}
		if _, err := os.Stat(dst); !os.IsNotExist(err) {
			t.Errorf("%s written", dst)
		}
	}
}

// TestPartTableNames: every part of a split conversion names its shards
// relative to the directory holding all of them, not only its own.
func TestPartTableNames(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	good := gnuTar(t, "gnu", []int{10})
	a := filepath.Join(root, "a", "x.tar")
	b := filepath.Join(root, "b", "y.tar")
	for _, p := range []string{a, b} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{src: a + "::" + b}
	for _, c := range []struct {
		part convert.Part
		want string
	}{{convert.Part{}, "a/x.tar,b/y.tar"}, {convert.Part{I: 1, N: 2}, "a/x.tar"}, {convert.Part{I: 2, N: 2}, "b/y.tar"}} {
		opts.Part = c.part
		srcs, err := resolveSources(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(partTableNames(context.Background(), opts, srcs.Shards), ","); got != c.want {
			t.Errorf("part %v: names %s, want %s", c.part, got, c.want)
		}
	}
}

// readBegun is a reader that closes began when its first Read begins.
type readBegun struct {
	r     io.Reader
	once  sync.Once
	began chan struct{}
}

func (b *readBegun) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.began) })
	return b.r.Read(p)
}
