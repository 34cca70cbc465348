package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// verifyDoc is the part of verify's JSON summary the tests read.
type verifyDoc struct {
	Refs    int64 `json:"refs"`
	Members int   `json:"members"`
	Tables  []struct {
		Path   string `json:"path"`
		Format string `json:"format"`
		Refs   int64  `json:"refs"`
	} `json:"tables"`
	Against *struct {
		Payloads    int64 `json:"payloads"`
		Inline      int64 `json:"inline"`
		Bytes       int64 `json:"bytes"`
		Mismatches  int64 `json:"mismatches"`
		NotCompared int64 `json:"not_compared"`
	} `json:"against"`
	Problems []struct {
		Table  string `json:"table"`
		Row    int64  `json:"row"`
		Column string `json:"column"`
		Reason string `json:"reason"`
	} `json:"problems"`
}

// verifyJSON runs verify with --json and parses its summary.
func verifyJSON(t *testing.T, args ...string) (result, verifyDoc) {
	t.Helper()
	return verifyJSONEnv(t, nil, args...)
}

// verifyJSONEnv is verifyJSON with env (an S3 server's, see bpS3) added to
// this process's environment less its AWS settings; nil adds nothing.
func verifyJSONEnv(t *testing.T, env []string, args ...string) (result, verifyDoc) {
	t.Helper()
	r := bpS3(t, env, append([]string{"verify", "--json"}, args...)...)
	var d verifyDoc
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &d); err != nil {
		t.Fatalf("verify JSON: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return r, d
}

// python runs a Python snippet (Debian's python3 and its zipfile).
func python(t *testing.T, script string, args ...string) {
	t.Helper()
	testtool.Require(t, "python3")
	if out, err := exec.Command("python3", append([]string{"-c", script}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
}

// flipMember rewrites a shard with Python's zipfile (STORED, as packs are),
// one member's first byte changed: the pack stays a valid zip whose CRCs
// match, only the payload differs from the source.
const flipMember = `
import sys, zipfile
path, key = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(path) as z:
    items = [(i, z.read(i.filename)) for i in z.infolist()]
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
    for i, b in items:
        if i.filename == key:
            b = bytes([b[0] ^ 0xff]) + b[1:]
        z.writestr(i, b)
`

// firstKey returns the first member of a shard that holds bytes, as ls
// lists it (size, shard, key).
func firstKey(t *testing.T, shard string) string {
	t.Helper()
	r := bp(t, "ls", shard)
	if r.code != 0 {
		t.Fatalf("ls %s: %+v", shard, r)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] != "0" {
			return f[len(f)-1]
		}
	}
	t.Fatalf("ls %s: no member holds bytes:\n%s", shard, r.stdout)
	return ""
}

// TestVerifyDataset converts a dataset with each converter, checks that
// verify passes on the clean result (every reference of every table
// resolved) and, for WebDataset and parquet, that --against proves every
// payload equal to the source; then breaks the result the ways a user
// could (a member removed with Info-ZIP's zip -d, a shard renamed, a
// payload changed) and checks each is reported with table, row and column.
func TestVerifyDataset(t *testing.T) {
	t.Parallel()
	t.Run("webdataset", verifyDatasetWDS)
	t.Run("parquet", verifyDatasetParquet)
	// Hugging Face save_to_disk sources: the Arrow data file beside each
	// table's name is the source (stream format in dict/, file format in
	// filefmt/).
	for _, name := range []string{"dict", "filefmt"} {
		t.Run("save_to_disk "+name, func(t *testing.T) {
			src := filepath.Join(hfDiskFixtures.Dir(t), name)
			dst := filepath.Join(t.TempDir(), "out")
			if r := bp(t, "convert-parquet", src, dst, "--yes", "--quiet"); r.code != 0 {
				t.Fatalf("convert: %+v", r)
			}
			r, d := verifyJSON(t, dst, "--against", src)
			if r.code != 0 || d.Refs == 0 || d.Against == nil || d.Against.Payloads != d.Refs || d.Against.Mismatches != 0 {
				t.Fatalf("clean: exit %d %+v %+v\n%s", r.code, d, d.Against, r.stderr)
			}
			againstFindsFlippedMember(t, dst, src)
		})
	}
	t.Run("lance", verifyDatasetLance)
	t.Run("lerobot", verifyDatasetLeRobot)
}

// verifyDatasetWDS is the WebDataset case of TestVerifyDataset, and what
// verify takes as its root.
func verifyDatasetWDS(t *testing.T) {
	testtool.Require(t, "zip")
	root := t.TempDir()
	shards := wdsShards(t, root, 2, 3, 500)
	dst := filepath.Join(root, "out")
	old := syscall.Umask(0o022)
	r := bp(t, append(append([]string{"convert-wds"}, shards...), dst, "--yes", "--quiet", "--inline", "cls")...)
	syscall.Umask(old)
	if r.code != 0 {
		t.Fatalf("convert: %+v", r)
	}
	// Readable by other users, like every output file.
	if st, err := os.Stat(filepath.Join(dst, "samples.parquet")); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("samples.parquet: %v, %v; want mode 0644 under umask 022", st.Mode(), err)
	}
	r, d := verifyJSON(t, dst, "--against", filepath.Join(root, "shard-{000000..000001}.tar"))
	// 6 samples with a bin reference and an inline cls each: the cls
	// members are compared with the table's text, and are not packed.
	if r.code != 0 || d.Refs != 6 || d.Members != 6 || d.Against == nil || d.Against.Payloads != 12 || d.Against.Inline != 6 ||
		d.Against.Mismatches != 0 || d.Against.Bytes != 6*500+6 {
		t.Fatalf("clean: exit %d %+v %+v\n%s", r.code, d, d.Against, r.stderr)
	}
	if !strings.Contains(r.stderr, "OK: 6 blobs, 3,000 bytes, 1 shard, 1 table, 6 references, 0 problems") {
		t.Errorf("text:\n%s", r.stderr)
	}
	// What verify takes as its root: the dataset, a pack directory or
	// one shard; one table of the dataset is refused, naming the
	// dataset to give instead (it was read as a broken shard).
	for _, c := range []struct {
		root string
		code int
		msg  string
	}{
		{dst, 0, "OK: 6 blobs, 3,000 bytes, 1 shard, 1 table"},
		{filepath.Join(dst, "media"), 0, "OK: 6 blobs, 3,000 bytes, 1 shard, 0 problems"},
		{filepath.Join(dst, "media", "pack-0000.zip"), 0, "OK: 6 blobs, 3,000 bytes, 1 shard, 0 problems"},
		{filepath.Join(dst, "samples.parquet"), exitUsage, "samples.parquet is a table, not a dataset: its references name shards of the dataset that holds it; verify that dataset (bpconvert verify " + dst + ")"},
	} {
		if r := bp(t, "verify", c.root); r.code != c.code || !strings.Contains(r.stdout+r.stderr, c.msg) {
			t.Errorf("verify %s: exit %d, want %d with %q:\n%s%s", c.root, r.code, c.code, c.msg, r.stdout, r.stderr)
		}
	}

	// A member removed from the pack.
	broken := filepath.Join(root, "missing")
	copyTree(t, dst, broken)
	if out, err := exec.Command("zip", "-q", "-d", filepath.Join(broken, "media", "pack-0000.zip"), "000004.bin").CombinedOutput(); err != nil {
		t.Fatalf("zip -d: %v %s", err, out)
	}
	r, d = verifyJSON(t, broken)
	if r.code != 1 || !hasProblem(d, "samples.parquet", 4, "bin", `member "000004.bin" is not in media/pack-0000.zip`) {
		t.Fatalf("missing member: exit %d %+v", r.code, d.Problems)
	}

	// The shard renamed: every reference names a shard that is gone.
	renamed := filepath.Join(root, "renamed")
	copyTree(t, dst, renamed)
	os.Rename(filepath.Join(renamed, "media", "pack-0000.zip"), filepath.Join(renamed, "media", "pack-0001.zip"))
	r, d = verifyJSON(t, renamed)
	if r.code != 1 || !hasProblem(d, "samples.parquet", 0, "bin", "shard media/pack-0000.zip does not exist") {
		t.Fatalf("renamed shard: exit %d %+v", r.code, d.Problems)
	}

	// A payload changed in the source after the conversion.
	python(t, `
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
i = b.index(b"./000001.bin") + 512   # the member's first payload byte
b[i] ^= 0xff
open(p, "wb").write(b)
`, shards[0])
	r, d = verifyJSON(t, dst, "--against", filepath.Join(root, "shard-{000000..000001}.tar"))
	if r.code != 1 || d.Against == nil || d.Against.Mismatches != 1 || !hasProblem(d, shards[0], -1, "", `"000001.bin": differs from the source at byte 0`) {
		t.Fatalf("changed source: exit %d %+v %+v", r.code, d.Against, d.Problems)
	}
	// An inline field changed in the source.
	python(t, `
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
i = b.index(b"./000005.cls") + 512
b[i] = ord("9")
open(p, "wb").write(b)
`, shards[1])
	r, d = verifyJSON(t, dst, "--against", filepath.Join(root, "shard-{000000..000001}.tar"))
	if r.code != 1 || d.Against.Mismatches != 2 || !hasProblem(d, shards[1], -1, "", `inline field "cls" of sample "000005" differs from the source`) {
		t.Fatalf("changed inline field: exit %d %+v %+v", r.code, d.Against, d.Problems)
	}
}

// verifyDatasetParquet is the parquet case of TestVerifyDataset.
func verifyDatasetParquet(t *testing.T) {
	src := filepath.Join(parquetFixtureRoot(t), "hf")
	dst := filepath.Join(t.TempDir(), "out")
	if r := bp(t, "convert-parquet", src, dst, "--yes", "--quiet"); r.code != 0 {
		t.Fatalf("convert: %+v", r)
	}
	r, d := verifyJSON(t, dst, "--against", src)
	if r.code != 0 || d.Refs == 0 || d.Against == nil || d.Against.Payloads == 0 || d.Against.Mismatches != 0 {
		t.Fatalf("clean: exit %d %+v %+v\n%s", r.code, d, d.Against, r.stderr)
	}
	// Every non-null payload of the source is one reference.
	if d.Against.Payloads != d.Refs || int64(d.Members) != d.Refs {
		t.Errorf("%d payloads compared, %d references, %d members", d.Against.Payloads, d.Refs, d.Members)
	}
	t.Logf("%d payloads, %d bytes compared", d.Against.Payloads, d.Against.Bytes)

	againstFindsFlippedMember(t, dst, src)
}

// verifyDatasetLance is the Lance case of TestVerifyDataset.
func verifyDatasetLance(t *testing.T) {
	testtool.Require(t, "zip")
	dst := filepath.Join(t.TempDir(), "out")
	src := filepath.Join(lanceFixtures(t), "blob1_2_1.lance")
	if r := bp(t, "convert-lance", src, dst, "--yes", "--quiet"); r.code != 0 {
		t.Fatalf("convert: %+v", r)
	}
	r, d := verifyJSON(t, dst, "--against", src)
	if r.code != 0 || len(d.Tables) != 1 || d.Tables[0].Format != "lance" || d.Refs == 0 ||
		d.Against == nil || d.Against.Payloads != d.Refs || d.Against.Mismatches != 0 {
		t.Fatalf("clean: exit %d %+v %+v\n%s", r.code, d, d.Against, r.stderr)
	}
	shard := filepath.Join(dst, "media", "pack-0000.zip")
	key := firstKey(t, shard)
	python(t, flipMember, shard, key)
	r, d = verifyJSON(t, dst, "--against", src)
	if r.code != 1 || d.Against == nil || d.Against.Mismatches == 0 {
		t.Fatalf("changed member: exit %d %+v %+v", r.code, d.Against, d.Problems)
	}
	changed := false
	for _, p := range d.Problems {
		if p.Table == "table.lance" && p.Row >= 0 && p.Column != "" && strings.Contains(p.Reason, "differs from the source at byte 0") {
			changed = true
		}
	}
	if !changed {
		t.Fatalf("no problem names the changed payload: %+v", d.Problems)
	}
	if out, err := exec.Command("zip", "-q", "-d", shard, key).CombinedOutput(); err != nil {
		t.Fatalf("zip -d: %v %s", err, out)
	}
	r, d = verifyJSON(t, dst)
	found := false
	for _, p := range d.Problems {
		if p.Table == "table.lance" && p.Row >= 0 && p.Column != "" && strings.Contains(p.Reason, "is not in media/pack-0000.zip") {
			found = true
		}
	}
	if r.code != 1 || !found {
		t.Fatalf("missing member: exit %d %+v", r.code, d.Problems)
	}
}

// verifyDatasetLeRobot is the LeRobot case of TestVerifyDataset, with the
// frames extracted from its tables.
func verifyDatasetLeRobot(t *testing.T) {
	if testing.Short() {
		t.Skip("converts videos; skipped with -short")
	}
	dst := filepath.Join(t.TempDir(), "out")
	src := filepath.Join(lerobotFixtureRoot(t), "v3.0")
	if r := bp(t, "convert-lerobot", src, dst, "--yes", "--quiet"); r.code != 0 {
		t.Fatalf("convert: %+v", r)
	}
	r, d := verifyJSON(t, dst, "--against", src)
	// The wrist camera is one file packed whole, compared byte for
	// byte; the top camera's 6 episode containers are cut from it.
	if d.Against == nil || d.Against.Payloads != 1 || d.Against.NotCompared != 6 || d.Against.Mismatches != 0 {
		t.Fatalf("against: exit %d %+v %+v\n%s", r.code, d.Against, d.Problems, r.stderr)
	}
	// Frames extracted from the tables are compared row by row.
	isrc := filepath.Join(lerobotFixtureRoot(t), "v2.1-images")
	idst := filepath.Join(t.TempDir(), "images")
	if r := bp(t, "convert-lerobot", isrc, idst, "--yes", "--quiet"); r.code != 0 {
		t.Fatalf("convert: %+v", r)
	}
	ir, id := verifyJSON(t, idst, "--against", isrc)
	if ir.code != 0 || id.Against == nil || id.Against.Payloads == 0 || id.Against.Payloads != id.Refs-countIndexRefs(id) || id.Against.Mismatches != 0 {
		t.Fatalf("frames against: exit %d %+v %+v\n%s", ir.code, id.Against, id.Problems, ir.stderr)
	}
	idx := int64(-1)
	for _, tb := range d.Tables {
		if tb.Path == "video_index.json" {
			idx = tb.Refs
		}
	}
	// 6 episodes x 2 cameras.
	if r.code != 0 || idx != 12 {
		t.Fatalf("clean: exit %d, video_index.json refs %d, %+v\n%s", r.code, idx, d, r.stderr)
	}
	// info.json says where the videos went; a loader that formats
	// video_path meets a directory named for the index.
	b, err := os.ReadFile(filepath.Join(dst, "meta", "info.json"))
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		VideoPath string `json:"video_path"`
		Bpconvert struct {
			VideoIndex      string `json:"video_index"`
			SourceVideoPath string `json:"source_video_path"`
		} `json:"bpconvert"`
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.VideoPath, "videos-are-packed-see-video_index.json/") || info.Bpconvert.VideoIndex != "video_index.json" ||
		!strings.HasPrefix(info.Bpconvert.SourceVideoPath, "videos/") {
		t.Fatalf("meta/info.json: %+v", info)
	}
}

