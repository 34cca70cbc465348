package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/stage"
)

// The bad-input corpus: malformed sources generated at test time by the
// tools that write each format (GNU tar, Python's tarfile, gzip, bzip2, xz,
// zstd, zip, the ffmpeg CLI; DuckDB through fixtures/parquet), or by
// cutting and changing bytes of files those tools wrote. Every case runs
// the built binary as a process and must exit with its code (3 for bad
// input, 2 for usage) within badCaseTimeout, without a panic, with nothing
// left at the destination (nor a staging directory or lock file), and with
// a bounded error message that names the file at fault.

// badCaseTimeout bounds one case; it is generous on purpose (a slow shared
// machine must not fail the corpus): the cases that hang fail it by hours.
const badCaseTimeout = 20 * time.Second

// maxStderr bounds what one failing run prints.
const maxStderr = 16 << 10

// badCase is one malformed input and what bpconvert must do with it.
type badCase struct {
	name string
	// args are the command line; "DST" is replaced by a fresh destination.
	args []string
	// code is the exit code wanted: 3 (invalid input) or 2 (usage).
	code int
	// names is a substring stderr must hold: the file (or flag) at fault.
	names string
	// stdin is the standard input, if any.
	stdin []byte
}

// TestBadInputCorpus runs every case of the corpus.
func TestBadInputCorpus(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "tar", "python3", "gzip", "bzip2", "xz", "zstd", "zip")
	dir := t.TempDir()
	var cases []badCase
	cases = append(cases, wdsTruncations(t, filepath.Join(dir, "trunc"))...)
	cases = append(cases, wdsDamaged(t, filepath.Join(dir, "damaged"))...)
	cases = append(cases, wdsMembers(t, filepath.Join(dir, "members"))...)
	cases = append(cases, wdsSources(t, filepath.Join(dir, "sources"))...)
	cases = append(cases, packFlagCases(t, filepath.Join(dir, "flags"))...)
	cases = append(cases, unpackCases(t, filepath.Join(dir, "unpack"))...)
	cases = append(cases, parquetCases(t, filepath.Join(dir, "parquet"))...)
	cases = append(cases, lerobotCases(t, filepath.Join(dir, "lerobot"))...)
	t.Logf("%d cases", len(cases))
	if len(cases) < 100 {
		t.Errorf("the corpus holds %d cases, want at least 100", len(cases))
	}
	dstRoot := t.TempDir()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := filepath.Join(dstRoot, strconv.Itoa(i))
			if err := os.Mkdir(parent, 0o755); err != nil {
				t.Fatal(err)
			}
			runBadCase(t, c, filepath.Join(parent, "out"))
		})
	}
}

// runBadCase runs one case and checks the outcome.
func runBadCase(t *testing.T, c badCase, dst string) {
	t.Helper()
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = strings.ReplaceAll(a, "DST", dst)
	}
	ctx, cancel := context.WithTimeout(context.Background(), badCaseTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("bpconvert %s: still running after %v", strings.Join(args, " "), badCaseTimeout)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	stderr := se.String()
	if i := strings.Index(stderr, "bpconvert: error: "); i >= 0 {
		t.Log(cut(strings.SplitN(stderr[i:], "\n", 2)[0]))
	}
	if code != c.code {
		t.Errorf("exit %d, want %d\n%s", code, c.code, cut(stderr))
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("panicked:\n%s", cut(stderr))
	}
	if len(stderr) > maxStderr {
		t.Errorf("stderr holds %d bytes, want at most %d", len(stderr), maxStderr)
	}
	if !strings.Contains(stderr, "bpconvert: error: ") || !strings.Contains(stderr, c.names) {
		t.Errorf("stderr does not name %q:\n%s", c.names, cut(stderr))
	}
	for _, p := range []string{dst, stage.Path(dst), stage.LockPath(dst)} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("left behind: %s", p)
		}
	}
}

