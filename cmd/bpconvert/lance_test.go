package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// The Lance fixtures are written at test time by fixtures/lance/gen.mjs with
// the real Lance library (npm @lancedb/lancedb 0.31.0, Lance core 8.0.0),
// together with Lance's own scan of them (see lance/fixtures_test.go). They
// need node and `npm ci --prefix fixtures/lance`; without them these tests
// are skipped, or fail when BPCONVERT_REQUIRE_TOOLS=1.

// lanceGen writes them, once per run of the tests (see
// testtool.Generated).
var lanceGen = testtool.Generated{Project: "lance", Script: "gen.mjs"}

// lanceFixtures returns the directory of the generated datasets.
func lanceFixtures(t *testing.T) string {
	t.Helper()
	return lanceGen.Dir(t)
}

// inspectDoc is the part of the lance-inspect JSON document the tests read.
type inspectDoc struct {
	Command       string   `json:"command"`
	OK            bool     `json:"ok"`
	Version       uint64   `json:"version"`
	LatestVersion uint64   `json:"latest_version"`
	Versions      []uint64 `json:"versions"`
	NumRows       uint64   `json:"num_rows"`
	DeletedRows   uint64   `json:"deleted_rows"`
	Fragments     []struct {
		ID          uint64 `json:"id"`
		DeletedRows uint64 `json:"deleted_rows"`
	} `json:"fragments"`
	Columns []struct {
		Path         string   `json:"path"`
		FileVersions []string `json:"file_versions"`
		Pages        int      `json:"pages"`
		Encodings    []struct {
			Encoding string `json:"encoding"`
		} `json:"page_encodings"`
	} `json:"columns"`
	Rows []map[string]json.RawMessage `json:"rows"`
}

