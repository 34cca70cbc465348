package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/stage"
)

// growLance runs one step of fixtures/lance14/grow.py (pylance 14.0.3) on
// the dataset at dir and returns its latest version.
func growLance(t *testing.T, py, dir, kind, step string) uint64 {
	t.Helper()
	out, err := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "fixtures", "lance14", "grow.py"), dir, kind, step).Output()
	if err != nil {
		t.Fatalf("grow.py %s %s: %v", kind, step, err)
	}
	var doc struct {
		Version uint64 `json:"version"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("grow.py: %v: %s", err, out)
	}
	return doc.Version
}

// checkLance compares, with pylance 14.0.3 (fixtures/lance14/check.py),
// the latest version of dst's table with version v of src, row for row and
// payload for payload through the references, and returns the values
// compared.
func checkLance(t *testing.T, py, src string, v uint64, dst, column string) int {
	t.Helper()
	opt, _ := json.Marshal(map[string]any{"extracted": []string{column}})
	cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "fixtures", "lance14", "check.py"), src, strconv.FormatUint(v, 10), dst, string(opt))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check.py: %v\n%s", err, stderr.String())
	}
	var got struct {
		Rows     int      `json:"rows"`
		Compared int      `json:"compared"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("check.py output %q: %v", out, err)
	}
	if len(got.Problems) > 0 {
		t.Fatalf("pylance reads the output's latest version unlike version %d of the source: %v", v, got.Problems)
	}
	return got.Compared
}

