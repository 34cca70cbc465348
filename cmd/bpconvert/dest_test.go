package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestDestParentIsFile: every command that creates a DST refuses one whose
// path goes through a file with a usage error (exit 2) that names the
// destination and the file, before any work, and writes nothing; each is
// given a real source so that only DST is wrong.
func TestDestParentIsFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := filepath.Join(root, "files")
	if err := os.MkdirAll(filepath.Join(files, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(files, "a", "x.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	pack := filepath.Join(root, "pack")
	if r := bp(t, "pack", files, pack, "--quiet"); r.code != exitOK {
		t.Fatalf("pack: %+v", r)
	}
	wds := filepath.Join(testtool.SharedDir(t), "data", "webdataset", "sample.tgz")
	plain := filepath.Join(parquetFixtureRoot(t), "plain")
	lanceDS := filepath.Join(lanceFixtures(t), "blob1_2_1.lance")
	lerobot := filepath.Join(lerobotFixtureRoot(t), "v3.0")

	file := filepath.Join(root, "afile")
	if err := os.WriteFile(file, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		command string
		args    []string // SRC and flags; DST goes after SRC
		dst     string
	}{
		{"pack", []string{files}, "afile/out"},
		{"unpack", []string{pack}, "afile/out"},
		{"convert-wds", []string{wds, "--yes"}, "afile/out"},
		{"convert-parquet", []string{plain, "--yes", "--column", "jpg"}, "afile/out"},
		{"convert-lance", []string{lanceDS, "--yes"}, "afile/deeper/out"},
		{"convert-lerobot", []string{lerobot, "--yes"}, "afile/out"},
		{"convert-wds", []string{wds, "--dry-run"}, "afile/out"},
	} {
		t.Run(tc.command+"/"+tc.dst, func(t *testing.T) {
			dst := filepath.Join(root, filepath.FromSlash(tc.dst))
			args := append([]string{tc.command, tc.args[0], dst}, tc.args[1:]...)
			r := bp(t, args...)
			want := tc.command + ": destination " + dst + ": " + file + " is a file, not a directory"
			if r.code != exitUsage || !strings.Contains(r.stderr, want) {
				t.Fatalf("exit %d, want %d; stderr lacks %q:\n%s", r.code, exitUsage, want, r.stderr)
			}
			if st, err := os.Stat(file); err != nil || !st.Mode().IsRegular() || st.Size() != int64(len("not a directory")) {
				t.Fatalf("the file in the way changed: %v %v", st, err)
			}
			if entries, _ := os.ReadDir(root); len(entries) != 3 {
				t.Fatalf("something was written beside the file: %v", entries)
			}
		})
	}
}

// TestUnpackIntoBucketRefused: unpack writes files into a directory on this
// machine, so a DST in object storage is a usage error (exit 2) that names
// it, and nothing is written, not even a local directory named after it.
func TestUnpackIntoBucketRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	files := filepath.Join(root, "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(files, "x.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	pack := filepath.Join(root, "pack")
	if r := bp(t, "pack", files, pack, "--quiet"); r.code != exitOK {
		t.Fatalf("pack: %+v", r)
	}
	work := t.TempDir()
	cmd := exec.Command(binPath, "unpack", pack, "s3://bucket/out")
	cmd.Dir = work
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(stderr.String(), "unpack: s3://bucket/out: unpack writes files into a directory on this machine") {
		t.Fatalf("unpack into a bucket: %v, want exit %d; stderr:\n%s", err, exitUsage, stderr.String())
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Fatalf("unpack wrote into its working directory: %v", entries)
	}
}