// TestVerifyLeRobotLance converts the Lance-stored twin of the LeRobot
// v3.0 fixture (fixtures/lance14/lerobot.py, pylance 14.0.3) and checks
// that verify --against the twin compares the camera file packed whole with
// its blob in videos.lance, and finds a changed byte in it and the member
// missing once Info-ZIP's zip -d removed it from the pack.
func TestVerifyLeRobotLance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("converts videos; skipped with -short")
	}
	src := filepath.Join(t.TempDir(), "twin")
	testtool.LeRobotLance(t, filepath.Join(lerobotFixtureRoot(t), "v3.0"), src)
	dst := filepath.Join(t.TempDir(), "out")
	if r := bp(t, "convert-lerobot", src, dst, "--yes", "--quiet"); r.code != 0 {
		t.Fatalf("convert: %+v", r)
	}
	r, d := verifyJSON(t, dst, "--against", src)
	if r.code != 0 || countIndexRefs(d) != 12 || d.Against == nil || d.Against.Payloads != 1 || d.Against.Bytes == 0 || d.Against.NotCompared != 6 || d.Against.Mismatches != 0 {
		t.Fatalf("clean: exit %d %+v %+v\n%s", r.code, d.Against, d.Problems, r.stderr)
	}
	python(t, flipMember, filepath.Join(dst, "media", "pack-0000.zip"), "videos/observation.images.wrist/chunk-000/file-000.mp4")
	r, d = verifyJSON(t, dst, "--against", src)
	if r.code != 1 || d.Against == nil || d.Against.Mismatches != 1 {
		t.Fatalf("changed member: exit %d %+v %+v", r.code, d.Against, d.Problems)
	}
	found := false
	for _, p := range d.Problems {
		if p.Table == "video_index.json" && p.Row >= 0 && strings.Contains(p.Reason, "differs from the source at byte 0") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no problem names the changed camera file: %+v", d.Problems)
	}
	testtool.Require(t, "zip")
	if out, err := exec.Command("zip", "-q", "-d", filepath.Join(dst, "media", "pack-0000.zip"), "videos/observation.images.wrist/chunk-000/file-000.mp4").CombinedOutput(); err != nil {
		t.Fatalf("zip -d: %v %s", err, out)
	}
	r, d = verifyJSON(t, dst, "--against", src)
	found = false
	for _, p := range d.Problems {
		if p.Table == "video_index.json" && p.Row >= 0 && strings.Contains(p.Reason, "missing from the pack") {
			found = true
		}
	}
	if r.code != 1 || d.Against == nil || d.Against.Mismatches != 1 || d.Against.Payloads != 1 || !found {
		t.Fatalf("removed member: exit %d %+v %+v", r.code, d.Against, d.Problems)
	}
}

