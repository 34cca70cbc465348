package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

func TestHelpAndUsage(t *testing.T) {
	t.Parallel()
	r := bp(t, "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Exit codes:") || !strings.Contains(r.stdout, "130") {
		t.Fatalf("help: %d\n%s", r.code, r.stdout)
	}
	if r := bp(t, "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, "bpconvert: error: unknown command") {
		t.Fatalf("unknown command: %+v", r)
	}
	if r := bp(t, "pack", "only-one"); r.code != 2 {
		t.Fatalf("missing argument: %+v", r)
	}
	if r := bp(t, "version", "--json"); r.code != 0 || lastJSON(t, r)["go_version"] == "" {
		t.Fatalf("version: %+v", r)
	}
}

func TestPackVerifyLsUnpack(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	files := map[string]string{
		"images/0001.jpg": strings.Repeat("j", 5000),
		"images/0002.jpg": strings.Repeat("k", 7000),
		"labels/é.txt":    "label",
		"empty":           "",
		".hidden":         "h",
	}
	writeTree(t, src, files)
	dst := filepath.Join(root, "media")
	r := bp(t, "pack", src, dst, "--max-pack-bytes", "8KiB", "--json")
	if r.code != 0 {
		t.Fatalf("pack: %+v", r)
	}
	if strings.Contains(r.stderr, "\r") {
		t.Fatal("carriage return in off-terminal output")
	}
	doc := lastJSON(t, r)
	if doc["ok"] != true || doc["members"] != float64(5) || doc["shards"].(float64) < 2 {
		t.Fatalf("summary %v", doc)
	}
	if !strings.Contains(r.stderr, "wrote pack-0000.zip") {
		t.Fatalf("no per-shard log line:\n%s", r.stderr)
	}
	if exists(filepath.Join(root, ".media.bpconvert-staging")) {
		t.Fatal("staging directory left behind")
	}

	if r := bp(t, "verify", dst); r.code != 0 || !strings.HasPrefix(r.stdout, "OK: 5 blobs") {
		t.Fatalf("verify: %+v", r)
	}
	r = bp(t, "ls", dst)
	if r.code != 0 || !strings.Contains(r.stdout, "5000\tpack-0000.zip\timages/0001.jpg\n") || strings.Count(r.stdout, "\n") != 5 {
		t.Fatalf("ls: %+v", r)
	}
	out := filepath.Join(root, "out")
	if r := bp(t, "unpack", dst, out); r.code != 0 {
		t.Fatalf("unpack: %+v", r)
	}
	for name, data := range files {
		b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name)))
		if err != nil || string(b) != data {
			t.Errorf("unpacked %s: %v", name, err)
		}
	}

	// Packs are immutable: a second run into the same place is refused.
	r = bp(t, "pack", src, dst)
	if r.code != 2 || !strings.Contains(r.stderr, "already exists") || !strings.Contains(r.stderr, "bpconvert: hint:") {
		t.Fatalf("second pack: %+v", r)
	}
	// manifest refuses to overwrite without --force.
	if r := bp(t, "manifest", dst); r.code != 2 {
		t.Fatalf("manifest without --force: %+v", r)
	}
	if r := bp(t, "manifest", dst, "--force"); r.code != 0 {
		t.Fatalf("manifest --force: %+v", r)
	}
	if r := bp(t, "verify", dst); r.code != 0 {
		t.Fatalf("verify after manifest: %+v", r)
	}

	// Damage a payload: verify reports it and fails.
	p := filepath.Join(dst, "pack-0000.zip")
	b, _ := os.ReadFile(p)
	b[60] ^= 1
	os.WriteFile(p, b, 0o644)
	r = bp(t, "verify", dst, "--json")
	if r.code != 1 || !strings.Contains(r.stderr, "FAIL pack-0000.zip") || lastJSON(t, r)["ok"] != false {
		t.Fatalf("verify damaged: %+v", r)
	}
}

func TestPackRefusesBadNames(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	writeTree(t, src, map[string]string{"ok.txt": "x", "bad::name.txt": "y"})
	dst := filepath.Join(root, "dst")
	summary := filepath.Join(root, "summary.json")
	r := bp(t, "pack", src, dst, "--summary-file", summary)
	if r.code != 3 || !strings.Contains(r.stderr, "bad::name.txt") {
		t.Fatalf("bad name: %+v", r)
	}
	if exists(dst) {
		t.Fatal("DST exists after a refused pack")
	}
	b, err := os.ReadFile(summary)
	if err != nil || !strings.Contains(string(b), `"exit_code":3`) {
		t.Fatalf("summary file: %v %s", err, b)
	}
}

