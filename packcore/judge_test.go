package packcore

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// hostileVariants are the shards testdata/hostile.py writes, each with the
// reason a reader refuses member a.bin for and Verify reports (read, when
// set, is the reader's wording where it differs), and whether the reason is
// in the central directory (then the reader refuses the whole shard at
// open).
var hostileVariants = []struct {
	name, want, read string
	central          bool
	bothMembers      bool // b.bin has the same defect
}{
	{"intact", "", "", false, false},
	{"zip64-local", "", "", false, false},
	{"long-extra", "", "", false, false},
	{"encrypted-local", "encrypted (local header)", "", false, false},
	{"strong-encrypted-local", "encrypted (local header)", "", false, false},
	{"encrypted-central", "encrypted", "", true, false},
	{"method-local", "local header disagrees with the central directory on compression method", "", false, false},
	{"method-central", "not STORED (method 8)", "", true, false},
	{"size-local", "local header records size 199, the central directory 200", "", false, false},
	{"stored-size-central", "stored size 199 differs from size 200", "", true, false},
	{"name-local", "local header name mismatch", "", false, false},
	{"crc-local", "local header records CRC-32", "", false, false},
	{"crc", "CRC mismatch", "CRC-32 mismatch", false, false},
	{"dd-flag-local", "local header defers CRC and sizes to a data descriptor", "", false, false},
	{"stream-dd", "local header defers CRC and sizes to a data descriptor", "", false, true},
}

// writeHostile runs testdata/hostile.py and returns the directory holding
// one pack directory per variant.
func writeHostile(t *testing.T) string {
	t.Helper()
	py := testtool.Python(t)
	dir := t.TempDir()
	args := []string{"testdata/hostile.py", dir}
	for _, v := range hostileVariants {
		args = append(args, v.name)
	}
	if out, err := exec.Command(py, args...).CombinedOutput(); err != nil {
		t.Fatalf("hostile.py: %v\n%s", err, out)
	}
	return dir
}

// TestHostileHeadersJudgedOnce checks that Verify and the reader judge
// each hostile shard alike: Verify reports a.bin's problem exactly when
// Read, ReadInto, Open and OpenChecked refuse a.bin, with the same reason,
// and b.bin, which is intact, stays readable unless the shard's directory
// is refused.
func TestHostileHeadersJudgedOnce(t *testing.T) {
	t.Parallel()
	root := writeHostile(t)
	for _, v := range hostileVariants {
		t.Run(v.name, func(t *testing.T) {
			dir := filepath.Join(root, v.name)
			rep, err := Verify(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(rep.Problems, "\n")
			if v.want == "" && !rep.OK() || v.want != "" && !strings.Contains(all, "pack-0000.zip:a.bin: "+v.want) {
				t.Errorf("verify problems:\n%s\nwant %q", all, v.want)
			}
			if strings.Contains(all, "b.bin") != v.bothMembers {
				t.Errorf("verify blames the intact member:\n%s", all)
			}
			read := v.read
			if read == "" {
				read = v.want
			}
			set, err := OpenSet(dir, SetOptions{})
			if v.central {
				if err == nil || !strings.Contains(err.Error(), "pack-0000.zip:a.bin: "+read) {
					t.Fatalf("open: %v, want %q", err, read)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			readers := map[string]func() error{
				"Read": func() error { _, err := set.Read("a.bin"); return err },
				"ReadInto": func() error {
					_, err := set.ReadInto("a.bin", make([]byte, 0, 4096))
					return err
				},
				"OpenChecked": func() error {
					r, err := set.OpenChecked("a.bin")
					if err != nil {
						return err
					}
					defer r.Close()
					_, err = io.Copy(io.Discard, r)
					return err
				},
			}
			for name, fn := range readers {
				err := fn()
				switch {
				case v.want == "" && err != nil:
					t.Errorf("%s: %v", name, err)
				case v.want != "" && (err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "pack-0000.zip:a.bin: malformed zip: "+read)):
					t.Errorf("%s: %v, want an ErrFormat with %q", name, err, read)
				}
			}
			if b, err := set.Read("b.bin"); !v.bothMembers && (err != nil || string(b) != "payload of member b\n") {
				t.Errorf("b.bin: %q %v", b, err)
			}
		})
	}
}
