package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/packcore"
)

// refsIn returns every reference in the tables of a converted dataset:
// parquet tables dumped by arrow-go, Lance tables as lance-inspect prints
// them.
func refsIn(t *testing.T, dst string) []string {
	t.Helper()
	var text strings.Builder
	err := filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && strings.HasSuffix(p, ".lance"):
			r := bp(t, "lance-inspect", p, "--rows", "1000")
			if r.code != exitOK {
				t.Fatalf("lance-inspect %s: %s", p, r.stderr)
			}
			text.WriteString(r.stdout)
			return filepath.SkipDir
		case strings.HasSuffix(p, ".parquet"):
			text.WriteString(tableDump(t, p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`zip://[^"\s]*?::[^"\s]*?pack-[0-9]+\.zip`).FindAllString(text.String(), -1)
}

// TestRefBase converts a WebDataset (GNU tar), a parquet table (DuckDB)
// and a Lance dataset (the Lance library) with --ref-base naming the
// destination by its absolute path: every reference names its shard by
// that path, verify, ls and cat work on the output, and still do on a copy
// moved elsewhere (resolved against the dataset they are given).
func TestRefBase(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wdsSrc := filepath.Join(root, "wds")
	wdsShards(t, wdsSrc, 2, 30, 700)
	sources := []struct {
		name string
		args func(t *testing.T) []string
	}{
		{"convert-wds", func(t *testing.T) []string { return []string{"convert-wds", wdsSrc} }},
		{"convert-parquet", func(t *testing.T) []string {
			return []string{"convert-parquet", filepath.Join(parquetFixtureRoot(t), "plain"), "--column", "jpg"}
		}},
		{"convert-lance", func(t *testing.T) []string {
			return []string{"convert-lance", filepath.Join(lanceFixtures(t), "blob1_2_1.lance")}
		}},
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			args := src.args(t)
			dst := filepath.Join(t.TempDir(), "ds")
			base, _ := filepath.Abs(dst)
			run := append(append([]string{}, args...), dst, "--yes", "--quiet", "--max-members", "16", "--ref-base", base+"/")
			if r := bp(t, run...); r.code != exitOK {
				t.Fatalf("%v: exit %d: %s", run, r.code, r.stderr)
			}
			refs := refsIn(t, dst)
			if len(refs) < 2 {
				t.Fatalf("found %d references", len(refs))
			}
			for _, ref := range refs {
				if _, shard, err := packcore.ParseRef(ref); err != nil || !strings.HasPrefix(shard, base+"/media/pack-") {
					t.Fatalf("reference %q does not name its shard by %s/media", ref, base)
				}
			}
			check := func(t *testing.T, ds string) {
				r := bp(t, "verify", ds)
				if r.code != exitOK || !strings.Contains(r.stdout, "references name the dataset root as "+base+" ") {
					t.Fatalf("verify %s: exit %d:\n%s%s", ds, r.code, r.stdout, r.stderr)
				}
				if r := bp(t, "ls", filepath.Join(ds, "media")); r.code != exitOK || strings.Count(r.stdout, "\n") < len(refs) {
					t.Fatalf("ls: exit %d: %s%s", r.code, r.stdout, r.stderr)
				}
			}
			check(t, dst)
			for _, ref := range refs[:2] {
				key, _, _ := packcore.ParseRef(ref)
				byKey := bp(t, "cat", key, dst)
				byRef := bp(t, "cat", ref) // no DIR: the shard where the reference says
				if byKey.code != exitOK || byRef.code != exitOK || byRef.stdout != byKey.stdout {
					t.Fatalf("cat %s: exit %d (%s), by key exit %d", ref, byRef.code, byRef.stderr, byKey.code)
				}
			}

			moved := filepath.Join(t.TempDir(), "copy")
			if err := os.Rename(dst, moved); err != nil {
				t.Fatal(err)
			}
			check(t, moved)
			for _, ref := range refs[:2] {
				key, _, _ := packcore.ParseRef(ref)
				byKey, byRef := bp(t, "cat", key, moved), bp(t, "cat", ref, moved)
				if byRef.code != exitOK || byRef.stdout != byKey.stdout {
					t.Fatalf("cat %s %s: exit %d: %s", ref, moved, byRef.code, byRef.stderr)
				}
				if r := bp(t, "cat", ref); r.code != exitInvalid || !strings.Contains(r.stderr, base) {
					t.Fatalf("cat %s after the dataset moved: exit %d: %s", ref, r.code, r.stderr)
				}
			}
		})
	}

	t.Run("parts joined by finalize keep the base", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "ds")
		base := "s3://bucket/ds"
		for _, part := range []string{"1/2", "2/2"} {
			if r := bp(t, "convert-wds", wdsSrc, dst, "--yes", "--quiet", "--max-members", "16", "--ref-base", base, "--part", part); r.code != exitOK {
				t.Fatalf("part %s: exit %d: %s", part, r.code, r.stderr)
			}
		}
		if r := bp(t, "finalize", dst, "--quiet"); r.code != exitOK {
			t.Fatalf("finalize: exit %d: %s", r.code, r.stderr)
		}
		refs := refsIn(t, dst)
		if len(refs) != 120 {
			t.Fatalf("%d references, want 120", len(refs))
		}
		for _, ref := range refs {
			if _, shard, _ := packcore.ParseRef(ref); !strings.HasPrefix(shard, base+"/media/pack-") {
				t.Fatalf("joined reference %q", ref)
			}
		}
		if r := bp(t, "verify", dst); r.code != exitOK || !strings.Contains(r.stdout, "as "+base+" ") {
			t.Fatalf("verify: exit %d: %s%s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("refused", func(t *testing.T) {
		for _, base := range []string{"a::b", " /x", "s3://", `C:\ds`, "bad://x://y?z", "other", "data/ds"} {
			r := bp(t, "convert-wds", wdsSrc, filepath.Join(t.TempDir(), "out"), "--yes", "--ref-base", base)
			if r.code != exitUsage || !strings.Contains(r.stderr, "--ref-base") {
				t.Errorf("--ref-base %q: exit %d: %s", base, r.code, r.stderr)
			}
		}
	})
}

