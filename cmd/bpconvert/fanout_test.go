package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
)

// runParts runs parts 1..n of a conversion as concurrent processes and
// fails unless each exits 0.
func runParts(t *testing.T, n int, args func(part string) []string) {
	t.Helper()
	runPartsEnv(t, nil, n, args)
}

// runPartsEnv is runParts with env added to this process's environment
// (less its AWS settings).
func runPartsEnv(t *testing.T, env []string, n int, args func(part string) []string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]string, n)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(binPath, args(fmt.Sprintf("%d/%d", i, n))...)
			cmd.Env = append(cleanAWSEnv(), env...)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i-1] = fmt.Sprintf("part %d/%d: %v\n%s", i, n, err, out)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
}

// fileMeta returns a parquet file's key-value metadata (ARROW:schema
// aside) as text.
func fileMeta(t *testing.T, path string) string {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	var b strings.Builder
	kv := pf.MetaData().KeyValueMetadata()
	for i, k := range kv.Keys() {
		if k != "ARROW:schema" {
			fmt.Fprintf(&b, "%s=%s\n", k, kv.Values()[i])
		}
	}
	return b.String()
}

// sameMembers fails unless two pack directories hold the same keys with the
// same bytes.
func sameMembers(t *testing.T, got, want string) {
	t.Helper()
	g, err := packcore.OpenSet(got, packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	w, err := packcore.OpenSet(want, packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if g.Len() != w.Len() {
		t.Fatalf("%s holds %d members, %s %d", got, g.Len(), want, w.Len())
	}
	for m := range w.Members() {
		a, err := w.Read(m.Key)
		if err != nil {
			t.Fatal(err)
		}
		b, err := g.Read(m.Key)
		if err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if string(a) != string(b) {
			t.Fatalf("member %s differs", m.Key)
		}
	}
}

// TestFanOut splits convert-wds into n parts run concurrently as separate
// processes, joins them with finalize, and checks the result against one
// undivided run: the same members with the same bytes, the same table rows
// (references naming the same members), shards numbered from 0 with one
// manifest, and verify passes. Then the retries: finalize again, a part
// again and the undivided run again all exit 0 already_done.
func TestFanOut(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shards := wdsShards(t, root, 7, 12, 40_000)
	flags := []string{"--yes", "--max-pack-bytes", "200KB", "--quiet"}
	one := filepath.Join(root, "one")
	if r := bp(t, append(append(append([]string{"convert-wds"}, shards...), one), flags...)...); r.code != 0 {
		t.Fatalf("whole run: %+v", r)
	}
	for _, n := range []int{1, 2, 3, 10} { // 10 parts for 7 shards: some parts are empty
		t.Run(fmt.Sprint(n, " parts"), func(t *testing.T) {
			dst := filepath.Join(root, fmt.Sprint("split", n))
			args := func(part string) []string {
				return append(append(append([]string{"convert-wds"}, shards...), dst, "--part", part), flags...)
			}
			runParts(t, n, args)
			r := bp(t, "finalize", dst, "--json")
			if r.code != 0 {
				t.Fatalf("finalize: %+v", r)
			}
			if doc := lastJSON(t, r); doc["status"] != "ok" || doc["blobs"] != float64(7*12*2) {
				t.Fatalf("finalize summary: %v", doc)
			}
			sameMembers(t, filepath.Join(dst, "media"), filepath.Join(one, "media"))
			if a, b := fileMeta(t, filepath.Join(dst, "samples.parquet")), fileMeta(t, filepath.Join(one, "samples.parquet")); a != b || a == "" {
				t.Fatalf("joined table's metadata:\n%s\nwhole run's:\n%s", a, b)
			}
			if a, b := tableDump(t, filepath.Join(dst, "samples.parquet")), tableDump(t, filepath.Join(one, "samples.parquet")); masked(a) != masked(b) {
				t.Fatalf("joined table differs from the whole run's:\n%.400s\n---\n%.400s", a, b)
			}
			if n := refsResolve(t, dst, tableDump(t, filepath.Join(dst, "samples.parquet"))); n != 7*12*2 {
				t.Fatalf("%d references resolve, want %d", n, 7*12*2)
			}
			got := packShards(filepath.Join(dst, "media"))
			for i, p := range got {
				if filepath.Base(p) != fmt.Sprintf("pack-%04d.zip", i) {
					t.Fatalf("shard %d is %s", i, p)
				}
			}
			// verify DATASET --against re-reads the shards and compares
			// every payload with the member its reference names.
			if r := bp(t, "verify", dst, "--against", strings.Join(shards, "::")); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "0 mismatches") {
				t.Fatalf("verify --against: %+v", r)
			}
			if exists(filepath.Join(root, fmt.Sprintf(".split%d.bpconvert-parts", n))) {
				t.Fatal("parts left after finalize")
			}
			for _, retry := range [][]string{{"finalize", dst, "--json"}, append(args(fmt.Sprintf("1/%d", n)), "--json"),
				append(append(append([]string{"convert-wds"}, shards...), dst), append(flags, "--json")...)} {
				r := bp(t, retry...)
				if r.code != 0 || !strings.Contains(r.stdout, `"already_done"`) {
					t.Fatalf("retry %v: %+v", retry, r)
				}
			}
		})
	}
}

// TestFinalizeRefuses: finalize exits 2 when a part is missing, still
// staged, or made from another plan, and 3 when two parts packed the same
// key; nothing is written to DST in any case.
func TestFinalizeRefuses(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	shards := wdsShards(t, root, 4, 3, 1000)
	run := func(dst, part string, extra ...string) {
		t.Helper()
		args := append(append(append([]string{"convert-wds"}, shards...), dst, "--yes", "--quiet", "--part", part), extra...)
		if r := bp(t, args...); r.code != 0 {
			t.Fatalf("part %s: %+v", part, r)
		}
	}
	for _, tc := range []struct {
		name, want string
		code       int
		prep       func(dst string)
	}{
		{"none", "no parts", 2, func(string) {}},
		{"missing", "part 2/3 missing", 2, func(dst string) { run(dst, "1/3"); run(dst, "3/3") }},
		{"incomplete", "part 2/3 not complete", 2, func(dst string) {
			run(dst, "1/3")
			run(dst, "3/3")
			os.MkdirAll(filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".bpconvert-parts", ".part-0002-of-0003.bpconvert-staging"), 0o755)
		}},
		{"other plan", "other options than part 1/2", 2, func(dst string) { run(dst, "1/2"); run(dst, "2/2", "--max-members", "2") }},
		{"other split", "holds parts of 2 splits", 2, func(dst string) { run(dst, "1/2"); run(dst, "2/3") }},
		{"duplicate key", "also in part 1/2", 3, func(dst string) {
			run(dst, "1/2")
			// Part 1 of the same split of copies of the shards stands in
			// for part 2: its keys repeat part 1's.
			dup := filepath.Join(root, "dup")
			os.MkdirAll(dup, 0o755)
			var copies []string
			for _, s := range shards {
				c := filepath.Join(dup, filepath.Base(s))
				copyFile(t, s, c)
				copies = append(copies, c)
			}
			parts := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".bpconvert-parts")
			other := filepath.Join(root, "other")
			if r := bp(t, append(append([]string{"convert-wds"}, copies...), other, "--yes", "--quiet", "--part", "1/2")...); r.code != 0 {
				t.Fatalf("%+v", r)
			}
			otherPart := filepath.Join(root, ".other.bpconvert-parts", "part-0001-of-0002")
			// Give it part 1's record so that only the keys tell them apart.
			b, _ := os.ReadFile(filepath.Join(parts, "part-0001-of-0002", ".bpconvert.json"))
			os.WriteFile(filepath.Join(otherPart, ".bpconvert.json"), []byte(strings.Replace(string(b), `"part": "1/2"`, `"part": "2/2"`, 1)), 0o644)
			os.Rename(otherPart, filepath.Join(parts, "part-0002-of-0002"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
			tc.prep(dst)
			r := bp(t, "finalize", dst)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want %d and %q in:\n%s", r.code, tc.code, tc.want, r.stderr)
			}
			if exists(dst) {
				t.Fatal("finalize wrote DST")
			}
		})
	}
}