// hideEntries moves the entries of dir named in names aside and returns
// what puts them back: an append that opened one of them would fail.
func hideEntries(t *testing.T, dir string, names []string) func() {
	t.Helper()
	side := t.TempDir()
	for _, n := range names {
		if err := os.Rename(filepath.Join(dir, n), filepath.Join(side, n)); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		for _, n := range names {
			if err := os.Rename(filepath.Join(side, n), filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func entryNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestLanceAppend converts a dataset pylance 14.0.3 wrote, lets pylance
// append rows to it twice and runs convert-lance --append after each:
// pylance reads the output's latest version as the source's latest, row
// for row and payload for payload; verify --against passes; the first
// commit's shards and every committed file of the table stay byte for
// byte; the append opens no data file of the converted fragments (they are
// moved away while it runs). A run with nothing new is already done; rows
// deleted by pylance are followed through Lance's deletion files;
// compaction (fragments removed) is refused naming the fragment unless
// --allow-removed.
func TestLanceAppend(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	for _, kind := range []string{"binary", "blob2"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			column := map[string]string{"binary": "img", "blob2": "blob"}[kind]
			root := t.TempDir()
			src, dst := filepath.Join(root, "src.lance"), filepath.Join(root, "out")
			growLance(t, py, src, kind, "0")
			args := []string{"convert-lance", src, dst, "--column", column, "--yes", "--json", "--max-members", "4"}
			if r := bp(t, args...); r.code != exitOK {
				t.Fatalf("first conversion: exit %d: %s", r.code, r.stderr)
			}
			first := shardSums(t, filepath.Join(dst, "media"))
			for i, step := range []string{"1", "2"} {
				table := testtool.FileSums(t, filepath.Join(dst, "table.lance"))
				old := entryNames(t, filepath.Join(src, "data"))
				v := growLance(t, py, src, kind, step)
				restore := hideEntries(t, filepath.Join(src, "data"), old)
				dry := bp(t, append(args, "--append", "--dry-run")...)
				r := bp(t, append(args, "--append")...)
				restore()
				if r.code != exitOK || dry.code != exitOK {
					t.Fatalf("append of step %s: exit %d (dry run %d): %s%s", step, r.code, dry.code, dry.stderr, r.stderr)
				}
				// The plan and the summary count fragments: 10+N new rows
				// in two new fragments, the converted ones skipped.
				var p struct {
					Append struct {
						Unit         string `json:"unit"`
						New, Skipped int
					} `json:"append"`
				}
				if err := json.Unmarshal([]byte(dry.stdout), &p); err != nil || p.Append.Unit != "fragments" || p.Append.New != 2 || p.Append.Skipped != 3+2*i {
					t.Fatalf("dry run of step %s: %v, plan %+v", step, err, p.Append)
				}
				doc := lastJSON(t, r)
				app, _ := doc["appended"].(map[string]any)
				if doc["status"] != "ok" || app == nil || app["blobs"] != float64(10+atoi(step)) || app["sources"] != 2.0 || app["skipped"] != float64(3+2*i) {
					t.Fatalf("append of step %s: summary %v", step, doc)
				}
				if n := checkLance(t, py, src, v, dst, column); n == 0 {
					t.Fatal("no value compared")
				}
				if r := bp(t, "verify", dst, "--against", src); r.code != exitOK {
					t.Fatalf("verify --against after step %s: %s%s", step, r.stdout, r.stderr)
				}
				sameFiles(t, "the first commit's shards", first, shardSums(t, filepath.Join(dst, "media")))
				sameFiles(t, "the committed table", table, testtool.FileSums(t, filepath.Join(dst, "table.lance")))
			}
			r := bp(t, append(args, "--append")...)
			done := lastJSON(t, r)
			if r.code != exitOK || done["status"] != "already_done" {
				t.Fatalf("append with nothing new: exit %d, %v", r.code, done)
			}
			// One conversion of the latest version writes as many members
			// and bytes as the first conversion and the appends together.
			single := bp(t, "convert-lance", src, filepath.Join(root, "single"), "--column", column, "--yes", "--json")
			if doc := lastJSON(t, single); single.code != exitOK || doc["blobs"] != done["blobs"] || doc["bytes"] != done["bytes"] {
				t.Fatalf("one conversion: %v; the appended output: %v", doc, done)
			}

			// Rows deleted, then a row updated (deleted, written again in
			// a new fragment): the converted fragments get the source's
			// deletion files, the new fragment is converted.
			for _, step := range []string{"delete", "update"} {
				v := growLance(t, py, src, kind, step)
				r = bp(t, append(args, "--append")...)
				if r.code != exitOK || !strings.Contains(r.stderr, "deleted in the source since version") || lastJSON(t, r)["status"] != "ok" {
					t.Fatalf("append after %s: exit %d: %s%s", step, r.code, r.stdout, r.stderr)
				}
				checkLance(t, py, src, v, dst, column)
				if r := bp(t, "verify", dst, "--against", src); r.code != exitOK {
					t.Fatalf("verify --against after %s: %s%s", step, r.stdout, r.stderr)
				}
			}

			// Compaction removes every converted fragment.
			v := growLance(t, py, src, kind, "compact")
			r = bp(t, append(args, "--append")...)
			if r.code != exitInvalid || !strings.Contains(r.stderr, "fragment 0: removed") || !strings.Contains(r.stderr, "--allow-removed") {
				t.Fatalf("append after compaction: exit %d, want %d naming fragment 0: %s", r.code, exitInvalid, r.stderr)
			}
			r = bp(t, append(args, "--append", "--allow-removed")...)
			if r.code != exitOK {
				t.Fatalf("append --allow-removed after compaction: exit %d: %s", r.code, r.stderr)
			}
			checkLance(t, py, src, v, dst, column)
			if r := bp(t, "verify", dst, "--against", src); r.code != exitOK {
				t.Fatalf("verify --against after compaction: %s%s", r.stdout, r.stderr)
			}
		})
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// lanceReader is a pylance 14.0.3 reader that opens the latest version of
// a table over and over until the file STOP exists (at most 5,000 times):
// each time it reads every row, checks that the row count is that of the
// source version the table's record names (counts given as JSON) and that
// every reference of the column names a member of its shard (a shard's
// members listed once: shards never change). It prints the source
// versions it saw, the reads and the problems. With a fifth argument, the
// pylance storage options of a table in S3 (shards are then read with
// s3fs).
const lanceReader = `
import json, os, sys, zipfile
import lance
table, column, stop, counts = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
opts = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
out_dir = table.rsplit("/", 1)[0]
opener = lambda p: open(p, "rb")
if opts:
    import s3fs
    fs = s3fs.S3FileSystem(key=opts["aws_access_key_id"], secret=opts["aws_secret_access_key"],
                           client_kwargs={"endpoint_url": opts["aws_endpoint"], "region_name": opts["aws_region"]})
    opener = lambda p: fs.open(p, "rb")
members = {}
seen, problems, reads = [], [], 0
while reads < 5000 and not problems:
    done = os.path.exists(stop)
    ds = lance.dataset(table, storage_options=opts)
    rec = json.loads(ds.schema.metadata[b"bpconvert"])
    sv = rec["source_version"]
    if sv not in seen:
        seen.append(sv)
    refs = ds.to_table(columns=[column])[column].to_pylist()
    if len(refs) != counts.get(str(sv), -1):
        problems.append("version %d of the table (source version %d): %d rows, want %s" % (ds.version, sv, len(refs), counts.get(str(sv))))
    for g in refs:
        member, shard = g[len("zip://"):].split("::", 1)
        try:
            if shard not in members:
                with opener(out_dir + "/" + shard) as f, zipfile.ZipFile(f) as z:
                    members[shard] = set(z.namelist())
            if member not in members[shard]:
                raise KeyError("no member " + member)
        except Exception as e:
            problems.append("version %d of the table: %s: %s" % (ds.version, g, e))
            break
    reads += 1
    if reads == 1:
        open(stop + ".ready", "w").close()
    if done:
        break
print(json.dumps({"seen": seen, "reads": reads, "problems": problems}))
`

// TestLanceAppendReaderAndKill appends 200 rows of 256 KiB to a converted
// dataset while a pylance reader opens the output's latest version in a
// loop (from before the append starts until after it ended): every
// version it opens is whole, the old one or the new one, every
// reference resolving. Then it kills an append with SIGKILL mid-way
// through its shards and reruns it: the rerun ends committed, equal to the
// source for pylance, and the first commit's shards stay byte for byte.
func TestLanceAppendReaderAndKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("appends 100 MB of payloads; skipped with -short")
	}
	py := testtool.Python(t)
	root := t.TempDir()
	src, dst := filepath.Join(root, "src.lance"), filepath.Join(root, "out")
	v1 := growLance(t, py, src, "binary", "0")
	args := []string{"convert-lance", src, dst, "--column", "img", "--yes", "--json", "--max-pack-bytes", "4MiB"}
	if r := bp(t, args...); r.code != exitOK {
		t.Fatalf("first conversion: exit %d: %s", r.code, r.stderr)
	}
	first := shardSums(t, filepath.Join(dst, "media"))
	v2 := growLance(t, py, src, "binary", "big200")

	reader := startLanceReader(t, py, nil, filepath.Join(dst, "table.lance"), map[string]int{strconv.FormatUint(v1, 10): 20, strconv.FormatUint(v2, 10): 220})
	r := bp(t, append(args, "--append")...)
	reader.stop(t, "")
	if r.code != exitOK {
		t.Fatalf("append: exit %d: %s", r.code, r.stderr)
	}
	checkLance(t, py, src, v2, dst, "img")
	sameFiles(t, "the first commit's shards", first, shardSums(t, filepath.Join(dst, "media")))

	// kill -9 in the middle of the next append, then the same command.
	v3 := growLance(t, py, src, "binary", "big200")
	killMidAppend(t, dst, append(args, "--append"))
	second := shardSums(t, filepath.Join(dst, "media"))
	if r := bp(t, append(args, "--append")...); r.code != exitOK {
		t.Fatalf("rerun after SIGKILL: exit %d: %s", r.code, r.stderr)
	}
	checkLance(t, py, src, v3, dst, "img")
	sameFiles(t, "the committed shards", second, shardSums(t, filepath.Join(dst, "media")))
	sameFiles(t, "the first commit's shards", first, shardSums(t, filepath.Join(dst, "media")))
	if r := bp(t, "verify", dst, "--against", src); r.code != exitOK {
		t.Fatalf("verify --against: %s%s", r.stdout, r.stderr)
	}
}

// killMidAppend starts bpconvert with args (an append into dst), kills it
// with SIGKILL once it has staged two complete shards, and checks that the
// committed output is still there.
func killMidAppend(t *testing.T, dst string, args []string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	media := filepath.Join(stage.Path(dst), "media")
	staged := testtool.WaitFor(60*time.Second, time.Millisecond, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		return len(packShards(media)) >= 2
	})
	cmd.Process.Kill()
	<-exited
	if !staged || len(packShards(media)) < 2 {
		t.Fatal("the append ended before it staged two shards: nothing to kill")
	}
	if !exists(filepath.Join(dst, convert.RecordName)) {
		t.Fatal("the committed output's record is gone after SIGKILL")
	}
}

// lanceLoop is lanceReader running beside an append (startLanceReader).
type lanceLoop struct {
	cmd      *exec.Cmd
	stopFile string
	out, err bytes.Buffer
}

// startLanceReader starts lanceReader over the Lance table at table (a
// path or an s3:// location), with env added to this process's environment
// less its AWS settings (nil: this process's) and pylance's storage options
// opts for a table in a bucket, and returns once it has read the table.
// counts are the row counts of the versions it may see, by source version.
func startLanceReader(t *testing.T, py string, env []string, table string, counts map[string]int, opts ...map[string]string) *lanceLoop {
	t.Helper()
	l := &lanceLoop{stopFile: filepath.Join(t.TempDir(), "stop")}
	c, _ := json.Marshal(counts)
	args := []string{"-c", lanceReader, table, "img", l.stopFile, string(c)}
	for _, o := range opts {
		b, _ := json.Marshal(o)
		args = append(args, string(b))
	}
	l.cmd = exec.Command(py, args...)
	if env != nil {
		l.cmd.Env = append(cleanAWSEnv(), env...)
	}
	l.cmd.Stdout, l.cmd.Stderr = &l.out, &l.err
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testtool.WaitFor(60*time.Second, 10*time.Millisecond, func() bool { return exists(l.stopFile + ".ready") }) {
		l.cmd.Process.Kill()
		l.cmd.Wait()
		t.Fatalf("the reader never read the table: %s", l.err.String())
	}
	return l
}

// stop stops the reader and fails t unless it read whole versions only,
// and both the old and the new one (where says where the table is, for the
// log).
func (l *lanceLoop) stop(t *testing.T, where string) {
	t.Helper()
	if err := os.WriteFile(l.stopFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.cmd.Wait(); err != nil {
		t.Fatalf("reader: %v\n%s", err, l.err.String())
	}
	var seen struct {
		Seen     []uint64 `json:"seen"`
		Reads    int      `json:"reads"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal(l.out.Bytes(), &seen); err != nil {
		t.Fatalf("reader: %v: %s", err, l.out.String())
	}
	t.Logf("the reader opened the table%s %d times, seeing source versions %v", where, seen.Reads, seen.Seen)
	if len(seen.Problems) > 0 || len(seen.Seen) != 2 {
		t.Fatalf("the reader saw source versions %v and these problems: %v", seen.Seen, seen.Problems)
	}
}