// cut shortens output for a failure message.
func cut(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// writeFile writes b to dir/name and returns its path.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// pipeThrough runs a program over b and returns its output.
func pipeThrough(t *testing.T, b []byte, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return out
}

// baseTar is a ustar archive written by GNU tar with members of 100, 3 and
// 700 bytes: headers at 0, 1024 and 2048, data at 512, 1536 and 2560, the
// end-of-archive marker at 3584.
func baseTar(t *testing.T) []byte {
	t.Helper()
	src := t.TempDir()
	writeFile(t, src, "s0.cls", bytes.Repeat([]byte("c"), 100))
	writeFile(t, src, "s0.jpg", []byte("jpg"))
	writeFile(t, src, "s1.jpg", bytes.Repeat([]byte("j"), 700))
	out := filepath.Join(t.TempDir(), "base.tar")
	testtool.Run(t, "tar", "--format=ustar", "--owner=0", "--group=0", "--mtime=@0", "-cf", out, "-C", src, "s0.cls", "s0.jpg", "s1.jpg")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compressors are the compressed forms convert-wds reads, by suffix.
var compressors = []struct{ suffix, tool string }{
	{".tar.gz", "gzip"}, {".tar.bz2", "bzip2"}, {".tar.xz", "xz"}, {".tar.zst", "zstd"},
}

// wdsTruncations cuts the GNU tar archive at every kind of place before its
// end-of-archive marker: inside headers, data, padding, and the marker;
// plain, and each compressor closing its stream over the cut tar.
func wdsTruncations(t *testing.T, dir string) []badCase {
	b := baseTar(t)
	var cases []badCase
	cuts := []int{1, 256, 511, 512, 600, 612, 800, 1023, 1024, 1100, 1536, 1539, 2000, 2048, 2560, 3000, 3260, 3500, 3583, 3584, 3700}
	for _, at := range cuts {
		p := writeFile(t, dir, fmt.Sprintf("cut-%d.tar", at), b[:at])
		cases = append(cases, badCase{name: fmt.Sprintf("tar cut at %d", at), args: []string{"convert-wds", p, "DST"}, code: 3, names: p})
	}
	for _, c := range compressors {
		for _, at := range []int{100, 612, 800, 1539, 2000, 3260, 3584} {
			p := writeFile(t, dir, fmt.Sprintf("cut-%d%s", at, c.suffix), pipeThrough(t, b[:at], c.tool, "-c"))
			cases = append(cases, badCase{name: fmt.Sprintf("%s of a tar cut at %d", c.tool, at), args: []string{"convert-wds", p, "DST"}, code: 3, names: p})
		}
	}
	// From standard input, the shard is named "-".
	for _, at := range []int{800, 2000} {
		cases = append(cases, badCase{name: fmt.Sprintf("stdin tar cut at %d", at), args: []string{"convert-wds", "-", "DST", "--yes"}, code: 3, names: "wds: -:", stdin: b[:at]})
	}
	return cases
}

// setHeader changes a field of the tar header at off and fixes the header
// checksum, as a writer with a bug would have written it.
func setHeader(b []byte, off, field int, val string) []byte {
	b = bytes.Clone(b)
	copy(b[off+field:], val)
	copy(b[off+148:off+156], "        ")
	sum := 0
	for _, c := range b[off : off+512] {
		sum += int(c)
	}
	copy(b[off+148:], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// wdsDamaged changes bytes of real archives: compressed streams cut or
// with a byte flipped, tar headers with a bad checksum, an impossible size
// or a member type that cannot be converted.
func wdsDamaged(t *testing.T, dir string) []badCase {
	b := baseTar(t)
	var cases []badCase
	add := func(name, file string, data []byte) {
		p := writeFile(t, dir, file, data)
		cases = append(cases, badCase{name: name, args: []string{"convert-wds", p, "DST"}, code: 3, names: p})
	}
	for _, c := range compressors {
		z := pipeThrough(t, b, c.tool, "-c")
		add(c.tool+" stream cut in half", "half"+c.suffix, z[:len(z)/2])
		add(c.tool+" stream missing its last 4 bytes", "short"+c.suffix, z[:len(z)-4])
		flipped := bytes.Clone(z)
		flipped[len(z)/2] ^= 0x5a
		add(c.tool+" stream with a flipped byte", "flip"+c.suffix, flipped)
	}
	flip := func(at int) []byte {
		x := bytes.Clone(b)
		x[at] ^= 0x20
		return x
	}
	add("first header checksum wrong", "sum0.tar", flip(150))
	add("second header checksum wrong", "sum1.tar", flip(1024+150))
	add("last header name changed without its checksum", "name2.tar", flip(2048+3))
	add("member size past the end", "size.tar", setHeader(b, 1024, 124, "77777777777"))
	add("member size not octal", "size8.tar", setHeader(b, 1024, 124, "9999x999999"))
	add("FIFO member", "fifo.tar", setHeader(b, 2048, 156, "6"))
	add("character device member", "chr.tar", setHeader(b, 2048, 156, "3"))
	add("block device member", "blk.tar", setHeader(b, 2048, 156, "4"))
	add("hard link to a missing member", "hard.tar", setHeader(setHeader(b, 2048, 156, "1"), 2048, 157, "nowhere.jpg"))
	add("empty shard", "empty.tar", nil)
	add("random bytes", "random.tar", bytes.Repeat([]byte("not a tar archive, plainly. "), 40))
	add("gzip magic then garbage", "garbage.tar.gz", append([]byte{0x1f, 0x8b}, bytes.Repeat([]byte{7}, 100)...))
	add("bzip2 magic then garbage", "garbage.tar.bz2", append([]byte("BZh9"), bytes.Repeat([]byte{7}, 100)...))
	return cases
}

// wdsMembers writes archives with Python's tarfile whose members cannot be
// converted: special files, links out of the shard, unsafe or unusable
// names, headers beyond the readers' limits, broken samples.
func wdsMembers(t *testing.T, dir string) []badCase {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `
import io, sys, tarfile
out = sys.argv[1]
def tar(name, members, fmt=tarfile.PAX_FORMAT):
    with tarfile.open(out + "/" + name, "w", format=fmt) as tf:
        for m in members:
            ti = tarfile.TarInfo(m[0])
            data = b""
            if len(m) > 1: ti.type = m[1]
            if len(m) > 2: ti.linkname = m[2]
            if len(m) > 3: ti.pax_headers = m[3]
            if ti.type in (tarfile.REGTYPE, tarfile.AREGTYPE): data = b"payload " + m[0].encode()[:20]
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
R = tarfile.REGTYPE
tar("fifo.tar", [("a.jpg",), ("b.jpg", tarfile.FIFOTYPE)])
tar("chr.tar", [("a.jpg",), ("dev.jpg", tarfile.CHRTYPE)])
tar("blk.tar", [("blk.jpg", tarfile.BLKTYPE)])
tar("symlink-out.tar", [("a.jpg",), ("b.jpg", tarfile.SYMTYPE, "../../etc/passwd")])
tar("symlink-abs.tar", [("a.jpg",), ("b.jpg", tarfile.SYMTYPE, "/etc/passwd")])
tar("hardlink-missing.tar", [("a.jpg",), ("b.jpg", tarfile.LNKTYPE, "zzz.jpg")])
tar("dup.tar", [("a.jpg",), ("a.jpg",)])
tar("dotdot.tar", [("../evil.jpg",)])
tar("abs.tar", [("/abs.jpg",)])
tar("dotseg.tar", [("x/../y.jpg",)])
tar("backslash.tar", [("a\\b.jpg",)])
tar("control.tar", [("a\x01b.jpg",)])
tar("colons.tar", [("a::b.jpg",)])
tar("space.tar", [(" lead.jpg",)])
tar("long-key.tar", [("k" * 70000 + ".jpg",)])
tar("split.tar", [("a.jpg",), ("b.jpg",), ("a.cls",)])
tar("repeat-field.tar", [("a.jpg",), ("a.JPG",)])
tar("pax-huge.tar", [("a.jpg",), ("b.jpg", R, "", {"comment": "c" * (1100 * 1024)})])
tar("pax-name-huge.tar", [("a.jpg",), ("n" * (1100 * 1024) + ".jpg",)])
tar("gnu-long-huge.tar", [("a.jpg",), ("n" * (1100 * 1024) + ".jpg",)], tarfile.GNU_FORMAT)
`
	testtool.Run(t, "python3", "-c", script, dir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var cases []badCase
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		cases = append(cases, badCase{name: "tarfile " + strings.TrimSuffix(e.Name(), ".tar"), args: []string{"convert-wds", p, "DST"}, code: 3, names: p})
	}
	return cases
}

// wdsSources names shards that are not regular files, shards that do not
// exist, and a destination inside the source directory.
func wdsSources(t *testing.T, dir string) []badCase {
	good := baseTar(t)
	shards := filepath.Join(dir, "shards")
	writeFile(t, shards, "a.tar", good)
	fifo := filepath.Join(dir, "fifo.tar")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock.tar")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	fifoDir := filepath.Join(dir, "fifo-dir")
	writeFile(t, fifoDir, "a.tar", good)
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "b.tar"), 0o644); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "missing-{000..002}.tar")
	return []badCase{
		{name: "shard is a FIFO", args: []string{"convert-wds", fifo, "DST"}, code: 3, names: fifo},
		{name: "shard is a socket", args: []string{"convert-wds", sock, "DST"}, code: 3, names: sock},
		{name: "shard is a character device", args: []string{"convert-wds", "/dev/zero", "DST"}, code: 3, names: "/dev/zero"},
		{name: "FIFO among shards", args: []string{"convert-wds", filepath.Join(shards, "a.tar"), fifo, "DST"}, code: 3, names: fifo},
		{name: "FIFO in the shard directory", args: []string{"convert-wds", fifoDir, "DST"}, code: 3, names: filepath.Join(fifoDir, "b.tar")},
		{name: "pattern names missing shards", args: []string{"convert-wds", pattern, "DST"}, code: 3, names: "missing-000.tar"},
		{name: "destination inside the shard directory", args: []string{"convert-wds", shards, filepath.Join(shards, "out")}, code: 2, names: shards},
		{name: "destination deep inside the shard directory", args: []string{"convert-wds", shards, filepath.Join(shards, "x", "out")}, code: 2, names: shards},
		{name: "pack destination inside the source", args: []string{"pack", shards, filepath.Join(shards, "out")}, code: 2, names: shards},
	}
}

// packFlagCases gives every command that writes packs pack flag values no
// shard can honour: a usage error naming the flag, before any work.
func packFlagCases(t *testing.T, dir string) []badCase {
	shard := writeFile(t, dir, "a.tar", baseTar(t))
	src := filepath.Dir(shard)
	bad := []struct{ flag, val string }{
		{"--max-members", "-1"}, {"--max-members", "0"}, {"--max-members", "70000"}, {"--max-members", "many"},
		{"--max-pack-bytes", "0"}, {"--max-pack-bytes", "-5"}, {"--max-pack-bytes", "12XB"},
	}
	var cases []badCase
	for _, cmd := range [][]string{{"pack", src}, {"convert-wds", shard}, {"convert-parquet", src}, {"convert-lerobot", src}, {"convert-lance", src}} {
		for _, b := range bad {
			args := append(append([]string{}, cmd...), "DST", b.flag, b.val, "--yes")
			if cmd[0] == "pack" {
				args = args[:len(args)-1]
			}
			cases = append(cases, badCase{name: fmt.Sprintf("%s %s %s", cmd[0], b.flag, b.val), args: args, code: 2, names: strings.TrimPrefix(b.flag, "-")})
		}
	}
	return cases
}

// unpackCases damages pack directories written by the zip CLI (STORED):
// a flipped payload byte (CRC mismatch), cuts through members and the
// central directory, a broken directory signature.
func unpackCases(t *testing.T, dir string) []badCase {
	files := t.TempDir()
	writeFile(t, files, "a.txt", bytes.Repeat([]byte("a"), 300))
	writeFile(t, files, "b.txt", bytes.Repeat([]byte("b"), 500))
	z := filepath.Join(t.TempDir(), "pack-0000.zip")
	cmd := exec.Command("zip", "-0", "-X", "-q", z, "a.txt", "b.txt")
	cmd.Dir = files
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("zip: %v\n%s", err, out)
	}
	b, err := os.ReadFile(z)
	if err != nil {
		t.Fatal(err)
	}
	var cases []badCase
	add := func(name string, data []byte) {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		writeFile(t, p, "pack-0000.zip", data)
		cases = append(cases, badCase{name: "unpack " + name, args: []string{"unpack", p, "DST"}, code: 3, names: "pack-0000.zip"})
	}
	flipped := bytes.Clone(b)
	flipped[30+len("a.txt")+100] ^= 1
	add("payload byte flipped", flipped)
	for _, at := range []int{len(b) - 1, len(b) - 10, len(b) - 22, len(b) - 40, len(b) / 2} {
		add(fmt.Sprintf("cut at %d of %d", at, len(b)), b[:at])
	}
	cd := bytes.Index(b, []byte("PK\x01\x02"))
	broken := bytes.Clone(b)
	broken[cd+2] = 9
	add("central directory signature broken", broken)
	// Unsafe keys written by Python's zipfile, one of them 65,000 bytes
	// long (the message must stay short).
	script := `
import sys, zipfile
for name, key in [("dotdot", "../evil.txt"), ("absolute", "/abs.txt"), ("backslash", "a\\b.txt"), ("long", "../" + "e" * 65000)]:
    with zipfile.ZipFile(sys.argv[1] + "/" + name + ".zip", "w", zipfile.ZIP_STORED) as z:
        z.writestr(key, b"x")
`
	zdir := t.TempDir()
	testtool.Run(t, "python3", "-c", script, zdir)
	for _, name := range []string{"dotdot", "absolute", "backslash", "long"} {
		zb, err := os.ReadFile(filepath.Join(zdir, name+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		add("unsafe key "+name, zb)
	}
	// A failing unpack must not leave the parents it created.
	deep := badCase{name: "unpack into new parents", args: []string{"unpack", filepath.Join(dir, "payload-byte-flipped"), "DST"}, code: 3, names: "pack-0000.zip"}
	deep.args[2] = filepath.Join(t.TempDir(), "deep", "a", "b", "out")
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Dir(filepath.Dir(filepath.Dir(deep.args[2])))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a failed unpack left %s behind", filepath.Dir(filepath.Dir(filepath.Dir(deep.args[2]))))
		}
	})
	return append(cases, deep)
}

