package lance

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/convert/lance/lanceverify"
	"github.com/bpconvert/bpconvert/dsverify"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// The Lance 14 datasets are written at test time by fixtures/lance14/gen.py
// with pylance 14.0.3 (pinned in scripts/requirements/test.txt), and each
// output is read back by the same library through fixtures/lance14/check.py.
// Some name their external blobs by absolute path, so they are written
// where they stay (Local).
var pylance14Gen = testtool.Generated{Project: "lance14", Script: "gen.py", Python: true, Local: true}

// pylance14 returns the interpreter and the directory of the generated
// datasets.
func pylance14(t *testing.T) (string, string) {
	t.Helper()
	return testtool.Python(t), pylance14Gen.Dir(t)
}

// py14Check is what check.py prints.
type py14Check struct {
	Rows         int               `json:"rows"`
	Fragments    [][3]int          `json:"fragments"`
	Compared     int               `json:"compared"`
	Members      int               `json:"members"`
	Tags         map[string]uint64 `json:"tags"`
	Indices      []string          `json:"indices"`
	ReaderFlags  uint64            `json:"reader_flags"`
	SourceFlags  uint64            `json:"source_reader_flags"`
	FileVersions []string          `json:"file_versions"`
	Problems     []string          `json:"problems"`
}

// TestPylance14 converts datasets that pylance 14.0.3 wrote in the shapes
// Lance 14 users produce and checks every output with pylance 14.0.3: the
// same fragments, every kept column equal value for value, every extracted
// value's reference resolving (through the zip shard) to the source's
// bytes, the output's feature flags describing the output. Shapes bpconvert
// refuses fail with an error that says why.
func TestPylance14(t *testing.T) {
	t.Parallel()
	py, root := pylance14(t)
	cases := []struct {
		name     string
		column   string
		keep     bool   // --external keep
		version  uint64 // 0: the latest
		wantErr  string // the refusal, "" when the conversion succeeds
		compared int    // extracted values compared
		members  int    // distinct references among them
		kept     int    // values left as their external URI (keep)
		versions []string
		flags    uint64 // the output's reader feature flags
		srcFlags uint64 // the source's, when the case is about them
		lineage  bool   // _rowid and the row versions must be the source's
		kinds    map[lancefmt.BlobKind]int64
		tags     map[string]uint64
		indices  []string
		plan     []string // in the rendered plan
	}{
		{name: "types_2_0", column: "img", compared: 9, members: 9, versions: []string{"2.0"}, flags: 1},
		{name: "types_2_1", column: "img", compared: 9, members: 9, versions: []string{"2.1"}, flags: 1},
		{name: "types_2_2", column: "img", compared: 9, members: 9, versions: []string{"2.2"}, flags: 1},
		{name: "types_2_3", column: "img", wantErr: "file version 2.3 is not supported"},
		{name: "types_legacy", column: "img", compared: 6, members: 6, versions: []string{"2.0"}, flags: 1},
		{name: "blob1_2_0", column: "blob", compared: 4, members: 4, versions: []string{"2.0"}},
		{name: "blob1_2_1", column: "blob", compared: 4, members: 4, versions: []string{"2.1"}},
		{name: "blob1_2_2", column: "blob", compared: 4, members: 4, versions: []string{"2.2"}},
		{name: "blob2", column: "blob", compared: 5, members: 5, versions: []string{"2.2"},
			kinds: map[lancefmt.BlobKind]int64{lancefmt.BlobInline: 2, lancefmt.BlobPacked: 2, lancefmt.BlobDedicated: 1}},
		{name: "ext_whole", column: "blob", compared: 3, members: 2, versions: []string{"2.2"},
			kinds: map[lancefmt.BlobKind]int64{lancefmt.BlobExternal: 3}},
		{name: "ext_whole", column: "blob", keep: true, compared: 3, members: 0, kept: 3, versions: []string{"2.2"}},
		{name: "ext_ranged", column: "blob", compared: 4, members: 3, versions: []string{"2.2"}},
		{name: "ext_ranged", column: "blob", keep: true, wantErr: "is the range [100, 200) of that object, which --external keep cannot keep"},
		{name: "managed", column: "blob", compared: 4, members: 4, versions: []string{"2.2"},
			kinds: map[lancefmt.BlobKind]int64{lancefmt.BlobInline: 2, lancefmt.BlobManaged: 2}},
		{name: "managed_shared", column: "blob", compared: 5, members: 4, versions: []string{"2.2"},
			kinds: map[lancefmt.BlobKind]int64{lancefmt.BlobManaged: 5}, plan: []string{"2 rows share 1 blob"}},
		{name: "mixed", column: "img", compared: 14, members: 14, versions: []string{"2.0", "2.1", "2.2"}, flags: 1 | 0x100,
			plan: []string{"data files of file versions 2.0, 2.1, 2.2 (each kept at its own version)"}},
		{name: "kitchen", column: "img", compared: 14, members: 14, versions: []string{"2.1"}, flags: 1 | 2,
			indices: []string{"id_idx", "s_idx"}, lineage: true, plan: []string{"Stable row ids are kept: each row's _rowid is the source's"}},
		// Row lineage spilled to hidden data file columns (reader flags
		// 2050: stable row ids and spilled row lineage): the columns are
		// copied, so _rowid keeps its values, alone in a data file or not.
		{name: "spilled_lineage", column: "payload", compared: 26, members: 26, versions: []string{"2.2"}, flags: 2 | 2048, srcFlags: 2050,
			lineage: true, plan: []string{"spilled to data file columns in 1 fragment is copied"}},
		{name: "spilled_update", column: "payload", compared: 35, members: 35, versions: []string{"2.2"}, flags: 1 | 2 | 2048, srcFlags: 2051,
			lineage: true, plan: []string{"spilled to data file columns in 3 fragments is copied"}},
		{name: "tagged", column: "img", compared: 10, members: 10, versions: []string{"2.2"},
			tags: map[string]uint64{"second": 1, "also_second": 1}, plan: []string{`"first" (version 1)`, `"also_second", "second"`}},
		{name: "tagged", column: "img", version: 1, compared: 5, members: 5, versions: []string{"2.2"},
			tags: map[string]uint64{"first": 1}, plan: []string{`"also_second" (version 2), "second" (version 2)`}},
		// Data files under a second base path: the output holds them
		// under its own root.
		{name: "multibase", column: "img", compared: 9, members: 9, versions: []string{"2.1"}, flags: 1},
		// External values stored relative to a base path: copied, and
		// kept as the object's own file:// URI (the output has no base
		// paths; check.py reads the file each kept URI names).
		{name: "ext_base", column: "blob", compared: 3, members: 2, versions: []string{"2.2"},
			kinds: map[lancefmt.BlobKind]int64{lancefmt.BlobExternal: 2, lancefmt.BlobInline: 1}},
		{name: "ext_base", column: "blob", keep: true, compared: 3, members: 1, kept: 2, versions: []string{"2.2"}},
		{name: "clone", column: "img", compared: 14, members: 14, versions: []string{"2.1"}, flags: 1},
		{name: "managed_base", column: "blob", compared: 4, members: 4, versions: []string{"2.2"},
			kinds: map[lancefmt.BlobKind]int64{lancefmt.BlobInline: 2, lancefmt.BlobManaged: 2}},
	}
	for _, tc := range cases {
		name := tc.name
		if tc.keep {
			name += "/keep"
		}
		if tc.version != 0 {
			name += "/version"
		}
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(root, tc.name+".lance")
			dst := filepath.Join(t.TempDir(), "out")
			opts := Options{Columns: []string{tc.column}, Version: tc.version, Options: convert.Options{PackOptions: convert.PackOptions{MaxMembers: 1000}}}
			if tc.keep {
				opts.External = ExternalKeep
			}
			err := func() error {
				j, err := NewJob(t.Context(), src, converttest.Dest(t, dst), opts)
				if err != nil {
					return err
				}
				p, err := j.Plan(t.Context(), nil, progress.Nop{})
				if err != nil {
					return err
				}
				var text bytes.Buffer
				if err := plan.RenderText(&text, p); err != nil {
					t.Fatal(err)
				}
				for _, s := range tc.plan {
					if !strings.Contains(text.String(), s) {
						t.Errorf("plan does not say %q:\n%s", s, text.String())
					}
				}
				for k, n := range tc.kinds {
					if got := j.sel[0].ev.kinds[k]; got != n {
						t.Errorf("%d %s values, want %d", got, k, n)
					}
				}
				_, err = j.Run(t.Context(), nil)
				return err
			}()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			version := tc.version
			if version == 0 {
				ds, err := lancefmt.Open(t.Context(), src, lancefmt.OpenOptions{})
				if err != nil {
					t.Fatal(err)
				}
				version = ds.Version()
			}
			opt, _ := json.Marshal(map[string]any{"extracted": []string{tc.column}, "kept_uris": tc.keep, "lineage": tc.lineage})
			cmd := exec.Command(py, filepath.Join(testtool.RepoRoot(t), "fixtures", "lance14", "check.py"), src, strconv.FormatUint(version, 10), dst, string(opt))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("check.py: %v\n%s", err, stderr.String())
			}
			var got py14Check
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("check.py output %q: %v", out, err)
			}
			for _, p := range got.Problems {
				t.Error(p)
			}
			if got.Compared != tc.compared || got.Members != tc.members {
				t.Errorf("%d values compared through %d members, want %d through %d", got.Compared, got.Members, tc.compared, tc.members)
			}
			if !slices.Equal(got.FileVersions, tc.versions) {
				t.Errorf("output file versions %v, want %v", got.FileVersions, tc.versions)
			}
			checkFlags(t, &got, tc.flags, tc.srcFlags)
			if tc.lineage {
				// What lance-inspect shows of the source and the output:
				// every row, no hidden lineage column among the columns.
				describeAll(t, src, version, got.Rows)
				describeAll(t, filepath.Join(dst, TableDir), 1, got.Rows)
			}
			if len(got.Tags) > 0 || len(tc.tags) > 0 {
				if !reflect.DeepEqual(got.Tags, tc.tags) {
					t.Errorf("output tags %v, want %v", got.Tags, tc.tags)
				}
			}
			if !slices.Equal(got.Indices, tc.indices) && (len(got.Indices) > 0 || len(tc.indices) > 0) {
				t.Errorf("output indices %v, want %v", got.Indices, tc.indices)
			}
			// bpconvert verify --against re-reads the source with the Go
			// reader and compares every payload with its member, or a
			// kept URI with the source's (with no pack when every value
			// kept its URI).
			rep, err := dsverify.Verify(t.Context(), dst, dsverify.Options{Against: src, Comparers: []dsverify.Comparer{lanceverify.Comparer}})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.Against == nil {
				t.Fatalf("verify --against: %+v", rep)
			}
			if rep.Against.Payloads != int64(tc.compared) || rep.Against.KeptURIs != int64(tc.kept) {
				t.Errorf("verify --against compared %d payloads (%d kept URIs), want %d (%d)", rep.Against.Payloads, rep.Against.KeptURIs, tc.compared, tc.kept)
			}
		})
	}
}

