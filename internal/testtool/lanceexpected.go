package testtool

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// LanceScan is Lance's scan of one version of a dataset gen.mjs wrote.
type LanceScan struct {
	Version uint64                       `json:"version"`
	NumRows int                          `json:"numRows"`
	Types   map[string]string            `json:"types"`
	Values  map[string][]json.RawMessage `json:"values"`
}

// LanceBlob is the size and SHA-256 of one blob payload.
type LanceBlob struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// LanceExpected is what gen.mjs recorded about one dataset: its storage
// version, its versions with their row counts, Lance's scans (values in
// canonical JSON) and blob digests (by column, then row).
type LanceExpected struct {
	StorageVersion string `json:"storageVersion"`
	Versions       []struct {
		Version uint64 `json:"version"`
		Rows    uint64 `json:"rows"`
	} `json:"versions"`
	Scans []LanceScan                      `json:"scans"`
	Blobs map[string]map[string]*LanceBlob `json:"blobs"`
	// ScansFrom names the dataset whose scans hold this one's values too
	// (the small datasets write equal scans once); LoadLanceExpected
	// reads them from there.
	ScansFrom string `json:"scansFrom"`
}

// LoadLanceExpected reads dir/NAME.json.gz, what gen.mjs recorded about
// dataset name.
func LoadLanceExpected(t testing.TB, dir, name string) *LanceExpected {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name+".json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var e LanceExpected
	if err := json.NewDecoder(zr).Decode(&e); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if e.ScansFrom != "" && e.ScansFrom != name {
		e.Scans = LoadLanceExpected(t, dir, e.ScansFrom).Scans
	}
	return &e
}

// ReadWithLance reads the Lance dataset dir with the official library:
// fixtures/lance/verify.mjs (node; the document it prints holds the
// schema, the row count, a scan of the columns opts names and the
// indices), run with opts as JSON, its output decoded into v. A read that
// fails fails the test, with the end of what the script printed on
// stderr.
func ReadWithLance(t testing.TB, dir string, opts, v any) {
	t.Helper()
	Require(t, "node")
	o, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(RepoRoot(t), "fixtures", "lance")
	cmd := exec.Command("node", filepath.Join(gen, "verify.mjs"), dir, string(o))
	cmd.Dir = gen
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		t.Fatalf("lance cannot read %s: verify.mjs: %v\n%s", dir, err, strings.Join(lines, "\n"))
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("verify.mjs %s: %v", dir, err)
	}
}