// parquetCases cuts and changes a table DuckDB wrote (fixtures/parquet).
func parquetCases(t *testing.T, dir string) []badCase {
	root := parquetFixtureRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "empty", "b-one.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []badCase
	add := func(name string, data []byte) {
		p := writeFile(t, filepath.Join(dir, strings.ReplaceAll(name, " ", "-")), "t.parquet", data)
		cases = append(cases, badCase{name: "parquet " + name, args: []string{"convert-parquet", filepath.Dir(p), "DST", "--yes"}, code: 3, names: "t.parquet"})
	}
	for _, at := range []int{4, 100, len(b) / 2, len(b) - 4, len(b) - 8, len(b) - 9} {
		add(fmt.Sprintf("cut at %d of %d", at, len(b)), b[:at])
	}
	footerLen := bytes.Clone(b)
	footerLen[len(b)-6] ^= 0x40
	add("footer length wrong", footerLen)
	magic := bytes.Clone(b)
	magic[len(b)-1] = 'X'
	add("end magic wrong", magic)
	i := bytes.LastIndex(b, []byte(`{"info"`))
	if i < 0 {
		t.Fatal("no huggingface metadata in the fixture")
	}
	for _, r := range []string{`["info"`, `{"info'`, `{{info"`} {
		x := bytes.Clone(b)
		copy(x[i:], r)
		add("huggingface metadata "+r, x)
	}
	fifo := filepath.Join(dir, "fifo.parquet")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases = append(cases,
		badCase{name: "parquet table is a FIFO", args: []string{"convert-parquet", fifo, "DST", "--yes"}, code: 3, names: fifo},
		badCase{name: "parquet file linked out of the root", args: []string{"convert-parquet", filepath.Join(root, "escapelink"), "DST", "--yes"}, code: 3, names: "link.png"},
		badCase{name: "parquet destination inside the source", args: []string{"convert-parquet", filepath.Join(root, "hf"), filepath.Join(root, "hf", "out"), "--yes"}, code: 2, names: filepath.Join(root, "hf")},
	)
	return cases
}

