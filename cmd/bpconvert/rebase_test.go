package main

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/filelock"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// refPattern finds references in text and in the raw bytes of JSON and
// uncompressed Arrow files.
var refPattern = regexp.MustCompile(`zip://[^"\s\x00]*?::[^"\s\x00]*?pack-[0-9]+\.zip`)

// refsAll returns the references of every table of a converted dataset:
// refsIn's (parquet and Lance), then those in its JSON files (the LeRobot
// video index) and Arrow files (save_to_disk data), in path order.
func refsAll(t *testing.T, dst string) []string {
	t.Helper()
	refs := refsIn(t, dst)
	err := filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == convert.MediaDir || strings.HasSuffix(p, ".lance")) {
			return filepath.SkipDir
		}
		if d.Name() == convert.RecordName || !(strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".arrow")) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		refs = append(refs, refPattern.FindAllString(string(b), -1)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// rebased returns refs with their shards named under base ("" for
// relative to the root).
func rebased(t *testing.T, refs []string, base string) []string {
	t.Helper()
	out := make([]string, len(refs))
	for i, ref := range refs {
		key, shard, err := packcore.ParseRef(ref)
		if err != nil {
			t.Fatal(err)
		}
		dir := convert.MediaDir
		if base != "" {
			dir = base + "/" + convert.MediaDir
		}
		out[i] = packcore.FormatRef(key, dir+"/"+filepath.Base(shard))
	}
	return out
}

// treeState is what a rebase must leave alone (the pack directory: each
// file's identity, size and time) or change (the tables: their bytes).
type treeState struct {
	packs  map[string]os.FileInfo
	tables map[string]string
}

func stateOf(t *testing.T, dst string) treeState {
	t.Helper()
	s := treeState{packs: map[string]os.FileInfo{}, tables: map[string]string{}}
	err := filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		if strings.HasPrefix(rel, convert.MediaDir+string(filepath.Separator)) {
			fi, err := os.Stat(p)
			s.packs[rel] = fi
			return err
		}
		b, err := os.ReadFile(p)
		s.tables[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// samePacks fails unless the pack directory holds the same files as
// before, not written since (same inode, size and modification time).
func samePacks(t *testing.T, before, after treeState) {
	t.Helper()
	if len(before.packs) != len(after.packs) || len(after.packs) == 0 {
		t.Fatalf("pack directory: %d files, before %d", len(after.packs), len(before.packs))
	}
	for name, fi := range before.packs {
		got, ok := after.packs[name]
		if !ok || !os.SameFile(fi, got) || got.Size() != fi.Size() || !got.ModTime().Equal(fi.ModTime()) {
			t.Fatalf("pack file %s was written or replaced", name)
		}
	}
}

// readElsewhere runs testdata/rebase_read.py (kind wds, hf or lance) on
// dst from a directory that is not its root and checks that every reader
// it uses read every payload as the source holds it.
func readElsewhere(t *testing.T, py, kind, src, dst string, want ...string) {
	t.Helper()
	cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "cmd", "bpconvert", "testdata", "rebase_read.py"), kind, src, dst)
	cmd.Dir, cmd.Env = t.TempDir(), hfEnv(t)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("rebase_read.py %s %s: %v\n%s", kind, dst, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var r struct {
		Readers    []string
		Checked    int
		Mismatches []string
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("rebase_read.py printed %s: %v", out, err)
	}
	if r.Checked < 60 || len(r.Mismatches) > 0 {
		t.Fatalf("rebase_read.py %s %s: %d payloads checked, mismatches %v", kind, dst, r.Checked, r.Mismatches)
	}
	for _, w := range want {
		if !slices.Contains(r.Readers, w) {
			t.Fatalf("rebase_read.py %s %s: readers %v, want %s among them", kind, dst, r.Readers, w)
		}
	}
}

// mediaRefElsewhere runs the LeRobot frames check (MediaRef, and
// PackSet.open handed to FFmpeg's decoder, against the source's camera
// files decoded by the ffmpeg CLI) on dst from another directory.
func mediaRefElsewhere(t *testing.T, py, src, dst string) {
	t.Helper()
	script := filepath.Join(testtool.RepoRoot(t), "convert", "lerobot", "testdata", "mediaref_check.py")
	cmd := exec.Command(py, script, dst, src, "5", "100", "ceil")
	cmd.Dir, cmd.Env = t.TempDir(), hfEnv(t)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("mediaref_check.py: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var r struct {
		Checked, Mismatches int
		Problems            []string
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Checked != 100 || r.Mismatches != 0 || len(r.Problems) > 0 {
		t.Fatalf("mediaref_check.py on %s: %s (%v)", dst, out, err)
	}
}

// readmeSamples writes the README's sample inputs (shards/, hf/,
// data.lance: scripts/readme_data.py with the pinned datasets, pyarrow and
// pylance) into a new directory and returns it.
func readmeSamples(t *testing.T, py string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "scripts", "readme_data.py"))
	cmd.Dir, cmd.Env = dir, hfEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("readme_data.py: %v\n%s", err, out)
	}
	return dir
}

