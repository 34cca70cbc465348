package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestVerifyCompressedShards converts a tar compressed in every way
// convert-wds reads (written by the compressors' own command-line tools)
// and checks that verify --against reads the same file: every payload
// compared, none differing, and a payload changed in the packs found. The
// two must detect compressions alike; a zstd stream that starts with a
// skippable frame (as some writers put metadata first; zstd -d skips it)
// was once converted but refused by verify as "not a tar".
func TestVerifyCompressedShards(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "gzip", "bzip2", "xz", "zstd", "zip")
	root := t.TempDir()
	plain := wdsShards(t, root, 1, 4, 3000)[0]
	tarBytes, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	half := len(tarBytes) / 2
	// compress runs a tool over b and returns its output.
	compress := func(t *testing.T, b []byte, tool ...string) []byte {
		t.Helper()
		cmd := exec.Command(tool[0], tool[1:]...)
		cmd.Stdin = bytes.NewReader(b)
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v %s", tool, err, stderr.String())
		}
		return out.Bytes()
	}
	// A skippable frame: magic 0x184D2A5?, little-endian length, content.
	skippable := append([]byte{0x5a, 0x2a, 0x4d, 0x18, 9, 0, 0, 0}, "metadata!"...)
	for _, tc := range []struct {
		name, ext string
		make      func(t *testing.T) []byte
		test      []string // the tool's own integrity check of the file
	}{
		{"gzip", ".tar.gz", func(t *testing.T) []byte { return compress(t, tarBytes, "gzip", "-c") }, []string{"gzip", "-t"}},
		{"gzip members", ".tgz", func(t *testing.T) []byte {
			return append(compress(t, tarBytes[:half], "gzip", "-c"), compress(t, tarBytes[half:], "gzip", "-c")...)
		}, []string{"gzip", "-t"}},
		{"bzip2", ".tar.bz2", func(t *testing.T) []byte { return compress(t, tarBytes, "bzip2", "-c") }, []string{"bzip2", "-t"}},
		{"xz", ".tar.xz", func(t *testing.T) []byte { return compress(t, tarBytes, "xz", "-c") }, []string{"xz", "-t"}},
		{"zstd", ".tar.zst", func(t *testing.T) []byte { return compress(t, tarBytes, "zstd", "-c", "-q") }, []string{"zstd", "-t", "-q"}},
		{"zstd frames", ".tar.zst", func(t *testing.T) []byte {
			return append(compress(t, tarBytes[:half], "zstd", "-c", "-q"), compress(t, tarBytes[half:], "zstd", "-c", "-q")...)
		}, []string{"zstd", "-t", "-q"}},
		{"zstd skippable frame first", ".tzst", func(t *testing.T) []byte {
			return append(append([]byte(nil), skippable...), compress(t, tarBytes, "zstd", "-c", "-q")...)
		}, []string{"zstd", "-t", "-q"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			shard := filepath.Join(dir, "shard-000000"+tc.ext)
			if err := os.WriteFile(shard, tc.make(t), 0o644); err != nil {
				t.Fatal(err)
			}
			testtool.Run(t, tc.test[0], append(tc.test[1:], shard)...)
			dst := filepath.Join(dir, "out")
			if r := bp(t, "convert-wds", shard, dst, "--yes", "--quiet"); r.code != 0 {
				t.Fatalf("convert-wds: %+v", r)
			}
			r, d := verifyJSON(t, dst, "--against", shard)
			if r.code != 0 || d.Against == nil || d.Against.Payloads != 8 || d.Against.Mismatches != 0 {
				t.Fatalf("verify --against: exit %d %+v %+v\n%s", r.code, d.Against, d.Problems, r.stderr)
			}
			// A payload byte changed in the pack: the CRC check and the
			// comparison both see it.
			pack := filepath.Join(dst, "media", "pack-0000.zip")
			b, err := os.ReadFile(pack)
			if err != nil {
				t.Fatal(err)
			}
			i := bytes.Index(b, []byte("000002.bin"))
			if i < 0 {
				t.Fatal("member 000002.bin not found in the pack")
			}
			b[i+len("000002.bin")+100] ^= 0xff
			if err := os.WriteFile(pack, b, 0o644); err != nil {
				t.Fatal(err)
			}
			r, d = verifyJSON(t, dst, "--against", shard)
			if r.code != 1 || d.Against == nil || d.Against.Mismatches != 1 {
				t.Fatalf("changed payload: exit %d %+v %+v", r.code, d.Against, d.Problems)
			}
			if !strings.Contains(r.stderr, "000002.bin") {
				t.Errorf("changed payload: the error does not name the member:\n%s", r.stderr)
			}
		})
	}
}
