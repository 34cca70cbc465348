package lerobot

// The datasets these tests convert are generated once per test binary by
// fixtures/parquet/lerobot.mjs (ffmpeg CLI for the camera files, DuckDB for
// the tables; the script says how each one is made) into a temporary
// directory, and read back with ffprobe and DuckDB (fixtures/parquet/dump.mjs),
// tools independent of the code under test.

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// fixtures are the datasets fixtures/parquet/lerobot.mjs writes (ffmpeg CLI
// videos, DuckDB tables), once per test process.
var fixtures = testtool.Generated{Project: "parquet", Script: "lerobot.mjs", Need: []string{"ffmpeg", "ffprobe"}}

func TestMain(m *testing.M) {
	code := m.Run()
	fixtures.Cleanup()
	removeTwins()
	os.Exit(code)
}

// nodeProject is the pinned Node project holding the generator.
func nodeProject(t testing.TB) string {
	return filepath.Join(testtool.RepoRoot(t), "fixtures", "parquet")
}

// fixtureRoot generates the datasets once and returns their directory.
func fixtureRoot(t testing.TB) string { return fixtures.Dir(t) }

// dataset returns the path of a generated dataset (read only).
func dataset(t testing.TB, name string) string {
	return filepath.Join(fixtureRoot(t), name)
}

// copyDataset copies a generated dataset into a new temporary directory
// that the test may change.
func copyDataset(t testing.TB, name string) string {
	t.Helper()
	src := dataset(t, name)
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// editFile rewrites a file of a copied dataset.
func editFile(t testing.TB, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	after := edit(string(b))
	if after == string(b) {
		t.Fatalf("edit of %s changed nothing", path)
	}
	if err := os.WriteFile(path, []byte(after), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fileSHA(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// treeSums maps every regular file under dir (slash-separated relative
// path) to its SHA-256.
func treeSums(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = fileSHA(t, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ffprobeTimeBase returns the first video stream's time base as num, den.
func ffprobeTimeBase(t testing.TB, path string) (int64, int64) {
	t.Helper()
	out := strings.TrimSpace(testtool.Run(t, "ffprobe", "-v", "error", "-select_streams", "v:0",
		"-show_entries", "stream=time_base", "-of", "csv=p=0", path))
	a, b, _ := strings.Cut(out, "/")
	num, err1 := strconv.ParseInt(a, 10, 64)
	den, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || num <= 0 || den <= 0 {
		t.Fatalf("ffprobe %s: time base %q", path, out)
	}
	return num, den
}

// dumpTable is what dump.mjs (DuckDB) reports for one parquet file.
type dumpTable struct {
	KV      [][2]string `json:"kv"`
	Columns []string    `json:"columns"`
	Rows    [][]any     `json:"rows"`
}

// col returns the index of a column, failing t when absent.
func (d dumpTable) col(t testing.TB, name string) int {
	t.Helper()
	for i, c := range d.Columns {
		if c == name {
			return i
		}
	}
	t.Fatalf("no column %q in %v", name, d.Columns)
	return -1
}

// dump reads parquet files with DuckDB.
func dump(t testing.TB, files ...string) map[string]dumpTable {
	t.Helper()
	var out map[string]dumpTable
	testtool.RunJSON(t, &out, "node", append([]string{filepath.Join(nodeProject(t), "dump.mjs")}, files...)...)
	return out
}
