package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyDirectoryNamedLikeAShard: a directory named like a shard
// (media/pack-0005.zip/, holding a file) in a dataset that pack wrote is
// one problem of the pack (exit 1) naming it, and verify goes on: every
// other shard is checked (a flipped payload byte in one of them is found
// too) and the table's references into them resolve. The readers still
// refuse the pack directory (a pack read without one of its shards would
// be read in part).
func TestVerifyDirectoryNamedLikeAShard(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	writeTree(t, src, map[string]string{"f1.txt": "one", "f2.txt": "two", "f3.txt": "three"})
	ds := filepath.Join(root, "ds")
	media := filepath.Join(ds, "media")
	if r := bp(t, "pack", src, media, "--quiet", "--max-members", "1", "--no-manifest"); r.code != 0 {
		t.Fatalf("pack: %+v", r)
	}
	table := `{"r": "zip://f1.txt::media/pack-0000.zip"}` + "\n" + `{"r": "zip://f3.txt::media/pack-0002.zip"}` + "\n"
	writeTree(t, ds, map[string]string{"refs.jsonl": table, "media/pack-0005.zip/inside.txt": "not a shard"})
	// A payload byte of pack-0002.zip's member flipped: still found.
	p := filepath.Join(media, "pack-0002.zip")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[30+len("f3.txt")] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{ds, media} {
		r := bp(t, "verify", arg)
		fails := strings.Count(r.stdout, "FAIL ")
		if r.code != exitFailure || fails != 2 ||
			!strings.Contains(r.stdout, "pack-0005.zip: unreadable (open "+filepath.Join(media, "pack-0005.zip")+": is a directory") ||
			!strings.Contains(r.stdout, "pack-0002.zip:f3.txt: CRC mismatch") {
			t.Errorf("verify %s: exit %d, %d problems:\n%s%s", arg, r.code, fails, r.stdout, r.stderr)
		}
		if arg == ds && !strings.Contains(r.stdout, "1 table, 2 references, 2 problems") {
			t.Errorf("verify %s: references not all checked:\n%s", arg, r.stdout)
		}
	}
	if r := bp(t, "cat", "f1.txt", media); r.code != exitInvalid || !strings.Contains(r.stderr, "a directory") {
		t.Errorf("cat: exit %d:\n%s", r.code, r.stderr)
	}
}
