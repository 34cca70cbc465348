package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// fsspecPython returns a python3 that imports fsspec (Debian's
// python3-fsspec is installed for /usr/bin/python3), or skips t.
func fsspecPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import fsspec").Run() == nil {
			return py
		}
	}
	testtool.Missing(t, "no python3 with fsspec (Debian: python3-fsspec)")
	return ""
}

// TestFsspecReadsReferences converts the WebDataset sample and reads every
// reference of the packs through examples/fsspec/packrefs.py, the loader
// pattern README recommends (one fsspec zip filesystem per shard), under
// Debian's python3-fsspec: every blob must come back byte for byte.
func TestFsspecReadsReferences(t *testing.T) {
	t.Parallel()
	py := fsspecPython(t)
	src := filepath.Join(testtool.SharedDir(t), "data", "webdataset", "sample.tgz")
	dst := filepath.Join(t.TempDir(), "out")
	if r := bp(t, "convert-wds", src, dst, "--yes", "--quiet", "--max-members", "40"); r.code != 0 {
		t.Fatalf("convert: %+v", r)
	}
	set, err := packcore.OpenSet(filepath.Join(dst, "media"), packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	want := map[string]string{}
	var refs []string
	for m := range set.Members() {
		b, err := set.Read(m.Key)
		if err != nil {
			t.Fatal(err)
		}
		ref := set.Ref(m)
		sum := sha256.Sum256(b)
		want[ref] = hex.EncodeToString(sum[:]) + " " + strconv.Itoa(len(b))
		refs = append(refs, ref)
	}
	if len(set.Shards()) < 2 {
		t.Fatalf("want several shards, got %v", set.Shards())
	}
	cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "examples", "fsspec", "packrefs.py"), dst)
	cmd.Stdin = strings.NewReader(strings.Join(refs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("packrefs.py: %v\n%s", err, out)
	}
	got := 0
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) != 3 || want[f[2]] != f[0]+" "+f[1] {
			t.Errorf("fsspec read %q, want %q", sc.Text(), want[f[len(f)-1]])
		}
		got++
	}
	if got != len(refs) {
		t.Fatalf("fsspec read %d references, want %d", got, len(refs))
	}
}