// tableDump renders a parquet file's schema (with metadata) and values as
// text, with the shard of every reference masked (a split and a whole run
// number shards differently; the members references name must not differ).
func tableDump(t *testing.T, path string) string {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(sc.String() + "\n")
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		for c := 0; c < int(rec.NumCols()); c++ {
			j, err := rec.Column(c).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			b.Write(j)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

var (
	shardRef = regexp.MustCompile(`::media/pack-[0-9]+\.zip`)
	fullRef  = regexp.MustCompile(`zip://[^"]*?::media/pack-[0-9]+\.zip`)
)

// masked is a tableDump with the shard of every reference masked.
func masked(dump string) string { return shardRef.ReplaceAllString(dump, "::media/pack-NNNN.zip") }

// refsResolve fails unless every reference in text names a member of the
// shard it names, under dir/media, and returns how many it checked.
func refsResolve(t *testing.T, dir, text string) int {
	t.Helper()
	set, err := packcore.OpenSet(filepath.Join(dir, "media"), packcore.SetOptions{RefBase: "media"})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	refs := fullRef.FindAllString(text, -1)
	for _, ref := range refs {
		if _, err := set.Stat(ref); err != nil {
			t.Fatalf("reference %s: %v", ref, err)
		}
	}
	return len(refs)
}

// TestFanOutParquet splits convert-parquet of the Hugging Face fixture
// (tables balanced by bytes over the parts, other files in part 1) and
// checks the joined result against one undivided run: the same members,
// every table's schema, metadata and values (references naming the same
// members), every other file byte for byte.
func TestFanOutParquet(t *testing.T) {
	t.Parallel()
	fixtures := parquetFixtureRoot(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"hf", nil},
		{"plain", []string{"--column", "jpg", "--field", "meta.thumb"}},
	} {
		t.Run(tc.name, func(t *testing.T) { fanOutParquet(t, filepath.Join(fixtures, tc.name), tc.args) })
	}
}

func fanOutParquet(t *testing.T, src string, args []string) {
	fanOutCompare(t, "convert-parquet", src, append([]string{"--yes", "--max-pack-bytes", "32KiB", "--quiet"}, args...), true)
}

// TestFanOutLerobot splits convert-lerobot of v2.0 (a file per episode and
// camera), v2.1-images (frames inside the tables) and v3.0 (files of many
// episodes, cut per episode) into parts and checks the joined result
// against one undivided run: the same members, tables and video index
// (references resolving, naming the same members), meta/ byte for byte.
func TestFanOutLerobot(t *testing.T) {
	t.Parallel()
	fixtures := lerobotFixtureRoot(t)
	for _, name := range []string{"v2.0", "v2.1-images", "v3.0"} {
		t.Run(name, func(t *testing.T) {
			fanOutCompare(t, "convert-lerobot", filepath.Join(fixtures, name), []string{"--yes", "--max-pack-bytes", "64KiB", "--quiet"}, false)
		})
	}
}

// fanOutCompare converts src with command once whole and in 2 and 3 parts
// joined by finalize, and compares every output with the whole run's: the
// members' bytes; each parquet table's values and metadata and the video
// index with the shards of references masked, every reference resolving in
// the joined packs; every other file byte for byte. With against, verify
// --against the source must find no mismatch.
func fanOutCompare(t *testing.T, command, src string, flags []string, against bool) {
	root := t.TempDir()
	one := filepath.Join(root, "one")
	if r := bp(t, append([]string{command, src, one}, flags...)...); r.code != 0 {
		t.Fatalf("whole run: %+v", r)
	}
	want := treeBytes(t, one)
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n, " parts"), func(t *testing.T) {
			dst := filepath.Join(root, fmt.Sprint("split", n))
			runParts(t, n, func(part string) []string {
				return append([]string{command, src, dst, "--part", part}, flags...)
			})
			if r := bp(t, "finalize", dst); r.code != 0 {
				t.Fatalf("finalize: %+v", r)
			}
			sameMembers(t, filepath.Join(dst, "media"), filepath.Join(one, "media"))
			got := treeBytes(t, dst)
			refs := 0
			for name, sum := range want {
				switch {
				case strings.HasPrefix(name, "media/"):
				case strings.HasSuffix(name, ".parquet"):
					a, b := tableDump(t, filepath.Join(dst, name)), tableDump(t, filepath.Join(one, name))
					if masked(a) != masked(b) {
						t.Errorf("%s differs from the whole run's:\n%s\n---\n%s", name, a, b)
					}
					if a, b := fileMeta(t, filepath.Join(dst, name)), fileMeta(t, filepath.Join(one, name)); a != b {
						t.Errorf("%s: metadata\n%s\nwhole run's:\n%s", name, a, b)
					}
					refs += refsResolve(t, dst, a)
				case name == "video_index.json":
					a, _ := os.ReadFile(filepath.Join(dst, name))
					b, _ := os.ReadFile(filepath.Join(one, name))
					if masked(string(a)) != masked(string(b)) {
						t.Errorf("%s differs from the whole run's:\n%s\n---\n%s", name, a, b)
					}
					refs += refsResolve(t, dst, string(a))
				case name == ".bpconvert.json":
					// The joined record is the whole run's plus what each
					// part contributed.
					if a, b := recordText(t, dst, n), recordText(t, one, 0); a != b {
						t.Errorf("record differs from the whole run's:\n%s\n---\n%s", a, b)
					}
				case got[name] != sum:
					t.Errorf("%s: %q, whole run %q", name, got[name], sum)
				}
			}
			if a, b := nonMedia(got), nonMedia(want); a != b {
				t.Errorf("%d files besides media/, whole run %d", a, b)
			}
			if refs == 0 {
				t.Fatal("no reference checked")
			}
			t.Logf("%d references resolve", refs)
			if r := bp(t, "verify", dst); r.code != 0 {
				t.Fatalf("verify: %+v", r)
			}
			if against {
				if r := bp(t, "verify", dst, "--against", src); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "0 mismatches") {
					t.Fatalf("verify --against: %+v", r)
				}
			}
		})
	}
}

