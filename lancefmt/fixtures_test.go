package lancefmt

import (
	"encoding/json"
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

// What gen.mjs recorded about each dataset (see testtool.LanceExpected).
type (
	expectedScan    = testtool.LanceScan
	expectedDataset = testtool.LanceExpected
)

// loadExpected reads the expectations of dataset name.
func loadExpected(t testing.TB, dir, name string) *expectedDataset {
	return testtool.LoadLanceExpected(t, dir, name)
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
