package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/objstore/s3test"
)

// fetchCellsPy writes, as remoteCellsPy does, a dataset of Image() and
// List(Image()) values whose paths are the URLs given as JSON in argv[2]
// (a null stands for a value with bytes); with argv[3] "frames" the first
// list of images holds the first URL too.
const fetchCellsPy = `
import json, os, sys
import pyarrow as pa, pyarrow.parquet as pq
from datasets import Features, Image, List, Value
out, urls = sys.argv[1], json.loads(sys.argv[2])
os.makedirs(out)
J = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"
img = [{"bytes": J + bytes([i]), "path": None} if u is None else {"bytes": None, "path": u} for i, u in enumerate(urls)]
frames = [[] for _ in urls]
if sys.argv[3:] == ["frames"]:
    frames[0] = [{"bytes": None, "path": u} for u in urls if u is not None][:1]
feats = Features({"image": Image(), "frames": List(Image()), "label": Value("int64")})
t = pa.Table.from_pydict({"image": img, "frames": frames, "label": list(range(len(urls)))}, schema=feats.arrow_schema)
pq.write_table(t, os.path.join(out, "data.parquet"))
`

// mediaServer is a loopback HTTP server of media files: /files/NAME
// answers the file's bytes (and counts the request), /missing/... 404,
// /stall/... sends half of its length and stops; under hfPrefix it
// serves /files/ to requests carrying the bearer token only.
type mediaServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

const fetchToken = "hf-secret-token-123"

