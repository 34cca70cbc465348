package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// irregularTimeout bounds one run: a command that blocks in open(2) on a
// FIFO fails the case when it expires, instead of stalling the test.
const irregularTimeout = 20 * time.Second

// irregularKind puts a file that is not regular at a path: what a user's
// mistake or a hostile dataset may hold where a shard, table or manifest
// belongs. word is how bpconvert names the kind.
type irregularKind struct {
	name, word string
	make       func(t *testing.T, p string)
}

var (
	kindFIFO = irregularKind{"fifo", "a FIFO", func(t *testing.T, p string) {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}}
	kindSocket = irregularKind{"socket", "a socket", func(t *testing.T, p string) {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}}
	kindDevice = irregularKind{"device", "a character device", func(t *testing.T, p string) {
		if err := os.Symlink("/dev/null", p); err != nil {
			t.Fatal(err)
		}
	}}
	kindDir = irregularKind{"directory", "a directory", func(t *testing.T, p string) {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}}
	allKinds  = []irregularKind{kindFIFO, kindSocket, kindDevice, kindDir}
	fileKinds = []irregularKind{kindFIFO, kindSocket, kindDevice}
)

// TestIrregularInputs runs every command that opens a file a user or a
// dataset names (verify, verify --against, ls, cat, unpack, manifest,
// finalize, lance-inspect, convert-lance; the other converters' sources are
// in the bad-input corpus) with a FIFO, a socket, a device or a directory
// in place of one of those files: each must end at once with its exit code
// and a message that names the file and what it is, and never block. The
// sources are written by Python's tarfile and pylance (the Lance test
// data, see lancefmt/testdata) and pyarrow; the datasets from them by
// bpconvert.
func TestIrregularInputs(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "python3", "cp")
	// A short base keeps socket paths under the 108 bytes Linux allows.
	base, err := os.MkdirTemp("", "irr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	fx := filepath.Join(base, "fx")
	irregularFixtures(t, fx)

	cases := []struct {
		name string
		// victim is the file replaced, relative to a fresh copy of fx.
		victim string
		// args are the command line; ROOT is the copy's path.
		args  []string
		code  int
		kinds []irregularKind
	}{
		{"verify: a shard", "packs/pack-0001.zip", []string{"verify", "ROOT/packs"}, exitFailure, fileKinds},
		{"verify: a shard as a directory", "packs/pack-0001.zip", []string{"verify", "ROOT/packs"}, exitFailure, []irregularKind{kindDir}},
		{"verify: a manifest", "packs/pack.manifest.json", []string{"verify", "ROOT/packs"}, exitFailure, allKinds},
		{"verify: a table", "wds/samples.parquet", []string{"verify", "ROOT/wds"}, exitFailure, fileKinds},
		{"verify: a Lance data file", "lance/table.lance/data/DATA", []string{"verify", "ROOT/lance"}, exitFailure, allKinds},
		{"verify --against: a tar shard", "shards/000001.tar", []string{"verify", "ROOT/wds", "--against", "ROOT/shards"}, exitInvalid, fileKinds},
		{"verify --against: a parquet table", "pq/t.parquet", []string{"verify", "ROOT/pqds", "--against", "ROOT/pq"}, exitInvalid, fileKinds},
		{"verify --against: a Lance data file", "src.lance/data/DATA", []string{"verify", "ROOT/lance", "--against", "ROOT/src.lance"}, exitInvalid, allKinds},
		{"ls: a shard", "packs/pack-0001.zip", []string{"ls", "ROOT/packs"}, exitInvalid, allKinds},
		{"ls: the shard named", "packs/pack-0001.zip", []string{"ls", "ROOT/packs/pack-0001.zip"}, exitInvalid, fileKinds},
		{"cat: a shard", "packs/pack-0001.zip", []string{"cat", "f3.bin", "ROOT/packs"}, exitInvalid, allKinds},
		{"unpack: a shard", "packs/pack-0001.zip", []string{"unpack", "ROOT/packs", "ROOT/out"}, exitInvalid, allKinds},
		{"manifest: a shard", "packs/pack-0001.zip", []string{"manifest", "--force", "ROOT/packs"}, exitInvalid, allKinds},
		{"finalize: a part's table", "PART/samples.parquet", []string{"finalize", "ROOT/split"}, exitInvalid, fileKinds},
		{"finalize: a part's shard", "PART/media/pack-0000.zip", []string{"finalize", "ROOT/split"}, exitInvalid, fileKinds},
		{"finalize: a part's manifest", "PART/media/pack.manifest.json", []string{"finalize", "ROOT/split"}, exitInvalid, allKinds},
		{"finalize: a part's record", "PART/.bpconvert.json", []string{"finalize", "ROOT/split"}, exitUsage, allKinds},
		{"convert-lance: a manifest", "src.lance/_versions/MANIFEST", []string{"convert-lance", "--yes", "ROOT/src.lance", "ROOT/out"}, exitInvalid, fileKinds},
		{"convert-lance: a data file", "src.lance/data/DATA", []string{"convert-lance", "--yes", "ROOT/src.lance", "ROOT/out"}, exitInvalid, allKinds},
		// A directory in place of the one manifest leaves none: "no
		// manifest under _versions".
		{"lance-inspect: a manifest", "src.lance/_versions/MANIFEST", []string{"lance-inspect", "ROOT/src.lance"}, exitInvalid, fileKinds},
		{"lance-inspect: a data file", "src.lance/data/DATA", []string{"lance-inspect", "ROOT/src.lance"}, exitInvalid, allKinds},
	}
	n := 0
	for _, c := range cases {
		for _, k := range c.kinds {
			t.Run(c.name+" "+k.name, func(t *testing.T) {
				n++
				root := filepath.Join(base, strconv.Itoa(n))
				if out, err := exec.Command("cp", "-a", fx, root).CombinedOutput(); err != nil {
					t.Fatalf("cp: %v %s", err, out)
				}
				victim := filepath.Join(root, irregularVictim(t, root, c.victim))
				if err := os.Remove(victim); err != nil {
					t.Fatal(err)
				}
				k.make(t, victim)
				args := make([]string, len(c.args))
				for i, a := range c.args {
					args[i] = strings.ReplaceAll(a, "ROOT", root)
				}
				code, out := runIrregular(t, args)
				if code != c.code || !strings.Contains(out, victim) || !strings.Contains(out, k.word) {
					t.Errorf("bpconvert %s: exit %d (want %d), output does not name %s as %s:\n%s", strings.Join(args, " "), code, c.code, victim, k.word, cut(out))
				}
			})
		}
	}
}