// recordText returns the run record in dir without its per-part extents,
// after checking that there are n of them (one per part, in order, with
// consecutive shards adding up to the shards in dir/media).
func recordText(t *testing.T, dir string, n int) string {
	t.Helper()
	rec, err := converttest.Dest(t, dir).ReadRecord(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	for i, x := range rec.Parts {
		if x.Part != fmt.Sprintf("%d/%d", i+1, n) || x.First != next {
			t.Fatalf("%s: extents %+v", dir, rec.Parts)
		}
		next += x.Shards
	}
	if len(rec.Parts) != n || (n > 0 && next != len(packShards(filepath.Join(dir, "media")))) {
		t.Fatalf("%s: extents %+v for %d parts", dir, rec.Parts, n)
	}
	rec.Parts, rec.Commits = nil, nil // what each part, and the whole run's one commit, wrote
	return string(rec.Encode())
}

// nonMedia counts the files of a treeBytes map outside media/ (a split run
// may write more, smaller shards than a whole one).
func nonMedia(tree map[string]string) int {
	n := 0
	for name := range tree {
		if !strings.HasPrefix(name, "media/") {
			n++
		}
	}
	return n
}

// lanceDump scans every column the Go reader can read of a Lance table
// (blob columns aside) and renders the values as JSON text.
func lanceDump(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	ds, err := lancefmt.Open(ctx, dir, lancefmt.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, f := range ds.Schema().Fields {
		if !f.IsBlob() && ds.Schema().Unsupported[f.Name] == nil {
			cols = append(cols, f.Name)
		}
	}
	sc, err := ds.Scan(ctx, lancefmt.ScanOptions{Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "%v\n%d rows\n", cols, ds.NumRows())
	for sc.Next() {
		rec := sc.RecordBatch()
		for c := 0; c < int(rec.NumCols()); c++ {
			j, err := rec.Column(c).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			b.Write(j)
			b.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestFanOutLance splits convert-lance by fragments (binary columns of a
// two-fragment dataset with deletions, and blob v1 and v2 columns) and
// checks the joined result against one undivided run: the same members,
// the rewritten table's values with every reference naming the same member
// and resolving in the joined packs.
func TestFanOutLance(t *testing.T) {
	t.Parallel()
	fixtures := lanceFixtures(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"types_2_1", []string{"--column", "bin", "--column", "lbin"}},
		{"types_2_0", []string{"--column", "lbin"}},
		{"blob1_2_1", nil},
		{"blob2_2_2", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(fixtures, tc.name+".lance")
			root := t.TempDir()
			flags := append([]string{"--yes", "--max-pack-bytes", "16KiB", "--quiet"}, tc.args...)
			one := filepath.Join(root, "one")
			if r := bp(t, append([]string{"convert-lance", src, one}, flags...)...); r.code != 0 {
				t.Fatalf("whole run: %+v", r)
			}
			want := lanceDump(t, filepath.Join(one, "table.lance"))
			for _, n := range []int{2, 3} {
				dst := filepath.Join(root, fmt.Sprint("split", n))
				runParts(t, n, func(part string) []string {
					return append([]string{"convert-lance", src, dst, "--part", part}, flags...)
				})
				if r := bp(t, "finalize", dst); r.code != 0 {
					t.Fatalf("finalize: %+v", r)
				}
				sameMembers(t, filepath.Join(dst, "media"), filepath.Join(one, "media"))
				got := lanceDump(t, filepath.Join(dst, "table.lance"))
				if masked(got) != masked(want) {
					t.Fatalf("%d parts: table differs from the whole run's:\n%s\n---\n%s", n, got, want)
				}
				if refs := refsResolve(t, dst, got); refs == 0 && strings.Contains(want, "zip://") {
					t.Fatal("no reference checked")
				}
				if r := bp(t, "verify", dst); r.code != 0 {
					t.Fatalf("verify: %+v", r)
				}
			}
		})
	}
}
