package main

import (
	"context"
	"encoding/json"
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

// lanceMediaScript writes, with pylance 14.0.3 (the pinned test
// environment), the Lance dataset OUT that the object-storage tests read:
// 50 rows in two fragments (file version 2.2) of an id, a label, a kept
// binary column "thumb" (2 KiB each) and a blob v2 column "media" whose
// values Lance stores inline (40 bytes), in packed sidecar files (200 KiB)
// and in dedicated ones (5 MiB), with nulls and empty values; a deleted row,
// a BTREE index on id and a tag. About 18.6 MB. With a second argument
// EXT, a dataset whose blobs are files under EXT named by file:// URIs.
const lanceMediaScript = `
import os, random, sys
import lance
import pyarrow as pa
from lance import Blob, blob_array, blob_field

out = sys.argv[1]
if len(sys.argv) > 2:
    ext = os.path.abspath(sys.argv[2])
    os.makedirs(ext, exist_ok=True)
    with open(os.path.join(ext, "a.bin"), "wb") as f:
        f.write(bytes(range(256)) * 4)
    schema = pa.schema([pa.field("id", pa.int64()), blob_field("blob")])
    vals = [Blob.from_uri("file://" + os.path.join(ext, "a.bin")), None]
    t = pa.table({"id": pa.array([0, 1], pa.int64()), "blob": blob_array(vals)}, schema=schema)
    lance.write_dataset(t, out, data_storage_version="2.2", allow_external_blob_outside_bases=True)
    sys.exit(0)
rng = random.Random(23)
def vals(n0, n):
    v = []
    for i in range(n0, n0 + n):
        if i % 17 == 5:
            v.append(None)
        elif i % 17 == 6:
            v.append(b"")
        elif i % 17 == 7:
            v.append(rng.randbytes(40))
        elif i % 23 == 11:
            v.append(rng.randbytes(5 << 20))
        else:
            v.append(rng.randbytes(200 << 10))
    return v
schema = pa.schema([pa.field("id", pa.int64()), pa.field("label", pa.string()), pa.field("thumb", pa.binary()), blob_field("media")])
def table(n0, n):
    return pa.table({"id": pa.array(range(n0, n0 + n), pa.int64()), "label": pa.array(["row %d" % i for i in range(n0, n0 + n)]),
        "thumb": pa.array([rng.randbytes(2048) for _ in range(n)], pa.binary()), "media": blob_array(vals(n0, n))}, schema=schema)
lance.write_dataset(table(0, 30), out, data_storage_version="2.2")
ds = lance.write_dataset(table(30, 20), out, mode="append", data_storage_version="2.2")
ds.delete("id = 3")
ds = lance.dataset(out)
ds.create_scalar_index("id", "BTREE")
ds = lance.dataset(out)
ds.tags.create("release", ds.version)
`

// lanceSameTables compares two Lance datasets with pylance 14.0.3: schema
// and its metadata, every row, the fragments (ids, rows, physical rows),
// the tags and the indices. It prints the problems, one a line.
const lanceSameTables = `
import sys, lance
a, b = lance.dataset(sys.argv[1]), lance.dataset(sys.argv[2])
if a.schema != b.schema or a.schema.metadata != b.schema.metadata:
    print("schemas differ")
if not a.to_table().equals(b.to_table()):
    print("rows differ")
frags = lambda d: [(f.fragment_id, f.count_rows(), f.metadata.physical_rows) for f in d.get_fragments()]
if frags(a) != frags(b):
    print("fragments differ: %s, %s" % (frags(a), frags(b)))
tags = lambda d: sorted((k, v["version"]) for k, v in d.tags.list().items())
if tags(a) != tags(b):
    print("tags differ: %s, %s" % (tags(a), tags(b)))
ix = lambda d: sorted(i.name for i in d.describe_indices())
if ix(a) != ix(b):
    print("indices differ: %s, %s" % (ix(a), ix(b)))
`

// pylance runs a Python script with the pinned test environment and
// returns its output.
func pylance(t *testing.T, script string, args ...string) string {
	t.Helper()
	out, err := exec.Command(testtool.Python(t), append([]string{"-c", script}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return string(out)
}

// withoutTable drops the files of a conversion that depend on the run's
// record (the table, whose data file names it seeds, and the record).
func withoutTable(tree map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for n, b := range tree {
		if !strings.HasPrefix(n, "table.lance/") && n != ".bpconvert.json" {
			out[n] = b
		}
	}
	return out
}

// inspectOutputs runs lance-inspect with args on loc and returns its text
// and its JSON document without the fields that name the dataset or what
// reading it fetched.
func inspectOutputs(t *testing.T, env []string, loc string, args ...string) (string, map[string]any, map[string]any) {
	t.Helper()
	text := bpS3(t, env, append(append([]string{"lance-inspect"}, args...), loc)...)
	js := bpS3(t, env, append(append([]string{"lance-inspect", "--json"}, args...), loc)...)
	if text.code != 0 || js.code != 0 {
		t.Fatalf("lance-inspect %s: exit %d %s; exit %d %s", loc, text.code, text.stderr, js.code, js.stderr)
	}
	doc := lastJSON(t, js)
	fetched := map[string]any{}
	for _, k := range []string{"dataset", "seconds", "bytes_fetched", "fetch_requests"} {
		fetched[k] = doc[k]
		delete(doc, k)
	}
	return strings.Replace(text.stdout, "dataset   "+loc+"\n", "dataset   DATASET\n", 1), doc, fetched
}

// TestS3Lance reads Lance datasets uploaded to a real S3 server
// (versitygw) through the S3 API: one written by pylance 14.0.3 (blob v2
// values inline, packed and dedicated, a deletion, an index, a tag, a kept
// binary column; 18.6 MB) and two by npm @lancedb/lancedb (Lance 8): a
// blob v1 column, and a plain binary column among every type (file
// version 2.1, three fragments, earlier versions). lance-inspect prints what it prints for the local copy and fetches
// the metadata only (under 1% of the pylance dataset); the plan is the
// local plan and fetches under 10% of it; the conversion into a local
// directory and into another bucket writes the local conversion's packs
// byte for byte and a table pylance reads equal to the local one, fetching
// the dataset about once; verify --against the bucket's copy compares
// every payload; a retry is already done.
func TestS3Lance(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src", "dst")
	proxy := s3test.NewProxy(t, srv)
	env := srv.Env()
	npm := lanceFixtures(t)
	media := filepath.Join(t.TempDir(), "media.lance")
	pylance(t, lanceMediaScript, media)
	for _, c := range []struct {
		name, dir string
		args      []string
		metaOnly  bool // the plan reads descriptors and samples, not payloads
	}{
		{"media", media, nil, true},
		{"blob1_2_1", filepath.Join(npm, "blob1_2_1.lance"), nil, true},
		{"types_2_1", filepath.Join(npm, "types_2_1.lance"), []string{"--column", "bin"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			upload(t, srv, c.dir, "src", c.name+".lance")
			src := "s3://src/" + c.name + ".lance"
			size := figures(t, c.dir).bytes
			out := t.TempDir()

			// lance-inspect: the local output, from the metadata.
			for _, args := range [][]string{nil, {"--rows", "3"}} {
				lt, lj, _ := inspectOutputs(t, env, c.dir, args...)
				before := proxy.BytesSent()
				rt, rj, f := inspectOutputs(t, proxy.Env(srv), src, args...)
				sent := (proxy.BytesSent() - before) / 2 // text and JSON runs
				if rt != lt {
					t.Errorf("lance-inspect %v of the bucket's copy:\n%s\nlocal:\n%s", args, rt, lt)
				}
				if a, b := canonJSON(t, mustJSON(t, rj)), canonJSON(t, mustJSON(t, lj)); a != b {
					t.Errorf("lance-inspect --json %v of the bucket's copy differs from the local one:\n%s\n%s", args, a, b)
				}
				fetched := int64(f["bytes_fetched"].(float64))
				t.Logf("lance-inspect %v fetched %d bytes in %v requests (%d sent by the server) of %d", args, fetched, f["fetch_requests"], sent, size)
				if fetched <= 0 || fetched > sent || f["dataset"] != src {
					t.Errorf("lance-inspect %v: fetched %d bytes by its own count, %d by the server's; dataset %v", args, fetched, sent, f["dataset"])
				}
				if args == nil && c.metaOnly && fetched > size/100 {
					t.Errorf("lance-inspect fetched %d bytes of a %d-byte dataset, want at most 1%%", fetched, size)
				}
			}

			// The plan: the local one, from metadata, descriptors and samples.
			planDst := filepath.Join(out, "planned")
			doc, sent := s3DryRun(t, srv, proxy, converter(t, "convert-lance", c.args...), c.dir, src, planDst)
			fetched := int64(doc["bytes_fetched"].(float64))
			t.Logf("the plan fetched %d bytes in %v requests (%d sent) of %d", fetched, doc["fetch_requests"], sent, size)
			if fetched <= 0 || fetched > sent || c.metaOnly && fetched > size/10 || fetched > size+size/20 {
				t.Errorf("the plan fetched %d bytes (%d sent) of a %d-byte dataset", fetched, sent, size)
			}

			// s3 -> local, and the local conversion it must equal.
			local := filepath.Join(out, "local")
			if r := bp(t, append(append([]string{"convert-lance", "--yes", "--quiet"}, c.args...), c.dir, local)...); r.code != 0 {
				t.Fatalf("local run: %+v", r)
			}
			fromStore := filepath.Join(out, "fromstore")
			before := proxy.BytesSent()
			r := bpS3(t, proxy.Env(srv), append(append([]string{"convert-lance", "--yes", "--quiet", "--json"}, c.args...), src, fromStore)...)
			sent = proxy.BytesSent() - before
			if r.code != 0 {
				t.Fatalf("s3 to local: exit %d: %s", r.code, r.stderr)
			}
			m := lastJSON(t, r)
			fetched = int64(m["bytes_fetched"].(float64))
			t.Logf("the conversion fetched %d bytes in %v requests (%d sent) of %d; %v payload bytes packed", fetched, m["fetch_requests"], sent, size, m["bytes"])
			if fetched > sent || fetched < int64(m["bytes"].(float64)) || fetched > size+size/20+64<<10 || m["source"] != src || m["status"] != "ok" {
				t.Errorf("the conversion fetched %d bytes (%d sent) of a %d-byte dataset; summary %v", fetched, sent, size, m)
			}
			want := localTree(t, local)
			sameOutput(t, withoutTable(localTree(t, fromStore)), withoutTable(want))
			if p := pylance(t, lanceSameTables, filepath.Join(local, "table.lance"), filepath.Join(fromStore, "table.lance")); p != "" {
				t.Errorf("pylance finds the table converted from the bucket different from the local one:\n%s", p)
			}
			if r := bpS3(t, env, append(append([]string{"convert-lance", "--yes", "--json"}, c.args...), src, fromStore)...); r.code != 0 || lastJSON(t, r)["status"] != "already_done" {
				t.Fatalf("retry: exit %d %s %s", r.code, r.stdout, r.stderr)
			}

			// s3 -> s3: the same bytes as s3 -> local (the same run record).
			dst := "s3://dst/" + c.name
			if r := bpS3(t, env, append(append([]string{"convert-lance", "--yes", "--quiet", "--staging", t.TempDir()}, c.args...), src, dst)...); r.code != 0 {
				t.Fatalf("s3 to s3: %+v", r)
			}
			sameOutput(t, storeTree(t, srv, "dst", c.name), localTree(t, fromStore))

			// verify of the table alone is refused, in the bucket as on
			// disk, naming the dataset to verify instead.
			for _, root := range []string{fromStore, dst} {
				r := bpS3(t, env, "verify", root+"/table.lance")
				if want := "is a table, not a dataset: its references name shards of the dataset that holds it; verify that dataset (bpconvert verify " + root + ")"; r.code != exitUsage || !strings.Contains(r.stderr, want) {
					t.Errorf("verify of %s/table.lance: exit %d: %s", root, r.code, r.stderr)
				}
			}

			// verify --against the bucket's copy, from either side (both
			// sides in a bucket only for the slower types dataset).
			pairs := [][2]string{{dst, src}}
			if c.metaOnly {
				pairs = append(pairs, [2]string{local, src}, [2]string{dst, c.dir})
			}
			verifyAgainstAll(t, env, pairs...)
		})
	}
}

// mustJSON re-encodes a decoded JSON document.
func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestS3LanceErrors: a Lance dataset in a bucket that is missing, or whose
// data file is, exits 3 naming it; one whose blobs are local files named
// by file:// URIs is refused (exit 3) naming the file; a missing bucket
// exits 2; a stopped server exits 1 with the hint to rerun; no message
// carries the secret key.
func TestS3LanceErrors(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src")
	root := t.TempDir()
	ds := filepath.Join(lanceFixtures(t), "blob1_2_1.lance")
	upload(t, srv, ds, "src", "nodata.lance")
	data := ""
	for name := range localTree(t, ds) {
		if strings.HasPrefix(name, "data/") {
			data = name
		}
	}
	if _, err := srv.Client().DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("src"), Key: aws.String("nodata.lance/" + data)}); err != nil {
		t.Fatal(err)
	}
	ext := filepath.Join(root, "ext.lance")
	pylance(t, lanceMediaScript, ext, filepath.Join(root, "external"))
	upload(t, srv, ext, "src", "ext.lance")
	out := filepath.Join(root, "out")
	down := append(srv.Env(), "AWS_MAX_ATTEMPTS=2")
	for _, c := range []struct {
		name  string
		env   []string
		args  []string
		code  int
		words []string
		stop  bool
	}{
		{"missing dataset", srv.Env(), []string{"convert-lance", "--yes", "s3://src/nope.lance", out}, exitInvalid, []string{"s3://src/nope.lance", "no Lance dataset there"}, false},
		{"inspect missing dataset", srv.Env(), []string{"lance-inspect", "s3://src/nope.lance"}, exitInvalid, []string{"s3://src/nope.lance holds no objects"}, false},
		{"missing data file", srv.Env(), []string{"convert-lance", "--yes", "s3://src/nodata.lance", out}, exitInvalid, []string{"s3://src/nodata.lance/" + data}, false},
		{"external blob", srv.Env(), []string{"convert-lance", "--yes", "s3://src/ext.lance", out}, exitInvalid, []string{filepath.Join(root, "external", "a.bin"), "outside s3://src/ext.lance"}, false},
		{"missing bucket", srv.Env(), []string{"convert-lance", "--yes", "s3://no-such-bucket/x.lance", out}, exitUsage, []string{"bucket no-such-bucket does not exist"}, false},
		{"inspect missing bucket", srv.Env(), []string{"lance-inspect", "s3://no-such-bucket/x.lance"}, exitUsage, []string{"bucket no-such-bucket does not exist"}, false},
		{"server stopped", down, []string{"convert-lance", "--yes", "s3://src/nodata.lance", out}, exitFailure, []string{"cannot reach the store", "rerun the same command"}, true},
		{"inspect server stopped", down, []string{"lance-inspect", "s3://src/nodata.lance"}, exitFailure, []string{"cannot reach the store"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.stop {
				srv.Stop()
			}
			r := bpS3(t, c.env, c.args...)
			if r.code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", r.code, c.code, r.stderr)
			}
			for _, w := range c.words {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr+r.stdout, srv.SecretKey) {
				t.Fatal("output carries the secret key")
			}
			if exists(out) || exists(stage.Path(out)) {
				t.Fatalf("%s left after a failed run", out)
			}
		})
	}
}