// lerobotCases changes copies of a LeRobot v2.0 dataset (fixtures/parquet/
// lerobot.mjs: ffmpeg CLI videos, DuckDB tables).
func lerobotCases(t *testing.T, dir string) []badCase {
	base := filepath.Join(lerobotFixtureRoot(t), "v2.0")
	video := filepath.Join("videos", "chunk-000", "observation.images.top", "episode_000001.mp4")
	var cases []badCase
	n := 0
	add := func(name, names string, code int, change func(root string)) {
		n++
		root := filepath.Join(dir, strconv.Itoa(n), "v2.0")
		testtool.CopyTree(t, base, root)
		change(root)
		cases = append(cases, badCase{name: "lerobot " + name, args: []string{"convert-lerobot", root, "DST", "--yes"}, code: code, names: names})
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	replace := func(rel string, make func(p string) error) func(string) {
		return func(root string) {
			p := filepath.Join(root, rel)
			must(os.Remove(p))
			must(make(p))
		}
	}
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	outside := func(rel string) func(string) {
		return func(root string) {
			p := filepath.Join(root, rel)
			o := filepath.Join(filepath.Dir(filepath.Dir(root)), "outside-"+filepath.Base(p))
			must(os.Rename(p, o))
			must(os.Symlink(o, p))
		}
	}
	edit := func(rel string, f func([]byte) []byte) func(string) {
		return func(root string) {
			p := filepath.Join(root, rel)
			b, err := os.ReadFile(p)
			must(err)
			must(os.WriteFile(p, f(b), 0o644))
		}
	}
	truncate := func(by func(size int64) int64) func(string) {
		return func(root string) {
			p := filepath.Join(root, video)
			fi, err := os.Stat(p)
			must(err)
			must(os.Truncate(p, fi.Size()-by(fi.Size())))
		}
	}
	add("info.json is a FIFO", "meta/info.json", 3, replace("meta/info.json", fifo))
	add("episodes.jsonl is a FIFO", "meta/episodes.jsonl", 3, replace("meta/episodes.jsonl", fifo))
	add("camera file is a FIFO", "episode_000001.mp4", 3, replace(video, fifo))
	add("data table is a FIFO", "episode_000002.parquet", 3, replace("data/chunk-000/episode_000002.parquet", fifo))
	add("camera file linked out of the dataset", "episode_000001.mp4", 3, outside(video))
	add("videos directory linked out of the dataset", "outside the source directory", 3, outside("videos"))
	add("info.json linked out of the dataset", "meta/info.json", 3, outside("meta/info.json"))
	add("episodes.jsonl linked out of the dataset", "meta/episodes.jsonl", 3, outside("meta/episodes.jsonl"))
	for _, by := range []int64{1, 40, 1000} {
		add(fmt.Sprintf("camera file missing its last %d bytes", by), "episode_000001.mp4", 3, truncate(func(int64) int64 { return by }))
	}
	add("camera file cut in half", "episode_000001.mp4", 3, truncate(func(s int64) int64 { return s / 2 }))
	add("info.json cut in half", "meta/info.json", 3, edit("meta/info.json", func(b []byte) []byte { return b[:len(b)/2] }))
	add("info.json not an object", "meta/info.json", 3, edit("meta/info.json", func([]byte) []byte { return []byte("[]") }))
	add("fps zero", "meta/info.json", 3, edit("meta/info.json", func(b []byte) []byte { return bytes.Replace(b, []byte(`"fps": 10`), []byte(`"fps": 0 `), 1) }))
	add("episodes.jsonl broken line", "meta/episodes.jsonl", 3, edit("meta/episodes.jsonl", func(b []byte) []byte { return append(b, []byte("{\"episode_index\": 9,\n")...) }))
	add("episode length 10^15", "meta/episodes.jsonl", 3, edit("meta/episodes.jsonl", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"length":15`), []byte(`"length":1000000000000000`), 1)
	}))
	add("episode length negative", "meta/episodes.jsonl", 3, edit("meta/episodes.jsonl", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"length":15`), []byte(`"length":-15`), 1)
	}))
	return cases
}

