package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestVerifyBlobpack: datasets that blobpack 0.2.0 converted (parquet
// tables written by pyarrow, a Lance dataset with a binary and a blob
// column written by pylance; fixtures/blobpack/gen.py) pass verify
// --against their sources, and fail (exit 1, naming table, row, column and
// reference) against a copy of the source with one payload byte flipped,
// and when one byte of a packed payload is flipped. Packs alone (blobpack's
// pack and convert-wds, bpconvert's pack) are compared with their source
// tree or tars by name, both ways: a flipped byte, a member the source
// lacks and a source file the packs lack each fail.
func TestVerifyBlobpack(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	root := t.TempDir()
	cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "fixtures", "blobpack", "gen.py"), root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen.py: %v\n%s", err, out)
	}
	at := func(p string) string { return filepath.Join(root, p) }
	for _, tc := range []struct {
		name, dst, src string
		code           int
		want           string
	}{
		{"parquet", "out-pq", "pq", exitOK, "against " + at("pq") + " (parquet, converted by blobpack 0.2.0): 18 payloads compared"},
		{"parquet, a flipped byte", "out-pq", "pq-flipped", exitFailure, "FAIL tables/a.parquet: row 1: column img: zip://000000/0000/000000000001::media/pack-0000.zip: differs from the source at byte 0"},
		{"parquet, one table of two", "out-pq", "pq/a.parquet", exitInvalid, "a single table, but blobpack converted 2 tables"},
		{"lance", "out-lance", "src.lance", exitOK, "(lance, converted by blobpack 0.2.0): 13 payloads compared"},
		{"lance, a flipped byte", "out-lance", "flipped.lance", exitFailure, "FAIL table.lance: row 5: column video: zip://video/000000000005.bin::media/pack-0000.zip: differs from the source at byte"},
		{"pack", "out-pack", "tree", exitOK, "against " + at("tree") + " (directory (packed by name)): 5 payloads compared, 1,616 bytes"},
		{"pack, a flipped byte", "out-pack", "tree-flipped", exitFailure, `file "sub/b.bin": pack member "sub/b.bin": differs from the source at byte 500`},
		{"pack, a file fewer", "out-pack", "tree-less", exitFailure, `pack member "sub/deep/c.txt": no file of the source has its name (1 of the 5 members of ` + at("out-pack") + ` have none)`},
		{"convert-wds", "out-wds", "wds/s-000000.tar", exitOK, "(webdataset (packed by member name)): 6 payloads compared"},
		{"convert-wds --shard-prefix", "out-wds-prefix", "wds", exitOK, "(webdataset (packed by member name)): 12 payloads compared"},
		{"convert-wds, a shard more", "out-wds", "wds", exitFailure, `FAIL ` + at("wds/s-000001.tar") + `: member "000000.jpg": pack member "000000.jpg": differs from the source at byte 0`},
		{"packs alone, another source", "out-lance/media", "src.lance", exitFailure, "missing from the pack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bp(t, "verify", at(tc.dst), "--against", at(tc.src))
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Fatalf("exit %d, want %d; output lacks %q:\n%s%s", r.code, tc.code, tc.want, r.stdout, r.stderr)
			}
		})
	}
	t.Run("bpconvert pack", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "packed")
		if r := bp(t, "pack", at("tree"), dst); r.code != exitOK {
			t.Fatalf("pack: exit %d\n%s", r.code, r.stderr)
		}
		for _, tc := range []struct {
			src  string
			code int
			want string
		}{
			{"tree", exitOK, "5 payloads compared, 1,616 bytes"},
			{"out-pack", exitFailure, `file "pack-0000.zip": pack member "pack-0000.zip": missing from the pack`},
		} {
			r := bp(t, "verify", dst, "--against", at(tc.src))
			if r.code != tc.code || !strings.Contains(r.stdout, tc.want) {
				t.Fatalf("against %s: exit %d, want %d; output lacks %q:\n%s%s", tc.src, r.code, tc.code, tc.want, r.stdout, r.stderr)
			}
		}
	})
	t.Run("lance note", func(t *testing.T) {
		r := bp(t, "verify", at("out-lance"), "--against", at("src.lance"))
		if want := "note: blobpack records no source version: compared with version 1 of " + at("src.lance"); !strings.Contains(r.stdout, want) {
			t.Fatalf("output lacks %q:\n%s", want, r.stdout)
		}
	})
	t.Run("a flipped byte in a pack", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "out-pq")
		testtool.CopyTree(t, at("out-pq"), dst)
		shard := filepath.Join(dst, "media", "pack-0000.zip")
		b, err := os.ReadFile(shard)
		if err != nil {
			t.Fatal(err)
		}
		// The first member's payload follows its local header (30 bytes and
		// the 24-byte name 000000/0000/000000000000).
		b[30+24] ^= 0x01
		if err := os.WriteFile(shard, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r := bp(t, "verify", dst, "--against", at("pq"))
		if r.code != exitFailure || !strings.Contains(r.stdout, "000000/0000/000000000000") {
			t.Fatalf("exit %d, want 1 naming the member:\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
}

// TestVerifyHelpMatchesReadme: the source kinds `help verify` lists for
// --against are the ones the documentation's verify section lists.
func TestVerifyHelpMatchesReadme(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(testtool.RepoRoot(t), "docs", "commands.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(readme)
	i := strings.Index(sec, "## Verifying a converted dataset")
	if i < 0 {
		t.Fatal("docs/commands.md has no verify section")
	}
	sec = sec[i:]
	sec = sec[:strings.Index(sec[3:], "\n## ")+3]
	r := bp(t, "help", "verify")
	help := strings.Join(strings.Fields(r.stdout), " ")
	sec = strings.Join(strings.Fields(sec), " ")
	m := regexp.MustCompile(`re-reads the source \(([^)]*)\)`).FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("the verify section of docs/commands.md does not list the source kinds")
	}
	for _, kind := range []string{"WebDataset shards", "parquet", "Hugging Face", "Lance", "LeRobot", "blobpack 0.2.0"} {
		if !strings.Contains(m[1], kind) || !strings.Contains(help, kind) {
			t.Errorf("%q: in README's list %v, in help verify %v", kind, strings.Contains(m[1], kind), strings.Contains(help, kind))
		}
	}
}