// checkFlags compares the output's reader feature flags that check.py
// reports with flags, and the source's with srcFlags unless it is 0.
func checkFlags(t *testing.T, got *py14Check, flags, srcFlags uint64) {
	t.Helper()
	if got.ReaderFlags != flags {
		t.Errorf("output reader flags %d, want %d", got.ReaderFlags, flags)
	}
	if srcFlags != 0 && got.SourceFlags != srcFlags {
		t.Errorf("source reader flags %d, want %d: the fixture is not the shape the case is about", got.SourceFlags, srcFlags)
	}
}

// describeAll describes version of dir as lance-inspect --rows does and
// checks it shows rows rows and only schema columns.
func describeAll(t *testing.T, dir string, version uint64, rows int) {
	t.Helper()
	ds, err := lancefmt.Open(t.Context(), dir, lancefmt.OpenOptions{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	d, err := lancefmt.Describe(t.Context(), ds, lancefmt.DescribeOptions{Rows: rows + 1})
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	if d.NumRows != uint64(rows) || len(d.Rows) != rows {
		t.Errorf("%s: described %d rows (%d shown), want %d", dir, d.NumRows, len(d.Rows), rows)
	}
	for _, c := range d.Columns {
		if c.FieldID < 0 {
			t.Errorf("%s: described a hidden column %+v", dir, c)
		}
	}
}

// TestPylance14ManagedPastObject: a managed descriptor whose range ends past
// its object is refused with an error naming the row and the object.
func TestPylance14ManagedPastObject(t *testing.T) {
	t.Parallel()
	_, root := pylance14(t)
	src := filepath.Join(t.TempDir(), "managed_shared.lance")
	testtool.CopyTree(t, filepath.Join(root, "managed_shared.lance"), src)
	obj := filepath.Join(src, "_blobs", "0a0b0c0d-0000-4000-8000-000000000001.blob")
	if err := os.Truncate(obj, 5000); err != nil {
		t.Fatal(err)
	}
	j, err := NewJob(t.Context(), src, converttest.Dest(t, filepath.Join(t.TempDir(), "out")), Options{Columns: []string{"blob"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = j.Plan(t.Context(), nil, progress.Nop{})
	want := "row 5: corrupt data: managed blob " + obj + ": range [150, 9150) past the object's 5000 bytes"
	if !errors.Is(err, convert.ErrInvalidInput) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Plan: %v, want an invalid-input error saying %q", err, want)
	}
}
