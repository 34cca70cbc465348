package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestHostileShardsJudgedAlike runs verify, cat and unpack on shards that
// Python's zipfile wrote and packcore/testdata/hostile.py then patched, one
// header field of member a.bin each (encrypted, compressed, sizes, CRC-32 or
// name disagreeing between local header and central directory, a data
// descriptor): verify fails (exit 1) naming the member and the reason
// exactly when cat and unpack refuse the member (exit 3) for that reason,
// and all three pass the intact shards (one with its local sizes in a
// zip64 extra field).
func TestHostileShardsJudgedAlike(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	cases := []struct {
		variant, want, read string
	}{
		{"intact", "", ""},
		{"zip64-local", "", ""},
		{"long-extra", "", ""},
		{"encrypted-local", "encrypted (local header)", ""},
		{"strong-encrypted-local", "encrypted (local header)", ""},
		{"encrypted-central", "encrypted", ""},
		{"method-local", "local header disagrees with the central directory on compression method", ""},
		{"method-central", "not STORED (method 8)", ""},
		{"size-local", "local header records size 199, the central directory 200", ""},
		{"stored-size-central", "stored size 199 differs from size 200", ""},
		{"name-local", "local header name mismatch", ""},
		{"crc-local", "local header records CRC-32", ""},
		{"crc", "CRC mismatch", "CRC-32 mismatch"},
		{"dd-flag-local", "local header defers CRC and sizes to a data descriptor", ""},
		{"stream-dd", "local header defers CRC and sizes to a data descriptor", ""},
	}
	args := []string{filepath.Join("..", "..", "packcore", "testdata", "hostile.py"), root}
	for _, c := range cases {
		args = append(args, c.variant)
	}
	if out, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		t.Fatalf("hostile.py: %v\n%s", err, out)
	}
	for _, c := range cases {
		t.Run(c.variant, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(root, c.variant)
			read := c.read
			if read == "" {
				read = c.want
			}
			v := bp(t, "verify", dir)
			cat := bp(t, "cat", "a.bin", dir)
			un := bp(t, "unpack", dir, filepath.Join(t.TempDir(), "out"))
			if c.want == "" {
				if v.code != 0 || cat.code != 0 || un.code != 0 || cat.stdout != strings.Repeat("payload of member a\n", 10) {
					t.Fatalf("intact shard: verify %d, cat %d, unpack %d:\n%s%s%s", v.code, cat.code, un.code, v.stdout, cat.stderr, un.stderr)
				}
				return
			}
			if v.code != exitFailure || !strings.Contains(v.stdout, "FAIL pack-0000.zip:a.bin: "+c.want) {
				t.Errorf("verify: exit %d, want %d and %q:\n%s%s", v.code, exitFailure, c.want, v.stdout, v.stderr)
			}
			for name, r := range map[string]result{"cat": cat, "unpack": un} {
				if r.code != exitInvalid || !strings.Contains(r.stderr, "a.bin: ") || !strings.Contains(r.stderr, read) {
					t.Errorf("%s: exit %d, want %d and %q:\n%s", name, r.code, exitInvalid, read, r.stderr)
				}
			}
		})
	}
}