// hasProblem reports whether a problem has the table, row, column and a
// reason containing text.
func hasProblem(d verifyDoc, table string, row int64, column, text string) bool {
	for _, p := range d.Problems {
		if p.Table == table && p.Row == row && p.Column == column && strings.Contains(p.Reason, text) {
			return true
		}
	}
	return false
}

// againstFindsFlippedMember flips the first byte of the first member of
// dst's first shard and checks that verify --against src finds exactly one
// mismatch, naming its table, row and column (exit 1).
func againstFindsFlippedMember(t *testing.T, dst, src string) {
	t.Helper()
	shard := filepath.Join(dst, "media", "pack-0000.zip")
	python(t, flipMember, shard, firstKey(t, shard))
	r, d := verifyJSON(t, dst, "--against", src)
	if r.code != 1 || d.Against == nil || d.Against.Mismatches != 1 {
		t.Fatalf("changed member: exit %d %+v %+v", r.code, d.Against, d.Problems)
	}
	for _, p := range d.Problems {
		if strings.Contains(p.Reason, "differs from the source at byte 0") && p.Table != "" && p.Row >= 0 && p.Column != "" {
			return
		}
	}
	t.Fatalf("no problem naming table, row and column: %+v", d.Problems)
}

// copyTree copies a directory with cp -a.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// countIndexRefs counts the references of video_index.json.
func countIndexRefs(d verifyDoc) int64 {
	for _, tb := range d.Tables {
		if tb.Path == "video_index.json" {
			return tb.Refs
		}
	}
	return 0
}