// TestPackLinkedRoot: a SRC that is a symbolic link to a directory is
// packed as the directory it leads to (as the converters read a linked
// source), its files under their names inside it, and unpack gives them
// back.
func TestPackLinkedRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := map[string]string{"a/x.txt": "hello", "y.txt": "yo"}
	writeTree(t, filepath.Join(root, "files"), files)
	link := filepath.Join(root, "link")
	if err := os.Symlink(filepath.Join(root, "files"), link); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root, "pack")
	if r := bp(t, "pack", link, dst, "--quiet"); r.code != exitOK {
		t.Fatalf("pack of a linked directory: %+v", r)
	}
	out := filepath.Join(root, "out")
	if r := bp(t, "unpack", dst, out, "--quiet"); r.code != exitOK {
		t.Fatalf("unpack: %+v", r)
	}
	for name, body := range files {
		if b, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name))); err != nil || string(b) != body {
			t.Fatalf("%s: %q, %v; want %q", name, b, err, body)
		}
	}
}

func TestUnpackRefusesCollisions(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// "a" is a file in one pack and a directory in the other's keys.
	for i, tree := range []map[string]string{{"a": "file"}, {"a/b": "nested"}} {
		src := filepath.Join(root, "src", string(rune('0'+i)))
		writeTree(t, src, tree)
		if r := bp(t, "pack", src, filepath.Join(root, "p"+string(rune('0'+i)))); r.code != 0 {
			t.Fatal(r)
		}
	}
	merged := filepath.Join(root, "merged")
	os.MkdirAll(merged, 0o755)
	copyFile(t, filepath.Join(root, "p0", "pack-0000.zip"), filepath.Join(merged, "pack-0000.zip"))
	copyFile(t, filepath.Join(root, "p1", "pack-0000.zip"), filepath.Join(merged, "pack-0001.zip"))
	out := filepath.Join(root, "out")
	r := bp(t, "unpack", merged, out)
	if r.code != 3 || !strings.Contains(r.stderr, "collides") || exists(out) {
		t.Fatalf("collision: %+v (out exists: %v)", r, exists(out))
	}
}

// peakRSS runs the program and returns its peak resident set in bytes.
// Linux counts in a child's peak the memory of the process that started it
// (the exec inherits the parent's high-water mark), so a test process that
// holds a lot would inflate the figure: the program is started from a
// fresh, small copy of the test binary (rssWrapEnv, see TestMain).
func peakRSS(t *testing.T, name string, args ...string) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{name}, args...)...)
	cmd.Env = append(os.Environ(), rssWrapEnv+"=1")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, se.String())
	}
	kb, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(so.String()), "maxrss="), 10, 64)
	if err != nil {
		t.Fatalf("%s %v: no peak RSS reported: %q", name, args, so.String())
	}
	return kb * 1024
}

// rssWrapEnv makes the test binary run its arguments as a program and
// print the program's peak RSS (KiB) as "maxrss=N" on stdout.
const rssWrapEnv = "BPCONVERT_TEST_RSS_WRAP"

