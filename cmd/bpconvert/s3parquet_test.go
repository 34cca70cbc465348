package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/stage"
)

// writeS3ParquetPy writes, with pyarrow, the parquet sources of the tests
// that read parquet from a bucket, under DIR:
//   - big/t.parquet: 512 rows of 64,000 random bytes in 16 row groups of
//     32 (32 MB), a plain-encoded page for each value, with an id and a
//     note column;
//   - multi/data/part-{0,1,2}.parquet: 40 rows of 20,000 random bytes each,
//     row groups of 10;
//   - repo/by-path.parquet: an Image() feature whose bytes are null and
//     whose path names repo/img/N.png, with the PNG files beside it and a
//     .gitattributes, as a Hugging Face repository holds them.
const writeS3ParquetPy = `
import json, os, sys, zlib, struct
import pyarrow as pa, pyarrow.parquet as pq
out = sys.argv[1]
def mk(*p):
    d = os.path.join(out, *p); os.makedirs(d, exist_ok=True); return d
rows = 512
t = pa.table({"id": pa.array(range(rows), pa.int64()),
              "blob": pa.array([os.urandom(64000) for _ in range(rows)], pa.binary()),
              "note": pa.array(["row %d" % i for i in range(rows)])})
pq.write_table(t, os.path.join(mk("big"), "t.parquet"), row_group_size=32, data_page_size=32000, write_batch_size=1, use_dictionary=["id", "note"])
for k in range(3):
    t = pa.table({"id": pa.array(range(40), pa.int64()), "blob": pa.array([os.urandom(20000) for _ in range(40)], pa.binary())})
    pq.write_table(t, os.path.join(mk("multi", "data"), "part-%d.parquet" % k), row_group_size=10)
def png(i):
    raw = b"".join(b"\x00" + bytes([i * 40 % 256, 7, 9]) * (2 + i) for _ in range(2))
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2 + i, 2, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
repo = mk("repo")
for i in range(5):
    open(os.path.join(mk("repo", "img"), "%d.png" % i), "wb").write(png(i))
img = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
hf = {"info": {"features": {"image": {"_type": "Image"}, "label": {"dtype": "int64", "_type": "Value"}}}}
t = pa.table({"image": pa.array([{"bytes": None, "path": "img/%d.png" % i} for i in range(5)], img),
              "label": pa.array(range(5), pa.int64())})
t = t.replace_schema_metadata({"huggingface": json.dumps(hf)})
pq.write_table(t, os.path.join(repo, "by-path.parquet"))
open(os.path.join(repo, ".gitattributes"), "w").write("*.parquet filter=lfs diff=lfs merge=lfs -text\n")
`

// writeS3DiskPy saves with datasets' save_to_disk, into DIR, 256 rows of
// 64,000 random bytes (a binary feature) and an id: 16 MB of Arrow IPC
// stream in record batches of 32 rows.
const writeS3DiskPy = `
import os, sys
from datasets import Dataset, Features, Value
feats = Features({"id": Value("int64"), "blob": Value("binary")})
ds = Dataset.from_dict({"id": list(range(256)), "blob": [os.urandom(64000) for _ in range(256)]}, features=feats)
ds.save_to_disk(sys.argv[1], max_shard_size="64MB")
`

// parquetSources writes the sources of the tests under a new directory:
// those of writeS3ParquetPy and, with hf, those datasets writes:
// writeS3DiskPy's (bigdisk/), and testdata/hfwrite.py's dataset
// (data.parquet and the README.md card) in repo/ and saved with
// save_to_disk in disk/.
func parquetSources(t *testing.T, hf bool) (root string) {
	t.Helper()
	py := testtool.Python(t)
	root = t.TempDir()
	if out, err := exec.Command(py, "-c", writeS3ParquetPy, root).CombinedOutput(); err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	if !hf {
		return root
	}
	disk := exec.Command(py, "-c", writeS3DiskPy, filepath.Join(root, "bigdisk"))
	disk.Env = hfEnv(t)
	if out, err := disk.CombinedOutput(); err != nil {
		t.Fatalf("datasets: %v\n%s", err, out)
	}
	gen := exec.Command(py, filepath.Join("testdata", "hfwrite.py"), filepath.Join(root, "repo"), filepath.Join(root, "disk"))
	gen.Env = hfEnv(t)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("hfwrite.py: %v\n%s", err, out)
	}
	return root
}

