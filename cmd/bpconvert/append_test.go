package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// appendShardsPy writes WebDataset shards train-FIRST..train-(FIRST+N-1)
// with Python's tarfile: samples of a random .jpg of SIZE bytes and a
// .cls, keys unique across shards.
const appendShardsPy = `
import io, os, sys, tarfile
out, first, n, samples, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
os.makedirs(out, exist_ok=True)
for s in range(first, first + n):
    with tarfile.open(os.path.join(out, "train-%04d.tar" % s), "w", format=tarfile.GNU_FORMAT) as tf:
        for i in range(samples):
            for ext, data in (("jpg", os.urandom(size)), ("cls", str(i % 10).encode())):
                ti = tarfile.TarInfo("%04d%05d.%s" % (s, i, ext))
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
`

// addShards writes n new shards from number first into dir and returns
// their total size.
func addShards(t *testing.T, dir string, first, n, samples, size int) int64 {
	t.Helper()
	testtool.Require(t, "python3")
	if out, err := exec.Command("python3", "-c", appendShardsPy, dir, itoa(int64(first)), itoa(int64(n)), itoa(int64(samples)), itoa(int64(size))).CombinedOutput(); err != nil {
		t.Fatalf("python3 tarfile: %v\n%s", err, out)
	}
	var total int64
	for s := first; s < first+n; s++ {
		fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("train-%04d.tar", s)))
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	return total
}

// appendReaderPy reads a converted WebDataset over and over, as a user's
// training job would while appends land, with pyarrow and zipfile only:
// the samples table, then every reference of it (the member read, its CRC
// checked by zipfile). It prints, as JSON, how many times it saw each row
// count and every problem: a row count not in ALLOWED, a reference to a
// shard or member that is not there. It stops when STOP exists (or after
// 600 s, or 100,000 rounds).
const appendReaderPy = `
import json, os, sys, time, zipfile
import pyarrow.parquet as pq
root, allowed, stop = sys.argv[1], set(json.loads(sys.argv[2])), sys.argv[3]
fs = None
if root.startswith("s3://"):
    import s3fs
    fs = s3fs.S3FileSystem(key=os.environ["AWS_ACCESS_KEY_ID"], secret=os.environ["AWS_SECRET_ACCESS_KEY"],
        client_kwargs={"endpoint_url": os.environ["AWS_ENDPOINT_URL_S3"], "region_name": "us-east-1"})
    root = root[len("s3://"):]
def op(rel):
    p = root.rstrip("/") + "/" + rel
    if fs is not None:
        fs.invalidate_cache()
        return fs.open(p, "rb")
    return open(p, "rb")
seen, problems, rounds, replaced, deadline = {}, [], 0, 0, time.time() + 600
while rounds < 100000 and time.time() < deadline:
    done = os.path.exists(stop)
    rounds += 1
    try:
        with op("samples.parquet") as f:
            t = pq.read_table(f)
    except FileNotFoundError as e:
        problems.append("round %d: samples.parquet: %s" % (rounds, e)); continue
    except Exception as e:
        # s3fs pins the version it opened: a table replaced while it is
        # read fails the read (FileExpired), and a reader reads again.
        if type(e).__name__ != "FileExpired":
            raise
        replaced += 1; continue
    n = t.num_rows
    seen[n] = seen.get(n, 0) + 1
    if n not in allowed:
        problems.append("round %d: %d rows, not a committed version %s" % (rounds, n, sorted(allowed)))
    zips = {}
    for ref in t.column("jpg").to_pylist():
        key, shard = ref[len("zip://"):].split("::", 1)
        try:
            if shard not in zips:
                zips[shard] = zipfile.ZipFile(op(shard))
            if len(zips[shard].read(key)) == 0:
                problems.append("round %d: %s: empty" % (rounds, ref))
        except Exception as e:
            problems.append("round %d: %s: %s" % (rounds, ref, e))
    for z in zips.values():
        z.close()
    if done:
        break
print(json.dumps({"rounds": rounds, "seen": seen, "replaced": replaced, "problems": problems[:20]}))
`

