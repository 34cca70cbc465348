package parquet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// The fixtures are parquet tables written by DuckDB (fixtures/parquet/gen.mjs,
// @duckdb/node-api pinned in fixtures/parquet/package.json), generated once
// per test process into a temporary directory, and read back by the same
// DuckDB through fixtures/parquet/dump.mjs.

var fixtureDir = filepath.Join("..", "..", "fixtures", "parquet")

// fixtures are the tables fixtures/parquet/gen.mjs writes with DuckDB, once
// per test process.
var fixtures = testtool.Generated{Project: "parquet", Script: "gen.mjs"}

func TestMain(m *testing.M) {
	convertChild()
	code := m.Run()
	fixtures.Cleanup()
	diskFixtures.Cleanup()
	os.Exit(code)
}

// nodeReady reports why the DuckDB fixture tools cannot run, or "".
func nodeReady() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not installed"
	}
	if _, err := os.Stat(filepath.Join(fixtureDir, "node_modules", "@duckdb", "node-api")); err != nil {
		return "fixtures/parquet/node_modules is missing: run npm ci --prefix fixtures/parquet"
	}
	return ""
}

// fixtureRoot generates the fixtures once and returns their directory.
func fixtureRoot(t testing.TB) string { return fixtures.Dir(t) }

// dumpTable is what dump.mjs reports for one file.
type dumpTable struct {
	RowGroups   []int64           `json:"row_groups"`
	Compression map[string]string `json:"compression"`
	Schema      []schemaElem      `json:"schema"`
	KV          [][2]string       `json:"kv"`
	Columns     []string          `json:"columns"`
	Rows        [][]any           `json:"rows"`
}

type schemaElem struct {
	Name           string  `json:"name"`
	Type           *string `json:"type"`
	RepetitionType *string `json:"repetition_type"`
	ConvertedType  *string `json:"converted_type"`
	NumChildren    *string `json:"num_children"`
}

// dump reads files with DuckDB.
func dump(t *testing.T, files ...string) map[string]dumpTable {
	t.Helper()
	args := append([]string{filepath.Join(fixtureDir, "dump.mjs")}, files...)
	cmd := exec.Command("node", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dump.mjs: %v: %s", err, stderr.String())
	}
	var out map[string]dumpTable
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("dump.mjs output: %v", err)
	}
	return out
}

// topLevel returns the top-level schema elements (name, repetition) in order.
func (d dumpTable) topLevel() []string {
	var out []string
	i := 1
	var skip func() // skips one element and its descendants
	skip = func() {
		n := 0
		if d.Schema[i].NumChildren != nil {
			fmt.Sscan(*d.Schema[i].NumChildren, &n)
		}
		i++
		for range n {
			skip()
		}
	}
	for i < len(d.Schema) {
		rep := ""
		if d.Schema[i].RepetitionType != nil {
			rep = *d.Schema[i].RepetitionType
		}
		out = append(out, d.Schema[i].Name+" "+rep)
		skip()
	}
	return out
}

// kv returns the value of key and how many times it occurs.
func (d dumpTable) kv(key string) (string, int) {
	v, n := "", 0
	for _, p := range d.KV {
		if p[0] == key {
			v, n = p[1], n+1
		}
	}
	return v, n
}