// dirBytes sums the sizes of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	for _, b := range localTree(t, dir) {
		n += int64(len(b))
	}
	return n
}

// TestS3Parquet converts parquet and Hugging Face sources uploaded to a
// real S3 server (versitygw) through the S3 API: a directory of one large
// table, the table as a single object, a Hugging Face repository layout
// (tables, the card, an Image() feature whose files are named by path,
// other files) and a save_to_disk directory. For each, the bucket's plan
// is the local copy's; the conversion into a local directory and into
// another bucket is byte-identical to the conversion of the local copy;
// the summary says what was fetched; verify --against the bucket's copy
// finds every payload equal; a retry is already done. The plan of the
// large table fetches its footer and the row groups it samples only, and
// a confirmed run (its plan and the conversion) fetches each byte once.
func TestS3Parquet(t *testing.T) {
	t.Parallel()
	root := parquetSources(t, true)
	srv := s3test.Start(t, "src", "dst")
	proxy := s3test.NewProxy(t, srv)
	env := srv.Env()
	for _, name := range []string{"big", "repo", "disk", "bigdisk"} {
		upload(t, srv, filepath.Join(root, name), "src", name)
	}
	hfColumns := []string{"--column", "image", "--column", "audio", "--column", "frames", "--column", "thumb"}
	// Bounds of what the dry run and the conversion fetch, for the
	// sources large enough to measure, from the source's size and what
	// its dry run fetched (5% for the HTTP bodies' own overhead).
	tables := func(size, dry int64) (int64, int64) {
		// the plan: the footer and what the sample reads, as the local
		// plan does (4.2 MB in 16 reads, by strace): a 1 MiB read at the
		// start of the blob column chunk of 4 of the 16 row groups (8
		// values each); the confirmed run: its plan, then every byte once
		// (the footer and the sample are read from what the plan fetched,
		// the column readers of a row group share what they fetch), and
		// 64 KiB for the listing
		return 5 << 20, size + 64<<10
	}
	arrow := func(size, dry int64) (int64, int64) {
		// the plan: the Arrow file whole, as the local plan reads it; the
		// conversion (--yes): its schema (a 16 KiB block) and then the
		// file once
		return size + size/20 + 64<<10, size + size/20 + 64<<10
	}
	for _, c := range []struct {
		name, rel string // rel: the source under root and under s3://src
		args      []string
		bounds    func(size, dry int64) (dryMax, runMax int64)
	}{
		{"table directory", "big", []string{"--column", "blob"}, tables},
		{"table object", "big/t.parquet", []string{"--column", "blob"}, tables},
		{"Hugging Face repository", "repo", hfColumns, nil},
		{"save_to_disk", "disk", hfColumns, nil},
		{"save_to_disk of 16 MB", "bigdisk", []string{"--column", "blob"}, arrow},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(root, filepath.FromSlash(c.rel))
			src := "s3://src/" + c.rel
			size := dirBytes(t, dir)
			if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
				size = fi.Size()
			}
			out := t.TempDir()
			run := func(env []string, args ...string) result {
				t.Helper()
				return bpS3(t, env, append(append([]string{"convert-parquet"}, args...), c.args...)...)
			}
			local := filepath.Join(out, "local")
			if r := run(nil, "--yes", "--quiet", dir, local); r.code != 0 {
				t.Fatalf("local run: %+v", r)
			}
			want := localTree(t, local)

			// The plan: the local one, from what the local plan reads.
			planDst := filepath.Join(out, "planned")
			doc, dryBytes := s3DryRun(t, srv, proxy, run, dir, src, planDst)
			fetched, requests := doc["bytes_fetched"].(float64), doc["fetch_requests"].(float64)
			t.Logf("%s: the dry run fetched %d bytes (%v by the summary, %v requests) of a %d-byte source", c.rel, dryBytes, fetched, requests, size)
			if fetched <= 0 || int64(fetched) > dryBytes {
				t.Errorf("the dry run's summary says %v bytes, the proxy sent %d", fetched, dryBytes)
			}
			var dryMax, runMax int64
			if c.bounds != nil {
				dryMax, runMax = c.bounds(size, dryBytes)
				if dryBytes > dryMax {
					t.Errorf("the dry run fetched %d bytes of a %d-byte source, bound %d", dryBytes, size, dryMax)
				}
			}

			// s3 -> local, through the proxy that counts the bytes.
			fromStore := filepath.Join(out, "fromstore")
			before := proxy.BytesSent()
			r := run(proxy.Env(srv), "--yes", "--json", src, fromStore)
			runBytes := proxy.BytesSent() - before
			if r.code != 0 {
				t.Fatalf("s3 to local: exit %d: %s", r.code, r.stderr)
			}
			m := lastJSON(t, r)
			t.Logf("%s: the conversion fetched %d bytes (%v by the summary, %v requests) of a %d-byte source", c.rel, runBytes, m["bytes_fetched"], m["fetch_requests"], size)
			if s, _ := m["source"].(string); s == "" || !strings.HasPrefix(src, s) || m["status"] != "ok" {
				t.Errorf("summary %v", m)
			}
			if c.bounds != nil && (runBytes < size || runBytes > runMax) {
				t.Errorf("the conversion fetched %d bytes of a %d-byte source, bound %d", runBytes, size, runMax)
			}
			if c.rel == "bigdisk" {
				// the confirmed run's plan read the schema only, and the
				// conversion counted the rows
				counts, _ := m["counts"].(map[string]any)
				if !strings.Contains(r.stderr, "were read for their schema only (--yes)") || counts["rows"] != float64(256) {
					t.Errorf("the plan of a confirmed run: counts %v\n%s", m["counts"], r.stderr)
				}
			}
			sameOutput(t, localTree(t, fromStore), want)
			if r := run(env, "--yes", "--json", src, fromStore); r.code != 0 || lastJSON(t, r)["status"] != "already_done" {
				t.Fatalf("retry: exit %d %s %s", r.code, r.stdout, r.stderr)
			}

			// s3 -> s3
			key := strings.ReplaceAll(c.rel, "/", "-")
			dst := "s3://dst/" + key
			if r := run(env, "--yes", "--quiet", "--staging", t.TempDir(), src, dst); r.code != 0 {
				t.Fatalf("s3 to s3: %+v", r)
			}
			sameOutput(t, storeTree(t, srv, "dst", key), want)

			// verify --against the bucket's copy, from either side.
			verifyAgainstAll(t, env, [2]string{local, src}, [2]string{dst, src})
		})
	}
}