// appendReader is a reader looping over a dataset during appends (see
// appendReaderPy).
type appendReader struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	stop string
}

// startReader starts the reader on loc (a directory or s3:// location);
// allowed are the row counts of every version the appends commit.
func startReader(t *testing.T, loc string, allowed []int, env []string) *appendReader {
	t.Helper()
	py := testtool.Python(t)
	a, _ := json.Marshal(allowed)
	r := &appendReader{stop: filepath.Join(t.TempDir(), "stop")}
	r.cmd = exec.Command(py, "-c", appendReaderPy, loc, string(a), r.stop)
	r.cmd.Env = env
	r.cmd.Stdout = &r.out
	r.cmd.Stderr = &r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// finish stops the reader and fails t on any problem it saw; it returns
// how many rounds saw each row count.
func (r *appendReader) finish(t *testing.T) map[string]int {
	t.Helper()
	os.WriteFile(r.stop, nil, 0o644)
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("reader: %v\n%s", err, r.out.String())
	}
	var res struct {
		Rounds   int            `json:"rounds"`
		Seen     map[string]int `json:"seen"`
		Problems []string       `json:"problems"`
	}
	if err := json.Unmarshal(r.out.Bytes(), &res); err != nil {
		t.Fatalf("reader output: %v\n%s", err, r.out.String())
	}
	if len(res.Problems) > 0 {
		t.Fatalf("a reader saw a mix of versions during an append:\n%s", strings.Join(res.Problems, "\n"))
	}
	t.Logf("reader: %d rounds, row counts seen %v", res.Rounds, res.Seen)
	return res.Seen
}

// shardSums returns the SHA-256 of every pack shard in dir.
func shardSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for rel, sum := range testtool.FileSums(t, dir) {
		if strings.HasSuffix(rel, ".zip") {
			out[rel] = sum
		}
	}
	if len(out) == 0 {
		t.Fatalf("no shard in %s", dir)
	}
	return out
}

// sameFiles fails unless every file of before is in dir unchanged.
func sameFiles(t *testing.T, what string, before, after map[string][32]byte) {
	t.Helper()
	for rel, sum := range before {
		if got, ok := after[rel]; !ok || got != sum {
			t.Fatalf("%s: %s was rewritten or removed", what, rel)
		}
	}
}

// tryKill starts bpconvert args (env as its environment) and kills it
// with SIGKILL once cond holds, stepping it with SIGSTOP/SIGCONT so the
// moment is caught; it reports false when the run ended first (on a busy
// machine a short phase can pass between two steps).
func tryKill(t *testing.T, env, args []string, cond func() bool) bool {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	reached := testtool.WaitFor(2*time.Minute, 0, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		cmd.Process.Signal(syscall.SIGCONT)
		time.Sleep(100 * time.Microsecond)
		cmd.Process.Signal(syscall.SIGSTOP)
		return cond()
	})
	select {
	case <-exited:
		return false
	default:
	}
	cmd.Process.Kill()
	<-exited
	if !reached {
		t.Fatal("the run neither reached the moment to kill it nor ended")
	}
	return true
}

// killWhen is tryKill that fails t when the run ends first.
func killWhen(t *testing.T, env, args []string, what string, cond func() bool) {
	t.Helper()
	if !tryKill(t, env, args, cond) {
		t.Fatalf("the run ended before %s", what)
	}
}

