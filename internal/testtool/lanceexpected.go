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

// LanceRead is what fixtures/lance/verify.mjs prints: Lance's own view of
// a dataset (see ReadWithLance).
type LanceRead struct {
	NumRows  int               `json:"numRows"`
	Fields   []LanceField      `json:"fields"`
	Metadata map[string]string `json:"metadata"`
	// Scan holds the columns the options named (all when none).
	Scan    *LanceScan   `json:"scan"`
	Indices []LanceIndex `json:"indices"`
	// Knn is there when the options named a vector column.
	Knn *struct {
		Indexed []string `json:"indexed"` // ids found through the index
		Flat    []string `json:"flat"`    // ids found by a flat search
	} `json:"knn"`
}

// LanceField is one top-level field as Lance reports it.
type LanceField struct {
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Nullable bool              `json:"nullable"`
	Metadata map[string]string `json:"metadata"`
}

// LanceIndex is one index with its statistics.
type LanceIndex struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Columns       []string `json:"columns"`
	IndexedRows   *int     `json:"indexedRows"`
	UnindexedRows *int     `json:"unindexedRows"`
}

// Column returns the scanned values of column, decoded from their
// canonical JSON (nil for a null; gen.mjs describes the forms).
func (s *LanceScan) Column(t testing.TB, column string) []any {
	t.Helper()
	raws := s.Values[column]
	out := make([]any, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("column %s, row %d: %v", column, i, err)
		}
	}
	return out
}

// ReadWithLance reads the Lance dataset dir with the official library:
// fixtures/lance/verify.mjs (node), run with opts as JSON ({"columns":
// [...], "vector": {"column": ..., "k": ...}}). A read that fails fails
// the test, with the end of what the script printed on stderr.
func ReadWithLance(t testing.TB, dir string, opts any) *LanceRead {
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
	var r LanceRead
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("verify.mjs %s: %v", dir, err)
	}
	if r.Scan == nil {
		r.Scan = &LanceScan{}
	}
	return &r
}