// TestSignalEndsBlockedStdinRead: SIGTERM ends convert-wds while its read
// on standard input is blocked (a writer that sends nothing, as
// `sleep 30 | bpconvert convert-wds - out --yes`), promptly, with exit 143
// and nothing left behind.
func TestSignalEndsBlockedStdinRead(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	root := t.TempDir()
	dst := filepath.Join(root, "out")
	cmd := exec.Command(binPath, "convert-wds", "-", dst, "--yes")
	cmd.Stdin = r
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if !testtool.WaitFor(badCaseTimeout, 20*time.Millisecond, func() bool { return exists(stage.Path(dst)) && readingFD(cmd.Process.Pid, 0) }) {
		cmd.Process.Kill()
		t.Fatalf("the conversion never blocked in a read of standard input:\n%s", se.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(badCaseTimeout):
		cmd.Process.Kill()
		<-done
		t.Fatal("SIGTERM did not end a run blocked on standard input")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("exit %v, want 143\n%s", err, se.String())
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 0 {
		t.Errorf("left behind in %s: %v", root, ents)
	}
}

// readingFD reports whether a thread of process pid is in a read(2) of file
// descriptor fd, from /proc/PID/task/TID/syscall (Linux on amd64 and
// arm64: the syscall's number, then its first argument).
func readingFD(pid, fd int) bool {
	read := map[string]string{"amd64": "0", "arm64": "63"}[runtime.GOARCH]
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 1 && f[0] == read && f[1] == fmt.Sprintf("0x%x", fd) {
			return true
		}
	}
	return false
}
