package lance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/progress"
)

// The datasets are written at test time by fixtures/lance/gen.mjs with the
// real Lance library (npm @lancedb/lancedb 0.31.0); the converted tables are
// read back by the same library through fixtures/lance/verify.mjs.
var fixtures = testtool.Generated{Project: "lance", Script: "gen.mjs"}

func TestMain(m *testing.M) {
	convertChild()
	code := m.Run()
	fixtures.Cleanup()
	pylance14Gen.Cleanup()
	bigPylance14Gen.Cleanup()
	os.Exit(code)
}

// officialRead reads a dataset with the official Lance library.
func officialRead(t *testing.T, dir string, columns []string) *testtool.LanceRead {
	t.Helper()
	return testtool.ReadWithLance(t, dir, map[string]any{"columns": columns})
}

// sourceValues reads every value of a payload column with the Go reader:
// nil for null.
func sourceValues(t *testing.T, j *Job, c *candidate) [][]byte {
	t.Helper()
	it, err := j.iterate(t.Context(), c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out [][]byte
	for it.Next() {
		cl := it.Cell()
		if cl.null {
			out = append(out, nil)
			continue
		}
		r, err := cl.reader()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]byte{}, b...))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConvertDatasets converts Lance-written datasets at every page-copyable
// storage version and checks, with the official library, that the rewritten
// table equals the source in every kept column, that the extracted columns
// are nullable utf8 references with the blob metadata gone, and, through
// the pack, that every reference resolves to the original bytes.
func TestConvertDatasets(t *testing.T) {
	t.Parallel()
	root := fixtures.Dir(t)
	cases := []struct {
		dataset string
		columns []string // nil: the default (every blob column)
	}{
		{"types_2_0", []string{"bin", "lbin"}},
		{"types_2_1", []string{"bin", "lbin"}},
		{"types_2_2", []string{"lbin"}},
		{"blob1_2_0", nil},
		{"blob1_2_1", nil},
		{"blob2_2_2", nil},
		{"blob1_legacy", nil}, // legacy files are transcoded to 2.0
	}
	for _, tc := range cases {
		t.Run(tc.dataset, func(t *testing.T) {
			src := filepath.Join(root, tc.dataset+".lance")
			dst := filepath.Join(t.TempDir(), "out")
			j, err := NewJob(t.Context(), src, converttest.Dest(t, dst), Options{Columns: tc.columns, Options: convert.Options{PackOptions: convert.PackOptions{MaxMembers: 1000}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := j.Plan(t.Context(), nil, progress.Nop{}); err != nil {
				t.Fatal(err)
			}
			if len(j.sel) == 0 {
				t.Fatal("nothing selected")
			}
			want := map[string][][]byte{}
			extracted := map[string]bool{}
			for _, c := range j.sel {
				want[c.field.Name] = sourceValues(t, j, c)
				extracted[c.field.Name] = true
			}
			sum, err := j.Run(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Blobs == 0 || sum.Dest != dst {
				t.Fatalf("summary %+v", sum)
			}
			var kept []string
			for _, f := range j.ds.Schema().Fields {
				if !extracted[f.Name] {
					kept = append(kept, f.Name)
				}
			}
			srcRead := officialRead(t, src, kept)
			all := append(append([]string{}, kept...), j.sel[0].field.Name)
			for _, c := range j.sel[1:] {
				all = append(all, c.field.Name)
			}
			out := officialRead(t, filepath.Join(dst, TableDir), all)
			if out.NumRows != srcRead.NumRows {
				t.Fatalf("rows %d, source %d", out.NumRows, srcRead.NumRows)
			}
			for _, k := range kept {
				if !reflect.DeepEqual(out.Scan.Column(t, k), srcRead.Scan.Column(t, k)) {
					t.Errorf("kept column %s differs from the source", k)
				}
			}
			if len(out.Fields) != len(j.ds.Schema().Fields) {
				t.Fatalf("%d fields, source %d", len(out.Fields), len(j.ds.Schema().Fields))
			}
			for i, f := range out.Fields {
				if f.Name != j.ds.Schema().Fields[i].Name {
					t.Errorf("field %d is %s, source %s", i, f.Name, j.ds.Schema().Fields[i].Name)
				}
				if extracted[f.Name] {
					if f.Type != "Utf8" || !f.Nullable {
						t.Errorf("extracted %s: type %s nullable %v", f.Name, f.Type, f.Nullable)
					}
					if _, ok := f.Metadata["lance-encoding:blob"]; ok {
						t.Errorf("extracted %s keeps blob metadata", f.Name)
					}
				}
			}
			var rec Record
			if err := json.Unmarshal([]byte(out.Metadata[MetaKey]), &rec); err != nil || len(rec.Extracted) != len(j.sel) {
				t.Errorf("metadata %q: %+v %v", out.Metadata[MetaKey], rec, err)
			}
			set, err := packcore.OpenSet(filepath.Join(dst, convert.MediaDir), packcore.SetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			for name, vals := range want {
				refs := out.Scan.Column(t, name)
				if len(refs) != len(vals) {
					t.Fatalf("%s: %d references for %d values", name, len(refs), len(vals))
				}
				for row, v := range vals {
					if v == nil {
						if refs[row] != nil {
							t.Errorf("%s row %d: null became %v", name, row, refs[row])
						}
						continue
					}
					ref, _ := refs[row].(string)
					got, err := set.Read(ref)
					if err != nil {
						t.Fatalf("%s row %d: %q: %v", name, row, ref, err)
					}
					if !bytes.Equal(got, v) {
						t.Errorf("%s row %d: %d bytes through the pack, source %d", name, row, len(got), len(v))
					}
				}
			}
			if rep, err := packcore.Verify(t.Context(), filepath.Join(dst, convert.MediaDir)); err != nil || !rep.OK() {
				t.Errorf("verify: %v %v", rep, err)
			}
		})
	}
}

// TestSelection checks which columns are chosen and which requests are
// refused with a usage error naming the candidates.
func TestSelection(t *testing.T) {
	t.Parallel()
	root := fixtures.Dir(t)
	ctx := context.Background()
	types := filepath.Join(root, "types_2_1.lance")
	blob := filepath.Join(root, "blob1_2_1.lance")
	var ue *convert.UsageError

	if _, err := NewJob(ctx, types, converttest.Dest(t, t.TempDir()), Options{Columns: []string{"nope"}}); !errors.As(err, &ue) {
		t.Errorf("unknown column: %v, want a usage error", err)
	}
	if _, err := NewJob(ctx, types, converttest.Dest(t, t.TempDir()), Options{Columns: []string{"i8"}}); !errors.As(err, &ue) {
		t.Errorf("non-binary column: %v, want a usage error", err)
	}
	j, err := NewJob(ctx, types, converttest.Dest(t, t.TempDir()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.NeedChoice(); !errors.As(err, &ue) {
		t.Errorf("no blob column, none named: %v, want a usage error", err)
	}
	unplanned := filepath.Join(t.TempDir(), "out")
	j, err = NewJob(ctx, blob, converttest.Dest(t, unplanned), Options{})
	if err != nil {
		t.Fatal(err)
	}
	converttest.RunBeforePlan(t, j, unplanned)
	if err := j.NeedChoice(); err != nil {
		t.Errorf("blob column: %v", err)
	}
	p, err := j.Plan(ctx, nil, progress.Nop{})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.sel) != 1 || j.sel[0].blob != 1 || p.Entries[0].Action != "extract" {
		t.Errorf("default selection %v, plan %+v", j.sel, p.Entries)
	}
	if _, err := NewJob(ctx, blob, converttest.Dest(t, t.TempDir()), Options{Version: 99}); !errors.Is(err, convert.ErrInvalidInput) || !errors.Is(err, lancefmt.ErrVersionNotFound) {
		t.Errorf("missing version: %v", err)
	}
}