// irregularVictim resolves the placeholders of a victim's path in the copy
// root: DATA and MANIFEST name a Lance dataset's first data file and
// manifest, PART the second part of the split run.
func irregularVictim(t *testing.T, root, rel string) string {
	t.Helper()
	rel = strings.Replace(rel, "PART", filepath.Join(".split.bpconvert-parts", "part-0002-of-0002"), 1)
	for ph, pattern := range map[string]string{"DATA": "*.lance", "MANIFEST": "*.manifest"} {
		if dir, ok := strings.CutSuffix(rel, "/"+ph); ok {
			files, _ := filepath.Glob(filepath.Join(root, dir, pattern))
			if len(files) == 0 {
				t.Fatalf("no %s in %s", pattern, dir)
			}
			return filepath.Join(dir, filepath.Base(files[0]))
		}
	}
	return rel
}

// runIrregular runs bpconvert with args under irregularTimeout and returns
// its exit code and its output, stdout then stderr.
func runIrregular(t *testing.T, args []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), irregularTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("bpconvert %s: still running after %v", strings.Join(args, " "), irregularTimeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// irregularFixtures writes under dir: files/ (four files of random bytes)
// packed by bpconvert pack into packs/ (two shards); shards/, two tars
// that Python's tarfile wrote, converted into wds/ and, split in two
// parts, into .split.bpconvert-parts/ (not finalized); src.lance, the
// Lance test data s_blob_2_1.lance (pylance), converted into lance/; pq/,
// a table of a binary column that pyarrow wrote, converted into pqds/.
func irregularFixtures(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{}
	for _, name := range []string{"f1.bin", "f2.bin", "f3.bin", "f4.bin"} {
		files[name] = strings.Repeat(name, 40)
	}
	writeTree(t, filepath.Join(dir, "files"), files)
	testtool.Run(t, "python3", "-c", `
import io, sys, tarfile
for s in range(2):
    with tarfile.open(f"{sys.argv[1]}/{s:06d}.tar", "w") as t:
        for i in range(3):
            for ext, data in (("jpg", bytes([s, i]) * 300), ("cls", b"%d" % i)):
                ti = tarfile.TarInfo(f"{s}{i:04d}.{ext}")
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
`, mkdir(t, filepath.Join(dir, "shards")))
	testtool.Run(t, testtool.Python(t), "-c", `
import sys, pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({"id": [0, 1, 2], "img": [bytes([i]) * 500 for i in range(3)]}), sys.argv[1] + "/t.parquet")
`, mkdir(t, filepath.Join(dir, "pq")))
	lance := filepath.Join("..", "..", "lancefmt", "testdata", "lance", "s_blob_2_1.lance")
	if out, err := exec.Command("cp", "-r", lance, filepath.Join(dir, "src.lance")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	for _, args := range [][]string{
		{"pack", "--max-members", "2", "ROOT/files", "ROOT/packs"},
		{"convert-wds", "--yes", "ROOT/shards", "ROOT/wds"},
		{"convert-wds", "--yes", "--part", "1/2", "ROOT/shards", "ROOT/split"},
		{"convert-wds", "--yes", "--part", "2/2", "ROOT/shards", "ROOT/split"},
		{"convert-lance", "--yes", "ROOT/src.lance", "ROOT/lance"},
		{"convert-parquet", "--yes", "--column", "img", "ROOT/pq", "ROOT/pqds"},
	} {
		for i, a := range args {
			args[i] = strings.ReplaceAll(a, "ROOT", dir)
		}
		if r := bp(t, args...); r.code != exitOK {
			t.Fatalf("bpconvert %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}

// mkdir makes dir and returns it.
func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