// TestRebase converts each kind of input (WebDataset tars from Python's
// tarfile, a Hugging Face dataset and a save_to_disk one written by
// datasets, LeRobot v3.0 and v2.1 datasets, a Lance table written by pylance) with
// the default, relative references, reads it from another directory
// (DuckDB, PackSet, fsspec, pylance, MediaRef), moves it, and rebases it
// onto its new absolute path: every reference of every table (parquet,
// Arrow, Lance, the video index, the frames table) then names its shard
// under that path and nothing else changed in it, the pack files are the
// very same files (not written), the run record names the base, verify
// (and verify --against the source) passes, and the readers, Hugging Face
// datasets decoding the images included, read every payload from another
// directory. A dry run writes nothing, a second rebase finds nothing to
// do, and rebasing back to "." gives the first references again.
func TestRebase(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	samples := readmeSamples(t, py)
	hfRoot := t.TempDir()
	gen := exec.Command(py, filepath.Join("testdata", "hfwrite.py"), filepath.Join(hfRoot, "src"), filepath.Join(hfRoot, "disk"))
	gen.Env = hfEnv(t)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("hfwrite.py: %v\n%s", err, out)
	}
	hfCols := []string{"--column", "image", "--column", "audio", "--column", "frames", "--column", "thumb"}
	at := func(p string) string { return filepath.Join(samples, p) }
	cases := []struct {
		name, kind, src string
		lerobot         string // a LeRobot fixture, the source when src is ""
		args            []string
		// read checks the output from another directory; abs is true once
		// its references name the root by an absolute path.
		read func(t *testing.T, dst string, abs bool)
	}{
		{name: "webdataset", src: at("shards"), args: []string{"convert-wds"},
			read: func(t *testing.T, dst string, abs bool) {
				readElsewhere(t, py, "wds", at("shards"), dst, "duckdb", "packset", "fsspec")
			}},
		{name: "hugging face", src: at("hf"), args: []string{"convert-parquet"},
			read: func(t *testing.T, dst string, abs bool) {
				want := []string{"duckdb", "packset", "fsspec"}
				if abs {
					want = append(want, "datasets")
				}
				readElsewhere(t, py, "hf", at("hf"), dst, want...)
			}},
		{name: "hugging face all features", src: filepath.Join(hfRoot, "src"), args: append([]string{"convert-parquet"}, hfCols...),
			read: func(t *testing.T, dst string, abs bool) {
				if abs {
					r := hfRead(t, py, filepath.Join(hfRoot, "src"), dst, t.TempDir())
					if r.Error != nil || len(r.Mismatches) > 0 || r.Payloads != 158 || r.Decoded != 39 {
						t.Fatalf("datasets: error %v, mismatches %v, %d payloads, %d decoded", r.Error, r.Mismatches, r.Payloads, r.Decoded)
					}
				}
			}},
		{name: "save_to_disk", src: filepath.Join(hfRoot, "disk"), args: append([]string{"convert-parquet"}, hfCols...),
			read: func(t *testing.T, dst string, abs bool) {
				if abs {
					r := hfRead(t, py, filepath.Join(hfRoot, "disk"), dst, t.TempDir(), "disk")
					if r.Error != nil || len(r.Mismatches) > 0 || r.Payloads != 158 {
						t.Fatalf("datasets: error %v, mismatches %v, %d payloads", r.Error, r.Mismatches, r.Payloads)
					}
				}
			}},
		{name: "lerobot v3.0", lerobot: "v3.0", args: []string{"convert-lerobot"},
			read: func(t *testing.T, dst string, abs bool) {
				mediaRefElsewhere(t, py, filepath.Join(lerobotFixtureRoot(t), "v3.0"), dst)
			}},
		{name: "lerobot v2.1", lerobot: "v2.1", args: []string{"convert-lerobot"},
			read: func(t *testing.T, dst string, abs bool) {
				mediaRefElsewhere(t, py, filepath.Join(lerobotFixtureRoot(t), "v2.1"), dst)
			}},
		{name: "lance", src: at("data.lance"), args: []string{"convert-lance", "--column", "image"},
			read: func(t *testing.T, dst string, abs bool) {
				readElsewhere(t, py, "lance", at("data.lance"), dst, "pylance", "packset", "fsspec")
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := tc.src
			if src == "" {
				src = filepath.Join(lerobotFixtureRoot(t), tc.lerobot)
			}
			rebaseRoundTrip(t, src, tc.args, tc.read)
		})
	}
}

