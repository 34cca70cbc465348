package wds

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// The shards these tests read are written at test time by
// testdata/mkshards.py (Python's tarfile and GNU tar with the gzip, bzip2,
// xz and zstd tools; see its comment) into a temporary directory, once per
// test process. Expected member bytes, offsets and samples come from
// testdata/tarlist.py, which reads the shards with Python's tarfile.

var fx struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	rssChild()
	code := m.Run()
	if fx.dir != "" {
		os.RemoveAll(fx.dir)
	}
	os.Exit(code)
}

// fixtures generates the shards once and returns their directory.
func fixtures(t testing.TB) string {
	t.Helper()
	testtool.Require(t, "python3", "tar", "gzip", "bzip2", "xz", "zstd")
	fx.once.Do(func() {
		dir, err := os.MkdirTemp("", "bpconvert-wds-fixtures-")
		if err != nil {
			fx.err = err
			return
		}
		fx.dir = dir
		out, err := exec.Command("python3", filepath.Join("testdata", "mkshards.py"), dir).CombinedOutput()
		if err != nil {
			fx.err = fmt.Errorf("mkshards.py: %v\n%s", err, out)
		}
	})
	if fx.err != nil {
		t.Fatal(fx.err)
	}
	return fx.dir
}

// pyMember is one member as Python's tarfile sees it.
type pyMember struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Size     int64   `json:"size"`
	Offset   int64   `json:"offset"`
	Linkname string  `json:"linkname"`
	SHA256   *string `json:"sha256"`
}

// pySample is a sample as WebDataset's rule groups the members.
type pySample struct {
	Key    string            `json:"__key__"`
	Fields map[string]string `json:"fields"`
}

type pyShard struct {
	Members []pyMember `json:"members"`
	Samples []pySample `json:"samples"`
}

// pyList lists shards with testdata/tarlist.py.
func pyList(t *testing.T, shards ...string) map[string]pyShard {
	t.Helper()
	testtool.Require(t, "python3", "zstd")
	var out map[string]pyShard
	testtool.RunJSON(t, &out, "python3", append([]string{filepath.Join("testdata", "tarlist.py")}, shards...)...)
	return out
}

// pyStrip removes leading "./" as the converter does.
func pyStrip(name string) string {
	for strings.HasPrefix(name, "./") {
		name = strings.TrimLeft(name[2:], "/")
	}
	return name
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// checkPack checks that the pack under out/media holds exactly the
// expected members (key -> SHA-256), that packcore.Verify and unzip -t
// accept every shard.
func checkPack(t *testing.T, out string, want map[string]string) *packcore.Set {
	t.Helper()
	media := filepath.Join(out, MediaDir)
	set, err := packcore.OpenSet(media, packcore.SetOptions{})
	if err != nil {
		t.Fatalf("open pack: %v", err)
	}
	t.Cleanup(func() { set.Close() })
	if set.Len() != len(want) {
		var got []string
		for m := range set.Members() {
			got = append(got, m.Key)
		}
		sort.Strings(got)
		t.Fatalf("pack holds %d members, want %d\ngot: %q", set.Len(), len(want), got)
	}
	for key, digest := range want {
		b, err := set.Read(key)
		if err != nil {
			t.Fatalf("read %q: %v", key, err)
		}
		if got := sha(b); got != digest {
			t.Errorf("member %q: sha256 %s, want %s (Python's tarfile)", key, got, digest)
		}
	}
	rep, err := packcore.Verify(context.Background(), media)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", err, rep)
	}
	testtool.Require(t, "unzip")
	for _, sh := range set.Shards() {
		out, err := exec.Command("unzip", "-t", filepath.Join(media, sh)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "No errors detected") {
			t.Fatalf("unzip -t %s: %v\n%s", sh, err, out)
		}
	}
	return set
}

// tableRows reads samples.parquet back with arrow-go: column names and
// every row as strings (nil for null).
func tableRows(t *testing.T, path string) ([]string, [][]*string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, mem)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var cols []string
	for _, f := range rr.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	var rows [][]*string
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]*string, rec.NumCols())
			for j := 0; j < int(rec.NumCols()); j++ {
				a := rec.Column(j).(*array.String)
				if a.IsNull(i) {
					continue
				}
				v := strings.Clone(a.Value(i))
				row[j] = &v
			}
			rows = append(rows, row)
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	return cols, rows
}

// duckRows reads samples.parquet with DuckDB (fixtures/parquet/dump.mjs,
// independent of arrow-go): column names and rows as strings or nil.
func duckRows(t *testing.T, path string) ([]string, [][]*string) {
	t.Helper()
	dir := filepath.Join(testtool.RepoRoot(t), "fixtures", "parquet")
	testtool.Require(t, "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api")); err != nil {
		testtool.Missing(t, "fixtures/parquet/node_modules is missing: run npm ci --prefix fixtures/parquet")
	}
	cmd := exec.Command("node", filepath.Join(dir, "dump.mjs"), path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dump.mjs: %v\n%s", err, stderr.String())
	}
	var doc map[string]struct {
		Columns []string `json:"columns"`
		Rows    [][]any  `json:"rows"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("dump.mjs output: %v", err)
	}
	d, ok := doc[path]
	if !ok {
		t.Fatalf("dump.mjs did not report %s", path)
	}
	var rows [][]*string
	for _, r := range d.Rows {
		row := make([]*string, len(r))
		for j, v := range r {
			if v == nil {
				continue
			}
			s, ok := v.(string)
			if !ok {
				t.Fatalf("dump.mjs: value %v is not a string", v)
			}
			row[j] = &s
		}
		rows = append(rows, row)
	}
	return d.Columns, rows
}

// countingProgress records what a converter reports.
type countingProgress struct {
	items, bytes int64
	totalBytes   int64
	milestones   []string
}

func (c *countingProgress) SetTotal(items, bytes int64) { c.totalBytes = bytes }
func (c *countingProgress) Add(items, bytes int64)      { c.items += items; c.bytes += bytes }
func (c *countingProgress) Milestone(m string)          { c.milestones = append(c.milestones, m) }