// inspectJSON runs lance-inspect --json and decodes its one line.
func inspectJSON(t *testing.T, args ...string) *inspectDoc {
	t.Helper()
	r := bp(t, append([]string{"lance-inspect", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("lance-inspect %v: exit %d\n%s", args, r.code, r.stderr)
	}
	lastJSON(t, r) // exactly one line of JSON
	var d inspectDoc
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Command != "lance-inspect" || !d.OK {
		t.Fatalf("document says command %q ok %v", d.Command, d.OK)
	}
	return &d
}

// canonJSON re-encodes a JSON value with sorted keys and numbers as written.
func canonJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, err := json.Marshal(negZero(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// negZero replaces the number -0 (which Go writes and JavaScript's
// JSON.stringify writes as 0) by 0.
func negZero(v any) any {
	switch v := v.(type) {
	case json.Number:
		if v == "-0" {
			return json.Number("0")
		}
	case []any:
		for i := range v {
			v[i] = negZero(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = negZero(v[k])
		}
	}
	return v
}

// lanceCell turns one value printed by lance-inspect into the generator's
// canonical form: binary values to their SHA-256, 64-bit integers (kind
// "int64") to decimal strings, everything else as it is.
func lanceCell(t *testing.T, raw json.RawMessage, kind string) string {
	t.Helper()
	if string(raw) == "null" {
		return "null"
	}
	switch kind {
	case "binary":
		var b struct {
			Size   int64  `json:"size"`
			SHA256 string `json:"sha256"`
		}
		if err := json.Unmarshal(raw, &b); err != nil || b.SHA256 == "" {
			t.Fatalf("binary value %s is not {size, sha256}", raw)
		}
		return canonJSON(t, json.RawMessage(fmt.Sprintf("%q", b.SHA256)))
	case "int64":
		return canonJSON(t, json.RawMessage(fmt.Sprintf("%q", raw)))
	}
	return canonJSON(t, raw)
}

// TestLanceInspectRowsMatchLance compares the rows printed by lance-inspect
// --json with Lance's own scan, dumped by the generator, at an old version
// (before deletions) and at the latest one.
func TestLanceInspectRowsMatchLance(t *testing.T) {
	t.Parallel()
	dir := lanceFixtures(t)
	tests := []struct {
		dataset string
		version uint64 // the scan of this version is compared
		latest  bool   // inspect without --version
		columns map[string]string
	}{
		{"types_2_1", 3, false, map[string]string{"id": "int64", "i32": "", "s": "", "bin": "binary", "li": "", "st": ""}},
		{"types_2_2", 7, true, map[string]string{"id": "int64", "twice": "int64", "i8": "", "s": ""}},
		{"types_2_0", 3, false, map[string]string{"id": "int64", "u64": "int64", "lbin": "binary", "dict": "", "fsl": ""}},
		{"types_legacy", 3, false, map[string]string{"id": "int64", "f64": "", "word": ""}},
		{"nested_2_2", 2, true, map[string]string{"id": "int64", "ls": "", "ss": "", "kstr": ""}},
	}
	const rows = 300
	for _, tc := range tests {
		t.Run(tc.dataset, func(t *testing.T) {
			exp := testtool.LoadLanceExpected(t, dir, tc.dataset)
			var want map[string][]json.RawMessage
			for _, s := range exp.Scans {
				if s.Version == tc.version {
					want = s.Values
				}
			}
			if want == nil {
				t.Fatalf("the generator dumped no scan of version %d", tc.version)
			}
			var cols []string
			for c := range tc.columns {
				cols = append(cols, c)
			}
			args := []string{"--rows", fmt.Sprint(rows), "--columns", strings.Join(cols, ","), filepath.Join(dir, tc.dataset+".lance")}
			if !tc.latest {
				args = append(args, "--dataset-version", fmt.Sprint(tc.version))
			}
			d := inspectJSON(t, args...)
			if d.Version != tc.version {
				t.Fatalf("inspected version %d, want %d", d.Version, tc.version)
			}
			if len(d.Rows) != min(rows, len(want["id"])) {
				t.Fatalf("got %d rows, want %d", len(d.Rows), min(rows, len(want["id"])))
			}
			for i, row := range d.Rows {
				if len(row) != len(cols) {
					t.Fatalf("row %d has %d columns, want %d", i, len(row), len(cols))
				}
				for c, kind := range tc.columns {
					got := lanceCell(t, row[c], kind)
					if w := canonJSON(t, want[c][i]); got != w {
						t.Fatalf("row %d column %s: got %s (printed %s), Lance scanned %s", i, c, got, row[c], w)
					}
				}
			}
		})
	}
}

// TestLanceInspectVersions checks the summary figures against the
// generator's list of versions: an older version has another row count,
// and deletions are counted per fragment.
func TestLanceInspectVersions(t *testing.T) {
	t.Parallel()
	dir := lanceFixtures(t)
	ds := filepath.Join(dir, "types_2_1.lance")
	exp := testtool.LoadLanceExpected(t, dir, "types_2_1")
	latest := inspectJSON(t, ds)
	last := exp.Versions[len(exp.Versions)-1]
	if latest.Version != last.Version || latest.LatestVersion != last.Version || len(latest.Versions) != len(exp.Versions) {
		t.Fatalf("latest: version %d of %v, want %d of %d versions", latest.Version, latest.Versions, last.Version, len(exp.Versions))
	}
	if len(latest.Rows) != 0 {
		t.Fatalf("rows printed without --rows: %d", len(latest.Rows))
	}
	for _, v := range exp.Versions {
		d := inspectJSON(t, "--dataset-version", fmt.Sprint(v.Version), ds)
		if d.Version != v.Version || d.NumRows != v.Rows {
			t.Errorf("version %d: got version %d with %d rows, Lance counts %d", v.Version, d.Version, d.NumRows, v.Rows)
		}
	}
	first := inspectJSON(t, "--version", "1", ds)
	if first.NumRows == latest.NumRows || len(first.Fragments) != 1 || len(latest.Fragments) != 3 {
		t.Errorf("version 1: %d rows in %d fragments; latest: %d rows in %d fragments", first.NumRows, len(first.Fragments), latest.NumRows, len(latest.Fragments))
	}
	var deleted uint64
	for _, f := range latest.Fragments {
		deleted += f.DeletedRows
	}
	if deleted == 0 || deleted != latest.DeletedRows {
		t.Errorf("fragments delete %d rows, summary says %d", deleted, latest.DeletedRows)
	}
}

// TestLanceInspectText checks the text report of several kinds of datasets.
func TestLanceInspectText(t *testing.T) {
	t.Parallel()
	dir := lanceFixtures(t)
	tests := []struct {
		dataset string
		args    []string
		want    []string
	}{
		{"types_2_1", nil, []string{"version   7 (latest 7; versions 1-7)", "data storage version 2.1", "in 3 fragment(s)",
			"fragments:", "bitmap", "arrow", "schema:", "st.x", "li.item", "MiniBlockLayout(", "FullZipLayout(", "ConstantLayout", "twice"}},
		{"types_2_0", []string{"--dataset-version", "3"}, []string{"version   3 (latest 7; versions 1-7)", "Nullable(some)<Flat(32)>", "Binary<", "List<", "10,500 (10,500 physical, 0 deleted)"}},
		{"types_legacy", []string{"--columns", "id,s"}, []string{"0.1 (legacy)", "var_binary", "plain"}},
		{"blob1_2_0", []string{"--rows", "3"}, []string{"blob v1", "blob [blob]", "PackedStruct", "first 3 row(s)", `"kind":"inline"`}},
		{"blob2_2_2", []string{"--rows", "8"}, []string{"blob v2", "lance.blob.v2", "first 8 row(s)", `"kind":"dedicated"`, `"location":{"file":"data/`}},
	}
	for _, tc := range tests {
		t.Run(tc.dataset, func(t *testing.T) {
			ds := filepath.Join(dir, tc.dataset+".lance")
			r := bp(t, append([]string{"lance-inspect", ds}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if !strings.HasPrefix(r.stdout, "dataset   "+ds+"\n") {
				t.Errorf("report does not start with the dataset:\n%s", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("report lacks %q:\n%s", w, r.stdout)
				}
			}
			if r.stderr != "" {
				t.Errorf("stderr: %s", r.stderr)
			}
		})
	}
}

// TestLanceInspectBlobHandles checks the blob handles printed for a blob v2
// column against the payloads the generator wrote.
func TestLanceInspectBlobHandles(t *testing.T) {
	t.Parallel()
	dir := lanceFixtures(t)
	exp := testtool.LoadLanceExpected(t, dir, "blob2_2_2")
	d := inspectJSON(t, "--rows", "100", filepath.Join(dir, "blob2_2_2.lance"))
	if len(d.Rows) != len(exp.Blobs["blob"]) {
		t.Fatalf("%d rows, generator wrote %d blobs", len(d.Rows), len(exp.Blobs["blob"]))
	}
	for i, row := range d.Rows {
		want := exp.Blobs["blob"][fmt.Sprint(i)]
		if want == nil {
			if string(row["blob"]) != "null" {
				t.Errorf("row %d: got %s, want null", i, row["blob"])
			}
			continue
		}
		var h struct {
			Size     int64  `json:"size"`
			Kind     string `json:"kind"`
			Location *struct {
				File   string `json:"file"`
				Offset int64  `json:"offset"`
				Size   int64  `json:"size"`
			} `json:"location"`
		}
		if err := json.Unmarshal(row["blob"], &h); err != nil {
			t.Fatalf("row %d: %s: %v", i, row["blob"], err)
		}
		if h.Size != want.Size || h.Kind == "" || (want.Size > 0) != (h.Location != nil) {
			t.Errorf("row %d: handle %s, want size %d", i, row["blob"], want.Size)
		}
		if h.Location != nil && (h.Location.Size != want.Size || !strings.HasPrefix(h.Location.File, "data/")) {
			t.Errorf("row %d: location %+v, want %d bytes under data/", i, *h.Location, want.Size)
		}
	}
}

// TestLanceInspectErrors checks the messages and exit codes of bad input
// (3) and bad flags (2), with and without --json.
func TestLanceInspectErrors(t *testing.T) {
	t.Parallel()
	dir := lanceFixtures(t)
	ds := filepath.Join(dir, "types_2_1.lance")
	notLance := t.TempDir()
	writeTree(t, notLance, map[string]string{"data/x.lance": "not lance"})
	tests := []struct {
		name string
		args []string
		code int
		want []string // in the error message
	}{
		{"not a dataset", []string{notLance}, exitInvalid, []string{notLance, "_versions"}},
		{"missing directory", []string{filepath.Join(notLance, "nope")}, exitInvalid, []string{filepath.Join(notLance, "nope")}},
		{"unknown version", []string{ds, "--dataset-version", "99"}, exitUsage, []string{ds, "--dataset-version 99", "1-7"}},
		{"version 0", []string{ds, "--dataset-version", "0"}, exitUsage, []string{"--dataset-version 0"}},
		{"unknown column", []string{ds, "--columns", "id,nope"}, exitUsage, []string{ds, `"nope"`, "twice"}},
		{"negative rows", []string{ds, "--rows", "-1"}, exitUsage, []string{"--rows -1"}},
		{"no dataset", nil, exitUsage, []string{"expected DATASET"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := bp(t, append([]string{"lance-inspect"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", r.code, tc.code, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout: %s", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			r = bp(t, append([]string{"lance-inspect", "--json"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("--json: exit %d, want %d", r.code, tc.code)
			}
			m := lastJSON(t, r)
			if m["ok"] != false || !strings.Contains(fmt.Sprint(m["error"]), tc.want[0]) {
				t.Errorf("--json: document %v, want ok false and an error naming %q", m, tc.want[0])
			}
		})
	}
}

// TestLanceRefusedFeature: a latest version whose manifest sets a reader
// feature flag bpconvert does not support (here data overlay files, bit 6)
// is refused by lance-inspect and convert-lance with exit 3, the feature
// named in words and a hint naming the newest version that can be read.
func TestLanceRefusedFeature(t *testing.T) {
	t.Parallel()
	ds := filepath.Join(t.TempDir(), "types_2_1.lance")
	testtool.CopyTree(t, filepath.Join(lanceFixtures(t), "types_2_1.lance"), ds)
	// Version 7 is the latest: append reader_feature_flags = 64 to its
	// manifest message (the last value of a protobuf field wins).
	p := filepath.Join(ds, "_versions", "7.manifest")
	if _, err := os.Stat(p); err != nil {
		p = filepath.Join(ds, "_versions", fmt.Sprintf("%020d", ^uint64(0)-7)+".manifest")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	tail := b[len(b)-16:]
	pos := binary.LittleEndian.Uint64(tail[:8])
	n := binary.LittleEndian.Uint32(b[pos:])
	msg := append(append([]byte{}, b[pos+4:pos+4+uint64(n)]...), 9<<3, 64)
	out := append(append([]byte{}, b[:pos]...), binary.LittleEndian.AppendUint32(nil, uint32(len(msg)))...)
	out = append(append(out, msg...), tail...)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"lance-inspect", ds}, "pass --dataset-version 6 to inspect that version"},
		{[]string{"convert-lance", "--dry-run", "--column", "bin", ds, filepath.Join(t.TempDir(), "out")}, "pass --dataset-version 6 to convert that version"},
	} {
		r := bp(t, tc.args...)
		if r.code != exitInvalid {
			t.Fatalf("%s: exit %d, want %d\nstderr: %s", tc.args[0], r.code, exitInvalid, r.stderr)
		}
		for _, w := range []string{"version 7 uses data overlay files", "version 6, the newest before it without it, can be read", tc.hint} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tc.args[0], w, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "0x") {
			t.Errorf("%s: stderr has hex:\n%s", tc.args[0], r.stderr)
		}
	}
}