// TestS3ParquetErrors: a missing object, a prefix holding nothing, a
// prefix without tables and a Hugging Face path naming an object that is
// not there exit 3 naming them; a missing bucket exits 2; a store that
// fails while a table is read, or that was stopped, exits 1 naming what it
// could not read, with the hint to rerun, never 3. No message carries a
// credential and no refused run writes its destination.
func TestS3ParquetErrors(t *testing.T) {
	t.Parallel()
	root := parquetSources(t, false)
	srv := s3test.Start(t, "src")
	upload(t, srv, filepath.Join(root, "big"), "src", "big")
	upload(t, srv, filepath.Join(root, "repo"), "src", "repo")
	upload(t, srv, filepath.Join(root, "repo", "img"), "src", "notables")
	upload(t, srv, filepath.Join(root, "repo"), "src", "nopng")
	if _, err := srv.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("src"), Key: aws.String("nopng/img/2.png")}); err != nil {
		t.Fatal(err)
	}
	proxy := s3test.NewProxy(t, srv)
	proxy.SetFaults(func(_ int, r *http.Request) s3test.Fault {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/big/t.parquet") {
			return s3test.Reset
		}
		return s3test.Pass
	})
	env := append(srv.Env(), "AWS_MAX_ATTEMPTS=2")
	for _, c := range []struct {
		name  string
		env   []string
		src   string
		modes []string
		code  int
		words []string
		stop  bool
	}{
		{"missing object", env, "s3://src/big/nope.parquet", nil, exitInvalid, []string{"s3://src/big/nope.parquet", "no such object"}, false},
		{"missing prefix", env, "s3://src/nothing", nil, exitInvalid, []string{"s3://src/nothing", "no such object", "no object is under"}, false},
		{"no tables", env, "s3://src/notables", nil, exitInvalid, []string{"s3://src/notables", "no *.parquet files"}, false},
		{"missing path object", env, "s3://src/nopng", []string{"--yes"}, exitInvalid, []string{"by-path.parquet", "row 2", `"img/2.png" names no file under s3://src/nopng`}, false},
		{"missing bucket", env, "s3://no-such-bucket/big", nil, exitUsage, []string{"bucket no-such-bucket does not exist"}, false},
		// the plan's reads are the conversion's first: one mode suffices
		{"reads of a table keep failing", append(proxy.Env(srv), "AWS_MAX_ATTEMPTS=2"), "s3://src/big", []string{"--yes"}, exitFailure, []string{"s3://src/big/t.parquet", "rerun the same command"}, false},
		{"server stopped", env, "s3://src/big", []string{"--yes"}, exitFailure, []string{"cannot reach the store", "rerun the same command"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.stop {
				srv.Stop()
				defer srv.Restart()
			}
			modes := c.modes
			if modes == nil {
				modes = []string{"--dry-run", "--yes"}
			}
			dst := filepath.Join(t.TempDir(), "out")
			for _, mode := range modes {
				column := "blob"
				if strings.Contains(c.src, "png") {
					column = "image"
				}
				r := bpS3(t, c.env, "convert-parquet", mode, c.src, dst, "--column", column)
				if r.code != c.code {
					t.Fatalf("%s: exit %d, want %d:\n%s", mode, r.code, c.code, r.stderr)
				}
				t.Logf("%s: %s", mode, r.stderr)
				for _, w := range c.words {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("%s: stderr does not say %q:\n%s", mode, w, r.stderr)
					}
				}
				if strings.Contains(r.stdout+r.stderr, srv.SecretKey) {
					t.Fatalf("a credential is in the output:\n%s", r.stderr)
				}
				if exists(dst) || exists(stage.Path(dst)) {
					t.Fatalf("a refused run wrote %s", dst)
				}
			}
		})
	}
}