// TestS3LerobotLance converts the Lance-stored twins of the LeRobot v3.0
// dataset of camera files of noisy frames (fixtures/lance14/lerobot.py,
// pylance 14.0.3: the camera files inline in the data file, or packed and
// dedicated into sidecar files) uploaded to a real S3 server: the plan is
// the local one and fetches under 10% of the twin (the tables' metadata
// and rows, meta/, the MP4 boxes); the conversion into a local directory
// and into another bucket is byte-identical to the conversion of the local
// twin (packs, tables, meta/ and video index) and fetches the twin about
// once (each blob's reads stay inside it: 5% allowed for the blocks the
// plan read before, and 64 KiB for the listing); verify --against the
// bucket's twin compares the camera files packed whole.
func TestS3LerobotLance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("converts videos; skipped with -short")
	}
	srv := s3test.Start(t, "src", "dst")
	proxy := s3test.NewProxy(t, srv)
	env := srv.Env()
	v3 := filepath.Join(lerobotBig.Dir(t), "v3.0")
	var sizes []int64
	for name, b := range localTree(t, filepath.Join(v3, "videos")) {
		if strings.HasSuffix(name, ".mp4") {
			sizes = append(sizes, int64(len(b)))
		}
	}
	if len(sizes) < 2 {
		t.Fatalf("%d camera files in %s", len(sizes), v3)
	}
	lo, hi := sizes[0], sizes[0]
	for _, s := range sizes {
		lo, hi = min(lo, s), max(hi, s)
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		// Every camera file inline in the data file of videos.lance.
		{"inline", []string{"--blob-thresholds", itoa(hi+1) + "," + itoa(hi+2)}},
		// The smaller files packed into one sidecar, the largest in one of its own.
		{"sidecars", []string{"--blob-thresholds", itoa(lo-1) + "," + itoa(hi-1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			twin := filepath.Join(t.TempDir(), "twin")
			testtool.LeRobotLance(t, v3, twin, c.args...)
			upload(t, srv, twin, "src", c.name)
			src := "s3://src/" + c.name
			fig := figures(t, twin)
			out := t.TempDir()

			local := filepath.Join(out, "local")
			if r := bp(t, "convert-lerobot", "--yes", "--quiet", twin, local); r.code != 0 {
				t.Fatalf("local run: %+v", r)
			}
			want := localTree(t, local)

			planDst := filepath.Join(out, "planned")
			doc, sent := s3DryRun(t, srv, proxy, converter(t, "convert-lerobot"), twin, src, planDst)
			fetched := int64(doc["bytes_fetched"].(float64))
			t.Logf("%s: the plan fetched %d bytes (%d sent) of a %d-byte twin in %d files", c.name, fetched, sent, fig.bytes, fig.videos+fig.others)
			if fetched <= 0 || fetched > sent || fetched > fig.bytes/10 {
				t.Errorf("the plan fetched %d bytes (%d sent) of a %d-byte twin", fetched, sent, fig.bytes)
			}

			fromStore := filepath.Join(out, "fromstore")
			before := proxy.BytesSent()
			r := bpS3(t, proxy.Env(srv), "convert-lerobot", "--yes", "--json", src, fromStore)
			sent = proxy.BytesSent() - before
			if r.code != 0 {
				t.Fatalf("s3 to local: exit %d: %s", r.code, r.stderr)
			}
			m := lastJSON(t, r)
			fetched = int64(m["bytes_fetched"].(float64))
			t.Logf("%s: the conversion fetched %d bytes in %v requests (%d sent) of a %d-byte twin", c.name, fetched, m["fetch_requests"], sent, fig.bytes)
			if fetched > sent || fetched > fig.bytes+fig.bytes/20+listings || m["source"] != src || m["status"] != "ok" {
				t.Errorf("the conversion fetched %d bytes (%d sent) of a %d-byte twin; summary %v", fetched, sent, fig.bytes, m)
			}
			sameOutput(t, localTree(t, fromStore), want)

			dst := "s3://dst/" + c.name
			if r := bpS3(t, env, "convert-lerobot", "--yes", "--quiet", "--staging", t.TempDir(), src, dst); r.code != 0 {
				t.Fatalf("s3 to s3: %+v", r)
			}
			sameOutput(t, storeTree(t, srv, "dst", c.name), want)

			verifyAgainstAll(t, env, [2]string{local, src}, [2]string{dst, src})
		})
	}
}