// rssWrap runs os.Args[1:] with its output on stderr and prints its peak
// RSS; it returns the program's exit code.
func rssWrap() int {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("maxrss=%d\n", cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	return cmd.ProcessState.ExitCode()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sparseFile makes a file of size bytes that is mostly a hole, with
// patterned blocks at the given offsets so a reader that skips or shifts
// bytes is caught.
func sparseFile(t *testing.T, path string, size int64, marks []int64) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	for i, off := range marks {
		block := bytes.Repeat([]byte{byte(i + 1), 0xA5, byte(off >> 24), 0x5A}, 1024)
		if off+int64(len(block)) > size {
			off = size - int64(len(block))
		}
		if _, err := f.WriteAt(block, off); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return hex.EncodeToString(h.Sum(nil))
}

// TestZip64AndMemory packs a member of 4 GiB + 1 MiB followed by a small
// one, so the shard has a member over 4 GiB (its sizes need zip64), a
// member at an offset past 4 GiB and a central directory past 4 GiB: the
// least that shows all three (5 GiB cost a fifth more). It checks peak
// memory of the packing process and reads the shard back: every byte and
// CRC with Python's zipfile and bpconvert verify, the zip64 records with
// zipinfo (the sizes) and unzip -t of the member past 4 GiB. (unzip -t of
// the whole shard spent 16 CPU-seconds on the big member's CRC and Go's
// archive/zip another 4 seeing what Python's zipfile sees.) The shard is
// written to memory when the machine has room (RAMDir): on this machine's
// disk, writing and reading back 4 GiB cost about 20 CPU-seconds more of
// kernel time, which tells nothing about zip64 or memory.
func TestZip64AndMemory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes a shard of over 4 GiB; skipped with -short")
	}
	testtool.Require(t, "unzip", "zipinfo", "python3")
	const size = 1<<32 + 1<<20 + 7
	root := testtool.RAMDir(t, size+1<<20)
	src := filepath.Join(root, "src")
	os.MkdirAll(src, 0o755)
	bigSHA := sparseFile(t, filepath.Join(src, "big.bin"), size, []int64{0, 1<<31 - 100, 1<<32 - 2000, 1 << 32, size - 10})
	os.WriteFile(filepath.Join(src, "tail.txt"), []byte("after the big one"), 0o644)
	dst := filepath.Join(root, "media")

	// Peak RSS of the same program packing one small file is the baseline:
	// the member's size must not show in memory. (The absolute figure moves
	// with the machine: 29 MiB on a quiet one, up to 70 MiB seen while other
	// test binaries ran alongside.)
	small := filepath.Join(root, "small")
	writeTree(t, small, map[string]string{"tail.txt": "after the big one"})
	base := peakRSS(t, binPath, "pack", small, filepath.Join(root, "small-out"), "--quiet")
	rss := peakRSS(t, binPath, "pack", src, dst, "--quiet", "--max-pack-bytes", "8GiB")
	t.Logf("peak RSS packing a 4 GiB + 1 MiB member: %.1f MiB (one small file: %.1f MiB)", float64(rss)/(1<<20), float64(base)/(1<<20))
	if rss-base > 16<<20 {
		t.Errorf("packing a 4 GiB + 1 MiB member took %d bytes more than packing a small file", rss-base)
	}
	if rss > 128<<20 {
		t.Errorf("peak RSS %d bytes", rss)
	}
	shard := filepath.Join(dst, "pack-0000.zip")
	if st, err := os.Stat(shard); err != nil || st.Size() <= 1<<32+1<<20 {
		t.Fatalf("shard: %v", err)
	}

	out := testtool.Run(t, "unzip", "-t", shard, "tail.txt")
	if !strings.Contains(out, "testing: tail.txt") || !strings.Contains(out, "No errors detected") {
		t.Fatalf("unzip -t:\n%s", out)
	}
	out = testtool.Run(t, "zipinfo", shard)
	if !regexp.MustCompile(`(?m)^\S+ +\S+ +\S+ +`+itoa(size)+` +\S+ +stor .* big\.bin$`).MatchString(out) || !strings.Contains(out, "2 files") {
		t.Fatalf("zipinfo:\n%s", out)
	}
	py := testtool.Run(t, "python3", filepath.Join(testtool.RepoRoot(t), "packcore", "testdata", "zipcheck.py"), shard)
	if !strings.Contains(py, "\tbig.bin\t"+itoa(size)+"\t"+bigSHA+"\t0\t0") {
		t.Fatalf("python zipfile:\n%s", py)
	}
	if !strings.Contains(py, "\ttail.txt\t17\t") {
		t.Fatalf("python zipfile missed the member past 4 GiB:\n%s", py)
	}
	if r := bp(t, "verify", dst); r.code != 0 {
		t.Fatalf("verify: %+v", r)
	}
}

// TestManySmallFilesMemory packs 200,000 small files (the shape of an
// image dataset of thumbnails) and bounds what they add to the program's
// peak memory over packing one file: the key index, one shard's central
// directory and the heap's headroom. 200,000 keys of 17 bytes cost about
// 10 MB in the index and a full shard's directory 4 MB; before the index
// and directory moved outside the Go heap they added 42 MiB, since the
// collector lets the heap grow to twice what is live. The files are made
// in memory when the machine has room (RAMDir; tmpfs takes a page of
// 4 KiB for each, 800 MiB in all): on this machine's disk, creating and
// removing them took 50 CPU-seconds of kernel time, ten times the pack.
func TestManySmallFilesMemory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 200,000 files; skipped with -short")
	}
	root := testtool.RAMDir(t, 1<<30)
	src := filepath.Join(root, "src")
	const files = 200_000
	payload := make([]byte, 64)
	for i := range files {
		if i%1000 == 0 {
			if err := os.MkdirAll(filepath.Join(src, fmt.Sprintf("%04d", i/1000)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		binary.LittleEndian.PutUint64(payload, uint64(i))
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("%04d/%08d.jpg", i/1000, i)), payload, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	one := filepath.Join(root, "one")
	writeTree(t, one, map[string]string{"0000/00000000.jpg": "x"})
	base := peakRSS(t, binPath, "pack", one, filepath.Join(root, "one-out"), "--quiet")
	dst := filepath.Join(root, "out")
	rss := peakRSS(t, binPath, "pack", src, dst, "--quiet")
	t.Logf("peak RSS packing %d files: %.1f MiB (one file: %.1f MiB)", files, float64(rss)/(1<<20), float64(base)/(1<<20))
	if extra := rss - base; extra > 28<<20 {
		t.Errorf("%d small files added %.1f MiB to the peak, over 28", files, float64(extra)/(1<<20))
	}
	if r := bp(t, "verify", dst, "--json"); r.code != 0 || lastJSON(t, r)["members"] != float64(files) {
		t.Fatalf("verify: %+v", r)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