// TestS3ParquetFanOut: a parquet source and a WebDataset in a bucket,
// converted in three parts from separate processes into another bucket
// and joined there by finalize, give the bytes of the same split of the
// local copies converted and joined locally; verify --against the
// bucket's source passes.
func TestS3ParquetFanOut(t *testing.T) {
	t.Parallel()
	root := parquetSources(t, false)
	wdsSource(t, filepath.Join(root, "wds"), 3, 8, 20_000)
	srv := s3test.Start(t, "src", "fan")
	env := srv.Env()
	upload(t, srv, filepath.Join(root, "multi"), "src", "multi")
	upload(t, srv, filepath.Join(root, "wds"), "src", "wds")
	const n = 3
	for _, c := range []struct {
		name, command, rel string
		args               []string
	}{
		{"parquet", "convert-parquet", "multi", []string{"--column", "blob"}},
		{"webdataset", "convert-wds", "wds", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			convertArgs := func(src, dst, part string, extra ...string) []string {
				return append(append([]string{c.command, "--yes", "--quiet", "--max-members", "16", src, dst, "--part", part}, c.args...), extra...)
			}
			local := filepath.Join(t.TempDir(), "local")
			runParts(t, n, func(part string) []string { return convertArgs(filepath.Join(root, c.rel), local, part) })
			if r := bp(t, "finalize", local); r.code != 0 {
				t.Fatalf("local finalize: %+v", r)
			}
			want := localTree(t, local)

			src, dst := "s3://src/"+c.rel, "s3://fan/"+c.rel
			runPartsEnv(t, env, n, func(part string) []string {
				return convertArgs(src, dst, part, "--staging", t.TempDir())
			})
			if r := bpS3(t, env, "finalize", dst); r.code != 0 {
				t.Fatalf("finalize: %+v", r)
			}
			sameOutput(t, storeTree(t, srv, "fan", c.rel), want)
			if r := bpS3(t, env, "verify", dst, "--against", src); r.code != 0 || !strings.Contains(r.stdout+r.stderr, "0 mismatches") {
				t.Fatalf("verify --against: %+v", r)
			}
		})
	}
}