func startMediaServer(t *testing.T) *mediaServer {
	m := &mediaServer{hits: map[string]int{}}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.hits[r.URL.Path]++
		m.mu.Unlock()
		p := r.URL.Path
		if rest, ok := strings.CutPrefix(p, "/datasets/org/name/resolve/rev1/"); ok {
			if r.Header.Get("Authorization") != "Bearer "+fetchToken {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
			p = "/files/" + rest
		}
		switch {
		case strings.HasPrefix(p, "/files/"):
			w.Write(mediaBytes(p))
		case strings.HasPrefix(p, "/stall/"):
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			w.Write(make([]byte, 500))
			w.(http.Flusher).Flush()
			select { // until the client gives up; bounded
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.Close)
	return m
}

// mediaBytes is the content of the file at path p: a JPEG header and p.
func mediaBytes(p string) []byte {
	return append([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), p...)
}

func (m *mediaServer) count(p string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hits[p]
}

// TestFetchRemote converts, with --fetch-remote, a dataset whose remote
// cells name a file on a loopback HTTP server (http://), one on the same
// server as the Hugging Face endpoint (hf://datasets/org/name@rev1/...,
// HF_ENDPOINT, HF_TOKEN sent as a bearer token) and an object in versitygw
// (s3://, the credentials of s3:// sources): the plan says they will be
// fetched, every reference in the output
// resolves (Python zipfile) to the bytes the server or the bucket holds,
// none is kept as a URL, no output shows the token, and verify --against
// passes, counting the fetched values. Then a cell whose
// URL answers 404 stops the conversion with exit 3 naming the row and the
// URL (its query, a signature, redacted), and one whose server stalls
// after half its body is tried 4 times (BPCONVERT_FETCH_TIMEOUT=1s) and
// stops it with exit 1.
func TestFetchRemote(t *testing.T) {
	t.Parallel()
	py := testtool.Python(t)
	srv := s3test.Start(t, "media")
	ms := startMediaServer(t)
	root := t.TempDir()
	obj := filepath.Join(root, "bucket", "images", "4.jpg")
	if err := os.MkdirAll(filepath.Dir(obj), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obj, mediaBytes("/s3/4.jpg"), 0o644); err != nil {
		t.Fatal(err)
	}
	upload(t, srv, filepath.Join(root, "bucket"), "media", "")

	write := func(name string, urls ...any) string {
		t.Helper()
		b, _ := json.Marshal(urls)
		dir := filepath.Join(root, name)
		gen := exec.Command(py, "-c", fetchCellsPy, dir, string(b), map[bool]string{true: "frames"}[name == "src"])
		gen.Env = hfEnv(t)
		if out, err := gen.CombinedOutput(); err != nil {
			t.Fatalf("writing the dataset: %v\n%s", err, out)
		}
		return dir
	}
	env := append(srv.Env(), "HF_ENDPOINT="+ms.URL, "HF_TOKEN="+fetchToken, "BPCONVERT_FETCH_TIMEOUT=1s")
	cols := []string{"--column", "image", "--column", "frames", "--yes", "--fetch-remote"}

	src := write("src", nil, ms.URL+"/files/1.jpg", "hf://datasets/org/name@rev1/images/2.jpg", nil, "s3://media/images/4.jpg")
	dst := filepath.Join(root, "out")
	r := bpS3(t, env, append([]string{"convert-parquet", src, filepath.Join(root, "plan"), "--dry-run"}, cols...)...)
	if r.code != exitOK || !strings.Contains(r.stdout, "Remote cells: 4 values in the sample") || !strings.Contains(r.stdout, "--fetch-remote fetches each") {
		t.Fatalf("plan: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = bpS3(t, env, append([]string{"convert-parquet", src, dst, "--json"}, cols...)...)
	if r.code != exitOK {
		t.Fatalf("convert-parquet --fetch-remote: exit %d: %s", r.code, r.stderr)
	}
	if doc := lastJSON(t, r); doc["blobs"] != float64(6) {
		t.Fatalf("summary: %v, want 6 blobs (2 with bytes, 4 fetched)", doc)
	}
	if strings.Contains(r.stdout+r.stderr, fetchToken) {
		t.Fatalf("the token appears in the output:\n%s%s", r.stdout, r.stderr)
	}
	read := exec.Command(py, "-c", `
import json, sys, zipfile, pyarrow.parquet as pq
root = sys.argv[1]
def load(ref):
    key, shard = ref[len("zip://"):].split("::")
    with zipfile.ZipFile(root + "/" + shard) as z:
        return z.read(key).hex()
t = pq.read_table(root + "/data.parquet")
print(json.dumps({"image": [load(v["path"]) for v in t.column("image").to_pylist()],
                  "frames": [load(v[0]["path"]) for v in t.column("frames").to_pylist()[:1]]}))
`, dst)
	out, err := read.CombinedOutput()
	if err != nil {
		t.Fatalf("reading the output: %v\n%s", err, out)
	}
	var got struct{ Image, Frames []string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	jpeg := "ffd8ffe000104a46494600"
	want := []string{jpeg + "00", fmt.Sprintf("%x", mediaBytes("/files/1.jpg")), fmt.Sprintf("%x", mediaBytes("/files/images/2.jpg")),
		jpeg + "03", fmt.Sprintf("%x", mediaBytes("/s3/4.jpg"))}
	if strings.Join(got.Image, " ") != strings.Join(want, " ") || len(got.Frames) != 1 || got.Frames[0] != want[1] {
		t.Fatalf("payloads read through the references:\n%v\n%v\nwant\n%v", got.Image, got.Frames, want)
	}
	r = bpS3(t, env, "verify", dst, "--against", src)
	if r.code != exitOK || !strings.Contains(r.stdout, "(4 fetched from their URL when converted: read back, not fetched again)") {
		t.Fatalf("verify --against: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}

	src = write("missing", nil, ms.URL+"/missing/1.jpg?X-Amz-Signature=sig-secret-456")
	r = bpS3(t, env, append([]string{"convert-parquet", src, filepath.Join(root, "out-missing")}, cols...)...)
	if r.code != exitInvalid || !strings.Contains(r.stderr, "row 1") || !strings.Contains(r.stderr, "/missing/1.jpg") || !strings.Contains(r.stderr, "404") {
		t.Fatalf("a 404: exit %d (want %d): %s", r.code, exitInvalid, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "sig-secret-456") {
		t.Fatalf("the URL's signature appears in the output: %s", r.stderr)
	}

	src = write("stall", nil, ms.URL+"/stall/1.jpg")
	start := time.Now()
	r = bpS3(t, env, append([]string{"convert-parquet", src, filepath.Join(root, "out-stall")}, cols...)...)
	if r.code != exitFailure || !strings.Contains(r.stderr, "/stall/1.jpg") || ms.count("/stall/1.jpg") != 4 {
		t.Fatalf("a stalling server: exit %d (want %d) after %d requests (want 4): %s", r.code, exitFailure, ms.count("/stall/1.jpg"), r.stderr)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("a stalling server held the conversion %v", d)
	}
}
