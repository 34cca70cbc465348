package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/lancefmt"
)

// TestOneVersion: the version `bpconvert version` prints is the one every
// output records: the bpconvert metadata of a convert-parquet table, the
// run record, convert-lance's schema metadata and the writer of its Lance
// manifest. Checked for a build with -ldflags -X main.version (what make
// build sets from git describe on a tagged checkout) and for a plain build
// of an untagged checkout, which says "(devel)" everywhere.
func TestOneVersion(t *testing.T) {
	t.Parallel()
	pqRoot := parquetFixtureRoot(t)
	lanceRoot := lanceFixtures(t)
	const tag = "v9.8.7-2-gabcdef0-dirty"
	tagged := filepath.Join(t.TempDir(), "bpconvert")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version="+tag, "-o", tagged, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name, bin, want string
	}{
		{"untagged", binPath, "(devel)"},
		{"ldflags", tagged, tag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(args ...string) []byte {
				t.Helper()
				var so, se bytes.Buffer
				cmd := exec.Command(tc.bin, args...)
				cmd.Stdout, cmd.Stderr = &so, &se
				if err := cmd.Run(); err != nil {
					t.Fatalf("%v: %v\n%s", args, err, se.String())
				}
				return so.Bytes()
			}
			var v struct {
				Version string `json:"version"`
			}
			if err := json.Unmarshal(run("version", "--json"), &v); err != nil || v.Version != tc.want {
				t.Fatalf("version --json: %q, %v; want %q", v.Version, err, tc.want)
			}
			if out := string(run("version")); out[:len("bpconvert "+tc.want+" (")] != "bpconvert "+tc.want+" (" {
				t.Fatalf("version prints %q, want it to start with bpconvert %s", out, tc.want)
			}

			pq := filepath.Join(t.TempDir(), "pq")
			run("convert-parquet", filepath.Join(pqRoot, "plain"), pq, "--yes", "--quiet", "--column", "jpg")
			pf, err := file.OpenParquetFile(filepath.Join(pq, "part-00000.parquet"), false)
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Close()
			meta := pf.MetaData().KeyValueMetadata().FindValue("bpconvert")
			if meta == nil {
				t.Fatal("table has no bpconvert metadata")
			}
			var rec struct {
				Version string `json:"version"`
			}
			if err := json.Unmarshal([]byte(*meta), &rec); err != nil || rec.Version != tc.want {
				t.Errorf("table metadata records version %q (%v), want %q", rec.Version, err, tc.want)
			}
			if r, err := converttest.Dest(t, pq).ReadRecord(t.Context()); err != nil || r.Version != tc.want {
				t.Errorf("run record: %+v, %v; want version %q", r, err, tc.want)
			}

			lc := filepath.Join(t.TempDir(), "lc")
			run("convert-lance", filepath.Join(lanceRoot, "blob1_2_1.lance"), lc, "--yes", "--quiet")
			ds, err := lancefmt.Open(context.Background(), filepath.Join(lc, "table.lance"), lancefmt.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if m := ds.Manifest(); m.WriterLibrary != "bpconvert" || m.WriterVersion != tc.want {
				t.Errorf("Lance manifest writer %q %q, want bpconvert %q", m.WriterLibrary, m.WriterVersion, tc.want)
			}
			if err := json.Unmarshal(ds.Schema().Metadata["bpconvert"], &rec); err != nil || rec.Version != tc.want {
				t.Errorf("Lance schema metadata records version %q (%v), want %q", rec.Version, err, tc.want)
			}
		})
	}
}