// appendRun runs an append and returns its summary; want is its status.
func appendRun(t *testing.T, env, args []string, want string) map[string]any {
	t.Helper()
	r := runBin(t, env, args...)
	if r.code != 0 {
		t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	sum := lastJSON(t, r)
	if sum["status"] != want {
		t.Fatalf("status %v, want %s:\n%s", sum["status"], want, r.stdout)
	}
	return sum
}

// appendPlace is where an append test converts: a local directory, or a
// bucket on a loopback S3 server with the source uploaded there too.
type appendPlace struct {
	root, src   string // the test's directory; the local source directory
	env         []string
	dst, srcArg string // DST and SRC as the command names them
	media       string // the directory holding the output's shards
	srv         *s3test.Server
}

// newAppendPlace sets up where ("local" or "bucket") under a new directory.
func newAppendPlace(t *testing.T, where string) *appendPlace {
	t.Helper()
	root := t.TempDir()
	p := &appendPlace{root: root, src: filepath.Join(root, "src"), env: os.Environ(), dst: filepath.Join(root, "out")}
	p.srcArg, p.media = p.src, filepath.Join(p.dst, "media")
	if where == "bucket" {
		p.srv = s3test.Start(t, "bkt")
		p.env = append(cleanAWSEnv(), append(p.srv.Env(), "AWS_EC2_METADATA_DISABLED=true")...)
		p.dst, p.srcArg, p.media = "s3://bkt/out", "s3://bkt/src", p.srv.Path("bkt", "out/media")
	}
	return p
}

// sync uploads the local source to the bucket (nothing locally).
func (p *appendPlace) sync(t *testing.T) {
	t.Helper()
	if p.srv != nil {
		upload(t, p.srv, p.src, "bkt", "src")
	}
}

// args is the command line of convert-wds --append with more flags.
func (p *appendPlace) args(more ...string) []string {
	a := append([]string{"convert-wds", "--append", "--yes", "--json"}, more...)
	if p.srv != nil {
		a = append(a, "--staging", filepath.Join(p.root, "staging"))
	}
	return append(a, p.srcArg, p.dst)
}

// TestAppendWDS converts a WebDataset with --append into an absent
// destination, then appends new tars to it three times, into a local
// directory and into a bucket: after each append the output verifies
// against all the sources, the shards of the first commit are byte for
// byte as they were, and a reader looping over the dataset (pyarrow and
// zipfile; s3fs for the bucket) during the appends sees only whole
// versions (TestAppendKilled kills appends). Old sources are
// never read: for the bucket the bytes fetched stay within the new tars'
// size, and locally the old tars are overwritten with zeros (same size
// and time) during the appends, which would fail any read of them.
func TestAppendWDS(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"local", "bucket"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			const samples, size = 30, 6000
			pl := newAppendPlace(t, where)
			src, env, dst, srcArg, media := pl.src, pl.env, pl.dst, pl.srcArg, pl.media
			sync := func() { pl.sync(t) }
			args := func() []string { return pl.args("--max-members", "16") }
			addShards(t, src, 0, 2, samples, size)
			sync()
			sum := appendRun(t, env, args(), "ok")
			if sum["appended"] != nil || sum["blobs"].(float64) != 2*samples*2 {
				t.Fatalf("a first --append into an absent destination converts everything: %v", sum)
			}
			first := shardSums(t, media)
			allowed := []int{2 * samples}
			for _, n := range []int{2, 1, 2} {
				allowed = append(allowed, allowed[len(allowed)-1]+n*samples)
			}
			reader := startReader(t, dst, allowed, env)
			shards := 2
			for i, n := range []int{2, 1, 2} {
				newBytes := addShards(t, src, shards, n, samples, size)
				old := hideOld(t, src, shards, where == "local")
				sync()
				sum := appendRun(t, env, args(), "ok")
				a, _ := sum["appended"].(map[string]any)
				if a == nil || a["sources"].(float64) != float64(n) || a["skipped"].(float64) != float64(shards) {
					t.Fatalf("append %d: appended %v, want %d new and %d skipped sources", i+1, sum["appended"], n, shards)
				}
				if where == "bucket" {
					got := int64(sum["bytes_fetched"].(float64))
					if slack := newBytes/20 + 256<<10; got > newBytes+slack {
						t.Fatalf("append %d fetched %d bytes of the source, new tars hold %d (slack %d): it read old sources", i+1, got, newBytes, slack)
					}
				}
				old.restore(t)
				shards += n
				sameFiles(t, "the committed shards", first, shardSums(t, media))
				verifyAgainstAll(t, env, [2]string{dst, srcArg})
				if r := runBin(t, env, args()...); r.code != 0 || lastJSON(t, r)["status"] != "already_done" {
					t.Fatalf("a rerun with nothing new: exit %d %s %s", r.code, r.stdout, r.stderr)
				}
			}
			seen := reader.finish(t)
			if seen[itoa(int64(allowed[len(allowed)-1]))] == 0 {
				t.Fatalf("the reader never saw the last version: %v", seen)
			}
		})
	}
}

