package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestVerifyAgainstWebDataset: verify --against reads WebDataset shards
// (written by GNU tar) with a reader of its own, however the source is
// named (its directory, a brace pattern, a "::" list), and finds every
// payload equal; it then finds a payload byte flipped in a pack member
// that Python's zipfile rewrote with a matching CRC (the pack's manifest
// sees a changed shard; the comparison names the member), and a member
// that Info-ZIP's zip -d removed from the pack, each named by shard and
// member.
func TestVerifyAgainstWebDataset(t *testing.T) {
	t.Parallel()
	testtool.Require(t, "zip")
	root := t.TempDir()
	shards := wdsShards(t, root, 2, 3, 500)
	dst := filepath.Join(t.TempDir(), "out")
	if r := bp(t, append(append([]string{"convert-wds"}, shards...), dst, "--yes", "--quiet")...); r.code != 0 {
		t.Fatalf("convert: %+v", r)
	}
	for _, src := range []string{root, filepath.Join(root, "shard-{000000..000001}.tar"), strings.Join(shards, "::")} {
		r, d := verifyJSON(t, dst, "--against", src)
		if r.code != 0 || d.Against == nil || d.Against.Payloads != 12 || d.Against.Bytes != 6*500+6 || d.Against.Mismatches != 0 {
			t.Fatalf("--against %s: exit %d %+v\n%s", src, r.code, d.Against, r.stderr)
		}
	}

	flipped := filepath.Join(t.TempDir(), "flipped")
	copyTree(t, dst, flipped)
	python(t, flipMember, filepath.Join(flipped, "media", "pack-0000.zip"), "000001.bin")
	r, d := verifyJSON(t, flipped, "--against", root)
	if r.code != 1 || d.Against == nil || d.Against.Mismatches != 1 ||
		!hasProblem(d, shards[0], -1, "", `member "./000001.bin": pack member "000001.bin": differs from the source at byte 0`) {
		t.Fatalf("flipped byte: exit %d %+v %+v", r.code, d.Against, d.Problems)
	}

	missing := filepath.Join(t.TempDir(), "missing")
	copyTree(t, dst, missing)
	if out, err := exec.Command("zip", "-q", "-d", filepath.Join(missing, "media", "pack-0000.zip"), "000004.bin").CombinedOutput(); err != nil {
		t.Fatalf("zip -d: %v %s", err, out)
	}
	r, d = verifyJSON(t, missing, "--against", root)
	if r.code != 1 || d.Against == nil || d.Against.Mismatches != 1 ||
		!hasProblem(d, shards[1], -1, "", `member "./000004.bin": pack member "000004.bin": missing from the pack`) {
		t.Fatalf("missing member: exit %d %+v %+v", r.code, d.Against, d.Problems)
	}
}