// TestS3FanOutLance splits convert-lance of a Lance dataset in a bucket by
// fragments (a binary column of three fragments with deletions) into two
// parts run by separate processes; finalize, which writes the table from
// the source the parts name, reads it from the bucket too. The joined
// result holds the members of the undivided local run and a table of the
// same values, every reference resolving in the joined packs.
func TestS3FanOutLance(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t, "src")
	env := srv.Env()
	local := filepath.Join(lanceFixtures(t), "types_2_1.lance")
	upload(t, srv, local, "src", "types.lance")
	root := t.TempDir()
	flags := []string{"--yes", "--max-pack-bytes", "16KiB", "--quiet", "--column", "bin"}
	one := filepath.Join(root, "one")
	if r := bp(t, append([]string{"convert-lance", local, one}, flags...)...); r.code != 0 {
		t.Fatalf("whole run: %+v", r)
	}
	want := lanceDump(t, filepath.Join(one, "table.lance"))
	dst := filepath.Join(root, "split")
	runPartsEnv(t, env, 2, func(part string) []string {
		return append([]string{"convert-lance", "s3://src/types.lance", dst, "--part", part}, flags...)
	})
	if r := bpS3(t, env, "finalize", dst); r.code != 0 {
		t.Fatalf("finalize: %+v", r)
	}
	sameMembers(t, filepath.Join(dst, "media"), filepath.Join(one, "media"))
	got := lanceDump(t, filepath.Join(dst, "table.lance"))
	if masked(got) != masked(want) {
		t.Fatalf("the joined table differs from the whole run's:\n%s\n---\n%s", got, want)
	}
	if refs := refsResolve(t, dst, got); refs == 0 {
		t.Fatal("no reference checked")
	}
	if r := bpS3(t, env, "verify", dst, "--against", "s3://src/types.lance"); r.code != 0 {
		t.Fatalf("verify: %+v", r)
	}
}