// oldSources are the source shards an append must not read, overwritten
// with zeros of the same size and time (see hideOld).
type oldSources struct {
	files map[string][]byte
	times map[string]time.Time
}

// hideOld overwrites, when local, the first n shards under dir with zeros
// of the same size and modification time: an append that read one would
// fail on it, yet it sees them unchanged. restore puts them back.
func hideOld(t *testing.T, dir string, n int, local bool) oldSources {
	t.Helper()
	o := oldSources{files: map[string][]byte{}, times: map[string]time.Time{}}
	if !local {
		return o
	}
	for s := range n {
		p := filepath.Join(dir, fmt.Sprintf("train-%04d.tar", s))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		o.files[p], o.times[p] = b, fi.ModTime()
		if err := os.WriteFile(p, make([]byte, len(b)), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, fi.ModTime(), fi.ModTime())
	}
	return o
}

func (o oldSources) restore(t *testing.T) {
	t.Helper()
	for p, b := range o.files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, o.times[p], o.times[p])
	}
}

// stagedShards counts the complete shards an append staged beside a local
// destination.
func stagedShards(dst string) int {
	return len(packShards(filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".bpconvert-staging", "media")))
}

// committing reports whether an append is in its commit: locally its
// staging directory holds the commit mark, in a bucket its journal exists.
func committing(srv *s3test.Server, dst string) bool {
	if srv != nil {
		return exists(srv.Path("bkt", "out/.bpconvert-commit.json"))
	}
	return exists(filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".bpconvert-staging", ".bpconvert-commit"))
}

// TestAppendContention runs a second append while one is under way, into a
// local directory and into a bucket: the second is told to rerun (exit 1,
// with a hint) and writes nothing; the first commits; the second, rerun,
// then appends what it brought to the new version, and the output verifies
// against every source.
func TestAppendContention(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"local", "bucket"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			pl := newAppendPlace(t, where)
			src, env, dst, srcArg, media := pl.src, pl.env, pl.dst, pl.srcArg, pl.media
			sync := func() { pl.sync(t) }
			args := pl.args("--max-members", "8")
			addShards(t, src, 0, 1, 8, 1000)
			sync()
			appendRun(t, env, args, "ok")
			addShards(t, src, 1, 6, 40, 60000)
			sync()
			have := len(packShards(media))
			first := exec.Command(binPath, args...)
			first.Env = env
			var out1, err1 bytes.Buffer
			first.Stdout, first.Stderr = &out1, &err1
			if err := first.Start(); err != nil {
				t.Fatal(err)
			}
			// Once the first has a new shard, the second starts.
			if !testtool.WaitFor(2*time.Minute, 2*time.Millisecond, func() bool {
				return len(packShards(media)) > have || stagedShards(dst) > 0
			}) {
				first.Process.Kill()
				t.Fatal("the first append wrote no shard")
			}
			first.Process.Signal(syscall.SIGSTOP)
			addShards(t, src, 7, 1, 8, 1000)
			sync()
			second := runBin(t, env, args...)
			first.Process.Signal(syscall.SIGCONT)
			if second.code != exitFailure || !strings.Contains(second.stderr, "hint: ") {
				first.Wait()
				t.Fatalf("a second append while one is under way: exit %d, want 1 with a hint\n%s", second.code, second.stderr)
			}
			t.Logf("the second append: %s", strings.TrimSpace(second.stderr))
			if err := first.Wait(); err != nil {
				t.Fatalf("the first append: %v\n%s", err, err1.String())
			}
			sum := appendRun(t, env, args, "ok")
			if a, _ := sum["appended"].(map[string]any); a == nil || a["sources"].(float64) != 1 {
				t.Fatalf("the second append, rerun: %v", sum)
			}
			verifyAgainstAll(t, env, [2]string{dst, srcArg})
		})
	}
}

