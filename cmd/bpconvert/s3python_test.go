package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
	"github.com/bpconvert/bpconvert/packcore"
)

// readS3Py reads a pack directory in S3 with blobpack's PackSet (every
// member, by key and by reference) and some references through fsspec's
// zip:// over s3fs, and prints the SHA-256 of each, as JSON.
const readS3Py = `
import hashlib, json, os, sys
import blobpack, fsspec
loc, refs = sys.argv[1], json.loads(sys.argv[2])
opts = {"key": os.environ["AWS_ACCESS_KEY_ID"], "secret": os.environ["AWS_SECRET_ACCESS_KEY"],
        "client_kwargs": {"endpoint_url": os.environ["AWS_ENDPOINT_URL_S3"], "region_name": "us-east-1"}}
ps = blobpack.PackSet(loc, storage_options=opts)
out = {"packset": {}, "packset_refs": {}, "fsspec": {}}
for k in ps.keys():
    out["packset"][k] = hashlib.sha256(ps.read(k)).hexdigest()
for ref in refs:
    out["packset_refs"][ref] = hashlib.sha256(ps.read(ref)).hexdigest()
    key, shard = ref[len("zip://"):].split("::", 1)
    url = "zip://" + key + "::" + loc.rstrip("/") + "/" + shard.split("/")[-1]
    with fsspec.open(url, "rb", s3=opts) as f:
        out["fsspec"][url] = hashlib.sha256(f.read()).hexdigest()
ps.close()
print(json.dumps(out))
`

// TestPythonReadsS3Packs has Python readers that share no code with
// bpconvert read a pack it wrote, uploaded to a real S3 server: blobpack
// 0.2.0's PackSet every member, fsspec with s3fs a reference per shard,
// each byte for byte equal to the local pack's member.
func TestPythonReadsS3Packs(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	srv, _, ds := s3Dataset(t)
	set, err := packcore.OpenSet(filepath.Join(ds, "media"), packcore.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	want := map[string]string{}
	var refs []string
	seen := map[string]bool{}
	for m := range set.Members() {
		b, err := set.Read(m.Key)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		want[m.Key] = hex.EncodeToString(sum[:])
		if !seen[m.Shard] {
			seen[m.Shard] = true
			refs = append(refs, set.Ref(m))
		}
	}
	if len(refs) < 2 {
		t.Fatalf("want members in several shards, got %v", refs)
	}
	arg, _ := json.Marshal(refs)
	cmd := exec.Command(py, "-c", readS3Py, "s3://data/ds/media", string(arg))
	// The server's credentials and endpoint, without the empty AWS_PROFILE
	// that keeps this process's SDK off the shared files (botocore takes
	// an empty profile name for a profile).
	cmd.Env = append(cleanAWSEnv(), srv.Env()...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("python: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got struct {
		PackSet     map[string]string `json:"packset"`
		PackSetRefs map[string]string `json:"packset_refs"`
		Fsspec      map[string]string `json:"fsspec"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.PackSet) != len(want) {
		t.Fatalf("PackSet lists %d keys, the pack holds %d", len(got.PackSet), len(want))
	}
	for k, sum := range want {
		if got.PackSet[k] != sum {
			t.Errorf("PackSet.read(%q): sha256 %s, want %s", k, got.PackSet[k], sum)
		}
	}
	for _, ref := range refs {
		key, shard, _ := packcore.ParseRef(ref)
		url := "zip://" + key + "::s3://data/ds/media/" + filepath.Base(shard)
		if got.PackSetRefs[ref] != want[key] || got.Fsspec[url] != want[key] {
			t.Errorf("%s: PackSet sha256 %s, fsspec (%s) %s, want %s", ref, got.PackSetRefs[ref], url, got.Fsspec[url], want[key])
		}
	}
	t.Logf("PackSet read %d members, fsspec %d references, from %d shards", len(got.PackSet), len(got.Fsspec), len(refs))
}

// writeParquetPy writes a parquet table with pyarrow: a binary payload
// column of 50 random blobs (three nulls) and a string column.
const writeParquetPy = `
import os, sys
import pyarrow as pa, pyarrow.parquet as pq
blobs = [None if i % 20 == 7 else os.urandom(500 + 37 * i) for i in range(50)]
t = pa.table({"id": pa.array([str(i) for i in range(50)]), "image": pa.array(blobs, pa.binary())})
pq.write_table(t, sys.argv[1], row_group_size=16)
`

// TestS3VerifyAgainstParquet converts a parquet table written by pyarrow,
// uploads source and dataset to a real S3 server, and has verify --against
// compare every payload with the dataset, the source or both in the
// bucket; a payload changed in an uploaded copy of the source is found.
func TestS3VerifyAgainstParquet(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	srv := s3test.Start(t, "tables")
	env := srv.Env()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-c", writeParquetPy, filepath.Join(src, "part-0.parquet")).CombinedOutput(); err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	ds := filepath.Join(root, "ds")
	if r := bp(t, "convert-parquet", src, ds, "--yes", "--quiet", "--column", "image"); r.code != 0 {
		t.Fatalf("convert-parquet: %+v", r)
	}
	upload(t, srv, ds, "tables", "ds")
	upload(t, srv, src, "tables", "src")
	var requests []float64
	for _, c := range [][2]string{
		{ds, src},
		{"s3://tables/ds", src},
		{ds, "s3://tables/src"},
		{"s3://tables/ds", "s3://tables/src"},
		{"s3://tables/ds", "s3://tables/src/part-0.parquet"},
	} {
		r, d := verifyJSONEnv(t, env, c[0], "--against", c[1])
		if r.code != 0 || d.Refs != 47 || d.Against == nil || d.Against.Payloads != 47 || d.Against.Mismatches != 0 {
			t.Fatalf("verify %s --against %s: exit %d %+v %+v\n%s", c[0], c[1], r.code, d, d.Against, r.stderr)
		}
		m := lastJSON(t, bpS3(t, env, "verify", "--json", c[0], "--against", c[1]))
		t.Logf("verify %s --against %s: %v requests, %v bytes fetched", c[0], c[1], m["fetch_requests"], m["bytes_fetched"])
		n, _ := m["fetch_requests"].(float64)
		requests = append(requests, n)
	}
	// The source named as its one object costs its prefix's listing (which
	// finds nothing under it as a directory) and one HEAD: one request more
	// than the directory's listing, the reads being the same.
	if requests[4] != requests[3]+1 {
		t.Errorf("verify --against one object: %v requests, against its directory %v", requests[4], requests[3])
	}
	// A source whose row 3 payload differs: pyarrow rewrites the table.
	bad := filepath.Join(root, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	const change = `
import sys, pyarrow as pa, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
col = t.column("image").to_pylist()
col[3] = bytes([col[3][0] ^ 1]) + col[3][1:]
t = t.set_column(1, "image", pa.array(col, pa.binary()))
pq.write_table(t, sys.argv[2], row_group_size=16)
`
	if out, err := exec.Command(py, "-c", change, filepath.Join(src, "part-0.parquet"), filepath.Join(bad, "part-0.parquet")).CombinedOutput(); err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	upload(t, srv, bad, "tables", "bad")
	r, d := verifyJSONEnv(t, env, "s3://tables/ds", "--against", "s3://tables/bad")
	if r.code != 1 || d.Against == nil || d.Against.Mismatches != 1 || len(d.Problems) != 1 || d.Problems[0].Row != 3 {
		t.Fatalf("changed source: exit %d %+v %+v", r.code, d.Against, d.Problems)
	}
}