// TestRefBaseRelative: a bare relative --ref-base is refused with the
// forms that are taken; a relative one that says so (../ds) is written as
// it is, and verify resolves its references against the dataset it is
// given.
func TestRefBaseRelative(t *testing.T) {
	t.Parallel()
	wdsSrc := filepath.Join(t.TempDir(), "wds")
	wdsShards(t, wdsSrc, 2, 30, 700)
	r := bp(t, "convert-wds", wdsSrc, filepath.Join(t.TempDir(), "out"), "--yes", "--ref-base", "other")
	for _, want := range []string{"--ref-base", "absolute path", "URL", "./ or ../"} {
		if r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("--ref-base other: exit %d, the message does not name %q: %s", r.code, want, r.stderr)
		}
	}
	dst := filepath.Join(t.TempDir(), "ds")
	if r := bp(t, "convert-wds", wdsSrc, dst, "--yes", "--quiet", "--max-members", "16", "--ref-base", "../ds"); r.code != exitOK {
		t.Fatalf("--ref-base ../ds: exit %d: %s", r.code, r.stderr)
	}
	refs := refsIn(t, dst)
	if len(refs) != 120 {
		t.Fatalf("%d references, want 120", len(refs))
	}
	for _, ref := range refs {
		if _, shard, _ := packcore.ParseRef(ref); !strings.HasPrefix(shard, "../ds/media/pack-") {
			t.Fatalf("reference %q", ref)
		}
	}
	// verify resolves them against the dataset it is given, as it does
	// absolute ones.
	if r := bp(t, "verify", dst); r.code != exitOK || !strings.Contains(r.stdout, "as ../ds (--ref-base)") {
		t.Fatalf("verify: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// readRefsPy opens every reference, as written, with fsspec (s3fs for the
// s3:// shard paths) and prints the SHA-256 of each, as JSON.
const readRefsPy = `
import hashlib, json, os, sys
import fsspec
opts = {"key": os.environ["AWS_ACCESS_KEY_ID"], "secret": os.environ["AWS_SECRET_ACCESS_KEY"],
        "client_kwargs": {"endpoint_url": os.environ["AWS_ENDPOINT_URL_S3"], "region_name": "us-east-1"}}
out = {}
for ref in json.loads(sys.argv[1]):
    with fsspec.open(ref, "rb", s3=opts) as f:
        out[ref] = hashlib.sha256(f.read()).hexdigest()
print(json.dumps(out))
`

// TestRefBaseS3 converts a WebDataset with --ref-base s3://data/ds and
// uploads the output there: fsspec with s3fs (the pinned environment)
// opens every reference as the table holds it, byte for byte the local
// member; verify and cat read the dataset in the bucket.
func TestRefBaseS3(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	srv := s3test.Start(t, "data")
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "ds")
	wdsShards(t, src, 2, 20, 900)
	if r := bp(t, "convert-wds", src, dst, "--yes", "--quiet", "--max-members", "16", "--ref-base", "s3://data/ds"); r.code != exitOK {
		t.Fatalf("convert-wds: %s", r.stderr)
	}
	upload(t, srv, dst, "data", "ds")
	refs := refsIn(t, dst)
	set, err := packcore.OpenSet(filepath.Join(dst, "media"), packcore.SetOptions{RefBase: "s3://data/ds/media"})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	arg, _ := json.Marshal(refs)
	cmd := exec.Command(py, "-c", readRefsPy, string(arg))
	cmd.Env = append(cleanAWSEnv(), srv.Env()...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("python: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(refs) < 40 || len(got) != len(refs) {
		t.Fatalf("%d references, fsspec read %d", len(refs), len(got))
	}
	for _, ref := range refs {
		b, err := set.Read(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got[ref] != sha256Hex(b) {
			t.Errorf("fsspec %s: sha256 %s, want %s", ref, got[ref], sha256Hex(b))
		}
	}
	for _, ds := range []string{dst, "s3://data/ds"} {
		if r := bpS3(t, srv.Env(), "verify", ds); r.code != exitOK || !strings.Contains(r.stdout, "as s3://data/ds ") {
			t.Fatalf("verify %s: exit %d: %s%s", ds, r.code, r.stdout, r.stderr)
		}
	}
	key, _, _ := packcore.ParseRef(refs[3])
	byRef, byKey := bpS3(t, srv.Env(), "cat", refs[3]), bp(t, "cat", key, dst)
	if byRef.code != exitOK || byRef.stdout != byKey.stdout || byKey.stdout == "" {
		t.Fatalf("cat %s: exit %d: %s", refs[3], byRef.code, byRef.stderr)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