// TestAppendPack packs a directory with --append, adds files and packs it
// again, locally and into a bucket: the new files go into new shards, the
// first shards stay byte for byte, verify --against the directory passes,
// and a rerun with nothing new is already done.
func TestAppendPack(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"local", "bucket"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			src := filepath.Join(root, "src")
			env := os.Environ()
			dst := filepath.Join(root, "packs")
			media := dst
			if where == "bucket" {
				srv := s3test.Start(t, "bkt")
				env = append(cleanAWSEnv(), append(srv.Env(), "AWS_EC2_METADATA_DISABLED=true")...)
				dst, media = "s3://bkt/packs", srv.Path("bkt", "packs")
			}
			files := func(from, n int) {
				for i := from; i < from+n; i++ {
					writeTree(t, src, map[string]string{fmt.Sprintf("d/f%03d.bin", i): strings.Repeat(fmt.Sprint(i), 500+i)})
				}
			}
			args := []string{"pack", "--append", "--json", "--max-members", "4", "--staging", filepath.Join(root, "staging"), src, dst}
			if where == "local" {
				args = []string{"pack", "--append", "--json", "--max-members", "4", src, dst}
			}
			files(0, 6)
			appendRun(t, env, args, "ok")
			first := shardSums(t, media)
			files(6, 5)
			sum := appendRun(t, env, args, "ok")
			if a, _ := sum["appended"].(map[string]any); a == nil || a["sources"].(float64) != 5 || sum["members"].(float64) != 11 {
				t.Fatalf("pack --append: %v", sum)
			}
			sameFiles(t, "the committed shards", first, shardSums(t, media))
			verifyAgainstAll(t, env, [2]string{dst, src})
			appendRun(t, env, args, "already_done")
		})
	}
}

// TestAppendKilled kills appends with SIGKILL, into a local directory and
// into a bucket: while an append writes its shards, and while it commits
// (locally: once its staging directory is marked complete; in a bucket:
// once its journal is put). After each kill the same command ends
// committed, the output verifies against every source and the first
// commit's shards are unchanged. A phase a busy machine lets a run pass
// between two steps is tried again with the next new tar (at most six
// times).
func TestAppendKilled(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"local", "bucket"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			pl := newAppendPlace(t, where)
			src, env, dst, srcArg, media, srv := pl.src, pl.env, pl.dst, pl.srcArg, pl.media, pl.srv
			sync := func() { pl.sync(t) }
			args := pl.args("--max-members", "8")
			addShards(t, src, 0, 1, 16, 4000)
			sync()
			appendRun(t, env, args, "ok")
			first := shardSums(t, media)
			next := 1
			phases := []struct {
				name, rerun string
				at          func(have int) bool
			}{
				{"while it writes its shards", "ok", func(have int) bool {
					if srv != nil {
						return len(packShards(media)) > have
					}
					return stagedShards(dst) > 0
				}},
				{"while it commits", "already_done", func(int) bool { return committing(srv, dst) }},
			}
			for _, ph := range phases {
				caught := false
				for attempt := 0; attempt < 6 && !caught; attempt++ {
					addShards(t, src, next, 1, 40, 30000)
					next++
					sync()
					have := len(packShards(media))
					caught = tryKill(t, env, args, func() bool { return ph.at(have) })
					if caught {
						// Killed while writing, the rerun resumes and commits;
						// killed while committing, it finishes the commit before
						// it plans, and finds nothing new.
						appendRun(t, env, args, ph.rerun)
					}
					sameFiles(t, "the committed shards", first, shardSums(t, media))
					verifyAgainstAll(t, env, [2]string{dst, srcArg})
				}
				if !caught {
					t.Fatalf("no append was caught %s in six tries", ph.name)
				}
			}
		})
	}
}
