package lancefmt

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// The fixtures are Lance datasets written at test time by
// fixtures/lance/gen.mjs with the real Lance library (npm @lancedb/lancedb
// 0.31.0, Lance core 8.0.0), together with Lance's own scan of them. They
// need node and `npm ci --prefix fixtures/lance`; without them the tests
// that use them are skipped, unless BPCONVERT_REQUIRE_TOOLS=1 (as in CI),
// which turns the skip into a failure.

// lanceGen writes the fixtures, once per run of the tests (see
// testtool.Generated).
var lanceGen = testtool.Generated{Project: "lance", Script: "gen.mjs"}

// repoRoot finds the module root above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// fixtures returns the directory holding the generated datasets.
func fixtures(t testing.TB) string {
	t.Helper()
	return lanceGen.Dir(t)
}

// committedFixtures returns testdata/lance: small datasets written by
// `node fixtures/lance/gen.mjs --small` and committed with Lance's scan of
// them (testdata/README.md), so that the decoders are tested without node.
func committedFixtures(testing.TB) string {
	return filepath.Join("testdata", "lance")
}

// fixtureSets are the two sources of Lance-written datasets the
// value-for-value tests run on: the committed small ones, always, and the
// ones gen.mjs writes at test time, when node is available.
var fixtureSets = []struct {
	name string
	dir  func(testing.TB) string
}{
	{"committed", committedFixtures},
	{"generated", fixtures},
}

func TestMain(m *testing.M) {
	code := m.Run()
	lanceGen.Cleanup()
	os.Exit(code)
}

// expectedScan is Lance's scan of one dataset version.
type expectedScan struct {
	Version uint64                       `json:"version"`
	NumRows int                          `json:"numRows"`
	Types   map[string]string            `json:"types"`
	Values  map[string][]json.RawMessage `json:"values"`
}

// expectedBlob is the size and SHA-256 of one blob payload.
type expectedBlob struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// expectedDataset is what gen.mjs wrote for one dataset.
type expectedDataset struct {
	StorageVersion string `json:"storageVersion"`
	Versions       []struct {
		Version uint64 `json:"version"`
		Rows    uint64 `json:"rows"`
	} `json:"versions"`
	Scans []expectedScan                      `json:"scans"`
	Blobs map[string]map[string]*expectedBlob `json:"blobs"`
	// ScansFrom names the dataset whose scans hold this one's values too
	// (the small datasets write equal scans once).
	ScansFrom string `json:"scansFrom"`
}

// loadExpected reads the expectations of dataset name.
func loadExpected(t testing.TB, dir, name string) *expectedDataset {
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
	var e expectedDataset
	if err := json.NewDecoder(zr).Decode(&e); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if e.ScansFrom != "" && e.ScansFrom != name {
		e.Scans = loadExpected(t, dir, e.ScansFrom).Scans
	}
	return &e
}

// datasetNames lists the generated datasets.
func datasetNames(t testing.TB, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Datasets []string `json:"datasets"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Datasets) == 0 {
		t.Fatal("generator wrote no dataset")
	}
	return idx.Datasets
}