// rebaseRoundTrip converts src with args (the converter and its flags),
// reads the output from another directory, plans a rebase without writing,
// moves the output, rebases it onto its new path and checks what TestRebase
// says, reads it again, rebases it again (nothing to do) and back to ".".
func rebaseRoundTrip(t *testing.T, src string, conv []string, read func(t *testing.T, dst string, abs bool)) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ds")
	args := append(append(append([]string{}, conv...), src, dst), "--yes", "--quiet", "--max-members", "16")
	if r := bp(t, args...); r.code != exitOK {
		t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
	}
	refs := refsAll(t, dst)
	if len(refs) < 10 {
		t.Fatalf("%d references in the tables", len(refs))
	}
	read(t, dst, false)
	before := stateOf(t, dst)

	// A dry run plans and writes nothing.
	r := bp(t, "rebase", dst, "--ref-base", "/elsewhere/ds", "--dry-run", "--json")
	if r.code != exitOK {
		t.Fatalf("rebase --dry-run: exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Plan struct {
			Tables []struct{ Path string }
			To     string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Plan.To != "/elsewhere/ds" || len(doc.Plan.Tables) == 0 {
		t.Fatalf("rebase --dry-run --json printed %s (%v)", r.stdout, err)
	}
	if after := stateOf(t, dst); !maps.Equal(before.tables, after.tables) {
		t.Fatal("rebase --dry-run changed a table")
	}

	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(dst, moved); err != nil {
		t.Fatal(err)
	}
	r = bp(t, "rebase", moved, "--ref-base", moved)
	if r.code != exitOK || !strings.Contains(r.stdout, "will resolve from "+moved+" (zip://KEY::"+moved+"/media/pack-NNNN.zip), in any directory") {
		t.Fatalf("rebase: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	after := stateOf(t, moved)
	samePacks(t, before, after)
	if got, want := refsAll(t, moved), rebased(t, refs, moved); !slices.Equal(got, want) {
		t.Fatalf("after the rebase, %d references:\n%.400q\nwant %d:\n%.400q", len(got), got, len(want), want)
	}
	rec, err := convert.ReadRecord(moved)
	if err != nil || rec.Options[convert.RefBaseOption] != moved {
		t.Fatalf("run record after the rebase: %+v (%v)", rec, err)
	}
	for _, v := range [][]string{{"verify", moved}, {"verify", moved, "--against", src}} {
		if r := bp(t, v...); r.code != exitOK {
			t.Fatalf("%v: exit %d: %s%s", v, r.code, r.stdout, r.stderr)
		}
	}
	read(t, moved, true)

	// Again: nothing to write.
	r = bp(t, "rebase", moved, "--ref-base", moved, "--json")
	if r.code != exitOK || !strings.Contains(r.stdout, `"written":0`) {
		t.Fatalf("second rebase: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if again := stateOf(t, moved); !maps.Equal(after.tables, again.tables) {
		t.Fatal("a second rebase onto the same base changed a table")
	}

	// Back to references relative to the root.
	if r := bp(t, "rebase", moved, "--ref-base", ".", "--quiet"); r.code != exitOK {
		t.Fatalf("rebase --ref-base .: exit %d: %s", r.code, r.stderr)
	}
	if got := refsAll(t, moved); !slices.Equal(got, refs) {
		t.Fatalf("rebased back to the root, %d references:\n%.400q\nwant the converter's %d:\n%.400q", len(got), got, len(refs), refs)
	}
	samePacks(t, before, stateOf(t, moved))
	if r := bp(t, "verify", moved); r.code != exitOK {
		t.Fatalf("verify: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// TestRebaseKilled kills a rebase of a LeRobot output (tables with
// references: the frames table and the video index) at its start, while
// it writes a table (a temporary file exists), between two tables (the
// frames table replaced) and not at all: after every kill, each table
// holds references of one base, old or new, verify passes, and a rerun
// completes the rebase, leaving no temporary file.
func TestRebaseKilled(t *testing.T) {
	t.Parallel()
	dst := filepath.Join(t.TempDir(), "ds")
	if r := bp(t, "convert-lerobot", filepath.Join(lerobotFixtureRoot(t), "v3.0"), dst, "--yes", "--quiet"); r.code != exitOK {
		t.Fatalf("convert-lerobot: exit %d: %s", r.code, r.stderr)
	}
	refs := refsAll(t, dst)
	frames := filepath.Join(dst, "video_frames.parquet")
	writing := func() bool {
		found := false
		filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
			found = found || err == nil && strings.HasPrefix(d.Name(), ".rebase-")
			return nil
		})
		return found
	}
	bases := []string{"/data/a", "s3://bucket/b"}
	mixed := 0
	for i, when := range []string{"at its start", "while it writes a table", "between two tables", "never"} {
		base := bases[i%2]
		first, err := os.Stat(frames)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(binPath, "rebase", dst, "--ref-base", base, "--quiet")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		trigger := map[string]func() bool{
			"at its start":            func() bool { return true },
			"while it writes a table": writing,
			"between two tables": func() bool {
				fi, err := os.Stat(frames)
				return err == nil && !os.SameFile(fi, first)
			},
			"never": func() bool { return false },
		}[when]
	watch:
		for range 100000 { // at most 20 s: the run ends long before
			select {
			case <-done:
				break watch
			default:
			}
			if trigger() {
				cmd.Process.Signal(syscall.SIGKILL)
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		<-done
		if r := bp(t, "verify", dst); r.code != exitOK {
			t.Fatalf("killed %s: verify: exit %d: %s%s", when, r.code, r.stdout, r.stderr)
		}
		seen := map[string]bool{}
		for _, ref := range refsAll(t, dst) {
			_, shard, _ := packcore.ParseRef(ref)
			seen[shard[:strings.LastIndex(shard, "/")]] = true
		}
		if len(seen) > 1 {
			mixed++
		}
		for dir := range seen {
			if dir != bases[0]+"/media" && dir != bases[1]+"/media" && dir != "media" {
				t.Fatalf("killed %s: a reference names %s", when, dir)
			}
		}
		if r := bp(t, "rebase", dst, "--ref-base", base, "--quiet"); r.code != exitOK {
			t.Fatalf("rerun after a kill %s: exit %d: %s", when, r.code, r.stderr)
		}
		if got := refsAll(t, dst); !slices.Equal(got, rebased(t, refs, base)) {
			t.Fatalf("rerun after a kill %s: references %.300q", when, got)
		}
		if writing() {
			t.Errorf("after the rerun following a kill %s: a temporary file is left", when)
		}
	}
	t.Logf("%d of the kills left tables of two bases", mixed)
}

// TestRebaseRefused: a base that cannot resolve (the rules of a
// converter's --ref-base), no --ref-base, a dataset in a bucket, a
// directory no converter wrote and an unjoined part are refused, each with
// its exit code and a message naming the reason, and nothing is written.
func TestRebaseRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wdsSrc := filepath.Join(root, "wds")
	wdsShards(t, wdsSrc, 2, 10, 300)
	dst := filepath.Join(root, "ds")
	if r := bp(t, "convert-wds", wdsSrc, dst, "--yes", "--quiet"); r.code != exitOK {
		t.Fatalf("convert-wds: exit %d: %s", r.code, r.stderr)
	}
	part := filepath.Join(root, "parted")
	if r := bp(t, "convert-wds", wdsSrc, part, "--yes", "--quiet", "--part", "1/2"); r.code != exitOK {
		t.Fatalf("convert-wds --part 1/2: exit %d: %s", r.code, r.stderr)
	}
	partDir := convert.PartDir(part, convert.Part{I: 1, N: 2})
	packDir := filepath.Join(root, "packed")
	if r := bp(t, "pack", wdsSrc, packDir, "--quiet"); r.code != exitOK {
		t.Fatalf("pack: exit %d: %s", r.code, r.stderr)
	}
	plain := filepath.Join(root, "plain")
	writeTree(t, plain, map[string]string{"a.txt": "a"})
	before := stateOf(t, dst)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{dst, "--ref-base", "data/ds"}, exitUsage, "bare relative path"},
		{[]string{dst, "--ref-base", "a::b"}, exitUsage, `"::"`},
		{[]string{dst, "--ref-base", "s3://"}, exitUsage, "names no location"},
		{[]string{dst}, exitUsage, "--ref-base is required"},
		{[]string{"s3://bucket/ds", "--ref-base", "/x"}, exitUsage, "on this machine"},
		{[]string{plain, "--ref-base", "/x"}, exitInvalid, "not a dataset a bpconvert converter wrote"},
		{[]string{packDir, "--ref-base", "/x"}, exitInvalid, "a pack directory holds no table"},
		{[]string{filepath.Join(root, "absent"), "--ref-base", "/x"}, exitInvalid, "absent: no such file"},
	} {
		r := bp(t, append([]string{"rebase"}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("rebase %v: exit %d (want %d): %s", tc.args, r.code, tc.code, r.stderr)
		}
	}
	if r := bp(t, "rebase", partDir, "--ref-base", "/x"); r.code != exitInvalid || !strings.Contains(r.stderr, "finalize") {
		t.Errorf("rebase of part %s: exit %d: %s", partDir, r.code, r.stderr)
	}
	// A rebase already running (its lock held here) refuses a second one.
	lock, err := filelock.LockDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	if r := bp(t, "rebase", dst, "--ref-base", "/x"); r.code != exitFailure || !strings.Contains(r.stderr, "another process is rebasing it") {
		t.Errorf("rebase of a locked dataset: exit %d: %s", r.code, r.stderr)
	}
	lock.Close()
	if after := stateOf(t, dst); !maps.Equal(before.tables, after.tables) {
		t.Fatal("a refused rebase changed a table")
	}
}

// TestPlanSaysWhereReferencesResolve: a converter's plan (text and JSON)
// has a note saying where the output's references resolve from: the
// dataset root by default (and how to make them absolute), or the base
// --ref-base names (and how to follow a move).
func TestPlanSaysWhereReferencesResolve(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "wds")
	wdsShards(t, src, 1, 5, 100)
	for _, c := range []struct {
		base string
		want []string
	}{
		{"", []string{"References resolve from the dataset root, wherever it moves", "bpconvert rebase DST --ref-base /absolute/path/of/DST"}},
		{"/data/ds", []string{"zip://KEY::/data/ds/media/pack-NNNN.zip", "from any directory while the dataset stays at /data/ds", "bpconvert rebase DST --ref-base NEW"}},
		{"s3://bucket/ds", []string{"zip://KEY::s3://bucket/ds/media/pack-NNNN.zip", "once the dataset is at s3://bucket/ds"}},
	} {
		args := []string{"convert-wds", src, filepath.Join(t.TempDir(), "out"), "--dry-run"}
		if c.base != "" {
			args = append(args, "--ref-base", c.base)
		}
		text := bp(t, args...)
		js := bp(t, append(args, "--json")...)
		var p struct{ Notes []string }
		if err := json.Unmarshal([]byte(js.stdout), &p); err != nil || text.code != exitOK {
			t.Fatalf("%v: exit %d, %v: %s", args, text.code, err, text.stderr)
		}
		notes := strings.Join(p.Notes, "\n")
		for _, w := range c.want {
			if !strings.Contains(strings.Join(strings.Fields(text.stdout), " "), w) || !strings.Contains(notes, w) {
				t.Errorf("--ref-base %q: the plan does not say %q:\n%s\nJSON notes %q", c.base, w, text.stdout, p.Notes)
			}
		}
	}
}

// appendRows appends, with pylance, two rows to the Lance table of a
// convert-lance output: a copy of its first row, and one whose image is
// an https:// URI (as --external keep leaves a value stored outside).
const appendRows = `
import sys, lance, pyarrow as pa
d = lance.dataset(sys.argv[1])
t = d.to_table(limit=1)
u = t.set_column(t.schema.get_field_index("image"), "image", pa.array(["https://example.com/x.png"], pa.string()))
lance.write_dataset(pa.concat_tables([t, u]), sys.argv[1], mode="append")
`

// readLance prints, with pylance, a Lance table's versions, rows and image
// column as JSON.
const readLance = `
import sys, json, lance
d = lance.dataset(sys.argv[1])
print(json.dumps({"versions": len(d.versions()), "images": d.to_table(columns=["image"])["image"].to_pylist()}))
`

// TestRebaseLanceVersions: a convert-lance output that pylance appended
// to (a second version, with a value that is no reference) is rebased as
// one version, the latest: the plan says so, every row of the latest
// version is there with its reference rebased, and the URI is kept.
func TestRebaseLanceVersions(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	samples := readmeSamples(t, py)
	dst := filepath.Join(t.TempDir(), "ds")
	if r := bp(t, "convert-lance", "--column", "image", filepath.Join(samples, "data.lance"), dst, "--yes", "--quiet"); r.code != exitOK {
		t.Fatalf("convert-lance: exit %d: %s", r.code, r.stderr)
	}
	table := filepath.Join(dst, "table.lance")
	if out, err := exec.Command(py, "-c", appendRows, table).CombinedOutput(); err != nil {
		t.Fatalf("append: %v\n%s", err, out)
	}
	read := func() (versions int, images []string) {
		out, err := exec.Command(py, "-c", readLance, table).Output()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var doc struct {
			Versions int
			Images   []string
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return doc.Versions, doc.Images
	}
	n, before := read()
	if n != 2 || len(before) != 66 {
		t.Fatalf("after the append: %d versions, %d rows", n, len(before))
	}
	r := bp(t, "rebase", dst, "--ref-base", "/data/ds")
	if r.code != exitOK || !strings.Contains(r.stdout, "table.lance has 2 versions: it is written again as one version, the latest (2)") {
		t.Fatalf("rebase: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	n, after := read()
	if n != 1 || len(after) != len(before) {
		t.Fatalf("after the rebase: %d versions, %d rows", n, len(after))
	}
	want := rebased(t, before[:65], "/data/ds")
	if !slices.Equal(after[:65], want) || after[64] != after[0] || after[65] != "https://example.com/x.png" {
		t.Fatalf("after the rebase: images %.300q", after)
	}
}
