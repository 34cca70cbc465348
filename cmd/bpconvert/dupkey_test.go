package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// dupKeyPack writes, with blobpack 0.2.0's PackWriter, two packs that both
// hold same.bin (different bytes), moves the second's shard into the
// first's directory as pack-0001.zip (PackWriter writes no manifest),
// adds refs.jsonl with a full reference into each shard, and reads the pack
// back with blobpack's PackSet. It returns the dataset root and what
// PackSet answered for each reference and for the bare key.
const dupKeyPack = `
import json, os, sys
import blobpack
root = sys.argv[1]
media = os.path.join(root, "media")
with blobpack.PackWriter(media) as w:
    w.add("a.bin", b"a")
    w.add("same.bin", b"first")
with blobpack.PackWriter(os.path.join(root, "other", "media")) as w:
    w.add("same.bin", b"second")
    w.add("b.bin", b"b")
os.rename(os.path.join(root, "other", "media", "pack-0000.zip"), os.path.join(media, "pack-0001.zip"))
refs = ["zip://same.bin::media/pack-0000.zip", "zip://same.bin::media/pack-0001.zip"]
with open(os.path.join(root, "refs.jsonl"), "w") as f:
    for r in refs:
        f.write(json.dumps({"ref": r}) + "\n")
ps = blobpack.PackSet(media)
out = {r: ps.read(r).decode() for r in refs}
try:
    ps.read("same.bin")
    out["same.bin"] = "read"
except blobpack.BlobPackError as e:
    out["same.bin"] = "refused: " + str(e)
print(json.dumps(out))
`

// TestDuplicateKeyPack: in a pack where two shards hold the same key, cat
// reads a full reference from the shard it names, as blobpack's PackSet
// does, and refuses the bare key as ambiguous (exit 3), as PackSet does;
// unpack refuses the pack (two files of one name); ls lists both members;
// verify fails the pack for the duplicate key (exit 1, once) while the
// references of its table resolve, each in the shard it names.
func TestDuplicateKeyPack(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	out, err := exec.Command(py, "-c", dupKeyPack, root).Output()
	if err != nil {
		t.Fatalf("blobpack: %v", err)
	}
	var packset map[string]string
	if err := json.Unmarshal(out, &packset); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for ref, want := range map[string]string{
		"zip://same.bin::media/pack-0000.zip": "first",
		"zip://same.bin::media/pack-0001.zip": "second",
	} {
		if packset[ref] != want {
			t.Fatalf("PackSet read %s as %q, want %q", ref, packset[ref], want)
		}
		r := bp(t, "cat", ref, root)
		if r.code != 0 || r.stdout != packset[ref] {
			t.Errorf("cat %s: exit %d, %q; PackSet reads %q:\n%s", ref, r.code, r.stdout, packset[ref], r.stderr)
		}
	}
	if !strings.HasPrefix(packset["same.bin"], "refused: duplicate key") {
		t.Fatalf("PackSet on the bare key: %s", packset["same.bin"])
	}
	media := filepath.Join(root, "media")
	if r := bp(t, "cat", "same.bin", media); r.code != exitInvalid || !strings.Contains(r.stderr, `duplicate key: "same.bin" is in pack-0000.zip and pack-0001.zip`) {
		t.Errorf("cat of the bare key: exit %d:\n%s", r.code, r.stderr)
	}
	if r := bp(t, "cat", "a.bin", media); r.code != 0 || r.stdout != "a" {
		t.Errorf("cat of a unique key: exit %d, %q:\n%s", r.code, r.stdout, r.stderr)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if r := bp(t, "unpack", media, dst); r.code != exitInvalid || !strings.Contains(r.stderr, "duplicate key") {
		t.Errorf("unpack: exit %d:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Errorf("unpack wrote %s: %v", dst, err)
	}
	if r := bp(t, "ls", media); r.code != 0 || strings.Count(r.stdout, "same.bin") != 2 {
		t.Errorf("ls: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := bp(t, "verify", root)
	if r.code != exitFailure || strings.Count(r.stdout, "FAIL ") != 1 ||
		!strings.Contains(r.stdout, "FAIL media/pack-0001.zip:same.bin: duplicate key (also in pack-0000.zip)") ||
		!strings.Contains(r.stdout, "1 table, 2 references, 1 problem") {
		t.Errorf("verify: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
