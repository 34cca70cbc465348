package parquet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/stage"
)

// The save_to_disk fixtures are Arrow IPC files written by Arrow JS beside
// the JSON files datasets writes (fixtures/parquet/hfdisk.mjs, apache-arrow
// pinned in fixtures/parquet/package.json), generated once per test
// process. The sources are read back by Arrow JS (dumparrow.mjs), the
// converted tables by DuckDB (dump.mjs).

var diskFixtures = testtool.Generated{Project: "parquet", Script: "hfdisk.mjs"}

func diskRoot(t testing.TB) string { return diskFixtures.Dir(t) }

// arrowDump is what dumparrow.mjs reports for one file.
type arrowDump struct {
	Batches []int64     `json:"batches"`
	KV      [][2]string `json:"kv"`
	Columns []string    `json:"columns"`
	Rows    [][]any     `json:"rows"`
}

// dumpArrow reads Arrow files with Arrow JS.
func dumpArrow(t *testing.T, files ...string) map[string]arrowDump {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(fixtureDir, "dumparrow.mjs")}, files...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dumparrow.mjs: %v: %s", err, stderr.String())
	}
	var out map[string]arrowDump
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("dumparrow.mjs output: %v", err)
	}
	return out
}

func TestHFDiskConvert(t *testing.T) {
	t.Parallel()
	root := diskRoot(t)
	cases := []struct {
		name      string
		src       string
		columns   []string
		fields    [][]string
		wantPaths []string
		tables    []string // output tables
		infos     []string // rewritten dataset_info.json files (golden)
		opts      Options
	}{
		{
			name:      "single dataset, media features by default",
			src:       "single",
			wantPaths: []string{"audio", "frames", "image"},
			tables:    []string{"data-00000-of-00002.arrow", "data-00001-of-00002.arrow"},
			infos:     []string{"dataset_info.json"},
		},
		{
			name:      "dataset dict, two splits, binary column and list selected",
			src:       "dict",
			columns:   []string{"raw", "frames"},
			wantPaths: []string{"frames", "raw"},
			tables:    []string{"test/data-00000-of-00001.arrow", "train/data-00000-of-00002.arrow", "train/data-00001-of-00002.arrow"},
			infos:     []string{"test/dataset_info.json", "train/dataset_info.json"},
		},
		{
			name:      "dataset dict, default selection, small shards",
			src:       "dict",
			wantPaths: []string{"audio", "frames", "image"},
			tables:    []string{"test/data-00000-of-00001.arrow", "train/data-00000-of-00002.arrow", "train/data-00001-of-00002.arrow"},
			infos:     []string{"test/dataset_info.json", "train/dataset_info.json"},
			opts:      Options{Options: convert.Options{PackOptions: convert.PackOptions{MaxPackBytes: 4 << 10}}},
		},
		{
			name:      "arrow file format",
			src:       "filefmt",
			columns:   []string{"image"},
			wantPaths: []string{"image"},
			tables:    []string{"data-00000-of-00001.arrow"},
			infos:     []string{"dataset_info.json"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join(root, tc.src)
			o := tc.opts
			o.Media = MediaString // the save_to_disk output is checked with references as strings
			ins, sel, res, opts, dst := convertChecked(t, src, o, tc.columns, tc.fields, tc.wantPaths)
			if res.Rewritten != len(tc.tables) || res.Copied != 0 {
				t.Errorf("rewrote %d and copied %d tables, want %d and 0", res.Rewritten, res.Copied, len(tc.tables))
			}
			if opts.MaxPackBytes > 0 && res.Pack.Shards < 2 {
				t.Errorf("%d shards with MaxPackBytes %d, want several", res.Pack.Shards, opts.MaxPackBytes)
			}
			if res.Pack.GroupsSplit != 0 {
				t.Errorf("%d placement groups split across shards", res.Pack.GroupsSplit)
			}
			refs := checkDiskOutput(t, src, dst, ins, sel, tc.tables)
			if int64(refs) != res.Pack.Members {
				t.Errorf("tables hold %d references, packs hold %d members", refs, res.Pack.Members)
			}
			for _, info := range tc.infos {
				b, err := os.ReadFile(filepath.Join(dst, info))
				if err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", "hfdisk", tc.src+"-"+strings.Join(tc.wantPaths, "-")+"-"+strings.ReplaceAll(info, "/", "-")+".golden"), string(b))
			}
		})
	}
}

// checkDiskOutput checks a converted save_to_disk dataset against its
// source: exactly the tables (Arrow IPC streams at the same paths) and the
// other files, state.json and dataset_dict.json among them; every table's
// record batches, columns, rows and metadata, read by Arrow JS, against
// the source read by Arrow JS; every reference resolving
// to the source's bytes under the expected key. It returns the number of
// references.
func checkDiskOutput(t *testing.T, src, dst string, ins *Inspection, sel Selection, tables []string) int {
	t.Helper()
	if _, err := os.Stat(stage.Path(dst)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging directory left behind: %v", err)
	}
	var files []string
	err := filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		if rel = filepath.ToSlash(rel); !strings.HasPrefix(rel, MediaDir+"/") && rel != convert.RecordName {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	want = append(want, tables...)
	want = append(want, ins.Others...)
	slices.Sort(want)
	slices.Sort(files)
	if !slices.Equal(files, want) {
		t.Errorf("output files %v, want %v", files, want)
	}

	set, err := packcore.OpenSet(filepath.Join(dst, MediaDir), packcore.SetOptions{})
	if err != nil {
		t.Fatalf("OpenSet: %v", err)
	}
	defer set.Close()
	rep, err := packcore.Verify(context.Background(), filepath.Join(dst, MediaDir))
	if err != nil || !rep.OK() {
		t.Errorf("verify: %v %v", err, rep.Problems)
	}
	unzipTest(t, filepath.Join(dst, MediaDir))

	var in, out []string
	for _, tb := range ins.Tables {
		in = append(in, filepath.Join(ins.Root, filepath.FromSlash(tb.Rel)))
		out = append(out, filepath.Join(dst, filepath.FromSlash(tb.OutRel)))
	}
	ind, outd := dumpArrow(t, in...), dumpArrow(t, out...)
	refs := 0
	for i, tb := range ins.Tables {
		a, b := ind[in[i]], outd[out[i]]
		if !slices.Equal(a.Batches, b.Batches) {
			t.Errorf("%s: record batches of %v rows, source %v", tb.Rel, b.Batches, a.Batches)
		}
		refs += checkDiskTable(t, tb, src, sel.Paths, a, dumpTable{KV: b.KV, Columns: b.Columns, Rows: b.Rows}, set)
	}
	return refs
}

// checkDiskTable compares one Arrow table with its conversion (read by
// Arrow JS too).
func checkDiskTable(t *testing.T, tb *Table, root string, paths [][]string, in arrowDump, out dumpTable, set *packcore.Set) int {
	t.Helper()
	rel := tb.Rel
	if !slices.Equal(in.Columns, out.Columns) {
		t.Errorf("%s: columns %v, want %v", rel, out.Columns, in.Columns)
	}
	if len(out.Rows) != len(in.Rows) || int64(len(in.Rows)) != tb.Rows {
		t.Fatalf("%s: %d rows, source %d, inspected %d", rel, len(out.Rows), len(in.Rows), tb.Rows)
	}
	if len(in.Batches) < 2 {
		t.Errorf("%s: %d record batches in the fixture, want several", rel, len(in.Batches))
	}
	for _, key := range []string{HFKey, MetaKey} {
		if _, n := out.kv(key); n != 1 {
			t.Errorf("%s: %q metadata appears %d times, want once", rel, key, n)
		}
	}
	var srcHF string
	for _, p := range in.KV {
		if p[0] == HFKey {
			srcHF = p[1]
		}
	}
	wantHF, err := rewriteHF(srcHF, featureEdit{strings: paths})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := out.kv(HFKey); got != wantHF {
		t.Errorf("%s: huggingface metadata\n%s\nwant\n%s", rel, got, wantHF)
	}
	var doc struct {
		Info struct {
			Features map[string]json.RawMessage `json:"features"`
		} `json:"info"`
	}
	if v, _ := out.kv(HFKey); json.Unmarshal([]byte(v), &doc) != nil {
		t.Fatalf("%s: huggingface metadata is not JSON", rel)
	}
	str := `{"dtype":"string","_type":"Value"}`
	for _, p := range paths {
		want := str
		if p[0] == "frames" {
			want = `{"feature":` + str + `,"_type":"Sequence"}`
		}
		if !jsonEqual(doc.Info.Features[p[0]], []byte(want)) {
			t.Errorf("%s: feature %s = %s, want %s", rel, p[0], doc.Info.Features[p[0]], want)
		}
	}
	recJSON, _ := out.kv(MetaKey)
	var rec TableRecord
	if err := json.Unmarshal([]byte(recJSON), &rec); err != nil || rec.PackBase != MediaDir || len(rec.Extracted) != len(paths) || rec.SourceSchema == "" {
		t.Errorf("%s: bpconvert metadata %s (err %v)", rel, recJSON, err)
	}

	selHere := map[string][]string{}
	for _, p := range paths {
		selHere[p[0]] = p[1:]
	}
	key := strings.TrimSuffix(rel, ".arrow")
	refs := 0
	for r := range in.Rows {
		for c, col := range in.Columns {
			rest, sel := selHere[col]
			iv, ov := in.Rows[r][c], out.Rows[r][c]
			if !sel {
				if !reflect.DeepEqual(iv, ov) {
					t.Fatalf("%s: row %d column %s: %v, want %v", rel, r, col, ov, iv)
				}
				continue
			}
			prefix := fmt.Sprintf("%s/%s/%012d", dotted(append([]string{col}, rest...)), key, r)
			n, err := checkValue(iv, ov, rest, prefix, root, set)
			if err != nil {
				t.Fatalf("%s: row %d column %s: %v", rel, r, col, err)
			}
			refs += n
		}
	}
	return refs
}

// TestHFDiskPlanGolden renders the plan of the DatasetDict fixture as text
// and JSON and compares them with golden files (refresh with -update).
func TestHFDiskPlanGolden(t *testing.T) {
	t.Parallel()
	root := diskRoot(t)
	ins, err := Inspect(context.Background(), filepath.Join(root, "dict"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ins.Select(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := ins.Plan(sel, "/DST")
	var text, js bytes.Buffer
	if err := plan.RenderText(&text, p); err != nil {
		t.Fatal(err)
	}
	if err := plan.RenderJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	for ext, got := range map[string]string{"txt": text.String(), "json": js.String()} {
		golden(t, filepath.Join("testdata", "hfdisk-dict."+ext+".golden"), strings.ReplaceAll(got, root, "SRC"))
	}
}

// TestHFDiskJob drives the converter contract the CLI uses: a --dry-run
// --json plan that parses back and writes nothing, then the run, with a
// run record committed beside the output.
func TestHFDiskJob(t *testing.T) {
	t.Parallel()
	root := diskRoot(t)
	ctx := context.Background()
	src := filepath.Join(root, "dict")
	dst := filepath.Join(t.TempDir(), "out")
	rec := diskRecord(t, src, convert.Part{})
	job, err := NewJob(ctx, src, converttest.Dest(t, dst), Options{Columns: []string{"image"}, Options: convert.Options{PackOptions: convert.PackOptions{Record: rec}}})
	if err != nil {
		t.Fatal(err)
	}
	converttest.RunBeforePlan(t, job, dst)
	p, err := job.Plan(ctx, nil, progress.Nop{})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := plan.RenderJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	back, err := plan.ParseJSON(&js)
	if err != nil {
		t.Fatalf("plan JSON: %v", err)
	}
	if back.Source.Format != "Hugging Face save_to_disk (Arrow IPC)" || back.Dest != dst {
		t.Errorf("source %+v, dest %s", back.Source, back.Dest)
	}
	actions := map[string]plan.Action{}
	for _, e := range back.Entries {
		actions[e.Name] = e.Action
	}
	want := map[string]plan.Action{"image": plan.ActionExtract, "audio": plan.ActionSkip, "frames": plan.ActionSkip, "raw": plan.ActionSkip,
		"*.arrow": plan.ActionRewrite, "other files": plan.ActionCopy}
	if !reflect.DeepEqual(actions, want) {
		t.Errorf("plan entries %v, want %v", actions, want)
	}
	var layout []string
	for _, o := range back.Layout {
		layout = append(layout, o.Path)
	}
	if wantLayout := []string{"media/pack-NNNN.zip", "train/data-00000-of-00002.arrow", "train/data-00001-of-00002.arrow", "test/data-00000-of-00001.arrow", "(other files)"}; !slices.Equal(layout, wantLayout) {
		t.Errorf("layout %v, want %v", layout, wantLayout)
	}
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("planning wrote the destination")
	}
	sum, err := job.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Format != back.Source.Format || sum.Blobs != 24 {
		t.Errorf("summary %+v, want 24 blobs (the images with bytes)", sum)
	}
	got, err := converttest.Dest(t, dst).ReadRecord(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := rec.Diff(got); len(d) > 0 {
		t.Errorf("committed record differs: %v", d)
	}
}

// diskRecord is the run record the CLI would write for src and part p.
func diskRecord(t *testing.T, src string, p convert.Part) *convert.Record {
	t.Helper()
	sources, err := convert.IdentifyPaths(context.Background(), []string{src})
	if err != nil {
		t.Fatal(err)
	}
	part := ""
	if !p.Whole() {
		part = p.String()
	}
	return &convert.Record{Tool: "bpconvert", Version: "test", Command: "convert-parquet",
		Options: map[string]string{convert.PartOption: part}, Sources: sources}
}

// TestHFDiskParts converts the DatasetDict in 2 and 3 parts (tables
// balanced by bytes, other files in part 1), joins them with Finalize and
// checks the joined output like an undivided one.
func TestHFDiskParts(t *testing.T) {
	t.Parallel()
	root := diskRoot(t)
	ctx := context.Background()
	src := filepath.Join(root, "dict")
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n, " parts"), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "out")
			var ins *Inspection
			var sel Selection
			for i := 1; i <= n; i++ {
				p := convert.Part{I: i, N: n}
				opts := Options{Media: MediaString, Options: convert.Options{ToolVersion: "test", PackOptions: convert.PackOptions{Part: p, Record: diskRecord(t, src, p), MaxPackBytes: 8 << 10}}}
				var err error
				if ins, err = Inspect(ctx, src, opts); err != nil {
					t.Fatal(err)
				}
				if sel, err = ins.Select(nil, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := Convert(ctx, ins, sel, converttest.Dest(t, dst), opts, nil); err != nil {
					t.Fatalf("part %s: %v", p, err)
				}
			}
			res, err := convert.Finalize(ctx, converttest.Dest(t, dst), convert.FinalizeOptions{Joiners: func(string) (func(string) convert.TableJoiner, bool) {
				return func(rel string) convert.TableJoiner {
					if strings.HasSuffix(rel, ".arrow") {
						return JoinArrowTable
					}
					return nil
				}, true
			}})
			if err != nil {
				t.Fatalf("Finalize: %v", err)
			}
			if res.Parts != n {
				t.Errorf("joined %d parts, want %d", res.Parts, n)
			}
			refs := checkDiskOutput(t, src, dst, ins, sel, []string{"test/data-00000-of-00001.arrow", "train/data-00000-of-00002.arrow", "train/data-00001-of-00002.arrow"})
			if int64(refs) != res.Members {
				t.Errorf("tables hold %d references, packs hold %d members", refs, res.Members)
			}
		})
	}
}

func TestHFDiskBadInput(t *testing.T) {
	t.Parallel()
	root := diskRoot(t)
	cut := func(rel string, keep func(n int) int) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, rel)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b[:keep(len(b))], 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write := func(rel, data string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, rel), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name     string
		src      string
		change   func(t *testing.T, dir string)
		wantText []string
	}{
		{"stream cut in a record batch", "single", cut("data-00001-of-00002.arrow", func(n int) int { return n / 2 }),
			[]string{"data-00001-of-00002.arrow", "record batch"}},
		{"stream cut at a message boundary", "single", cut("data-00001-of-00002.arrow", func(n int) int { return n - 8 }),
			[]string{"data-00001-of-00002.arrow", "row 9: record batch 2", "end-of-stream marker"}},
		{"stream cut in its schema", "single", cut("data-00000-of-00002.arrow", func(int) int { return 100 }),
			[]string{"data-00000-of-00002.arrow", "not a readable Arrow IPC stream"}},
		{"empty data file", "single", cut("data-00000-of-00002.arrow", func(int) int { return 0 }),
			[]string{"data-00000-of-00002.arrow", "not a readable Arrow IPC stream"}},
		{"file format without its footer", "filefmt", cut("data-00000-of-00001.arrow", func(n int) int { return n - 10 }),
			[]string{"data-00000-of-00001.arrow", "not a readable Arrow IPC file"}},
		{"state.json names a missing file", "single", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "data-00001-of-00002.arrow")); err != nil {
				t.Fatal(err)
			}
		}, []string{"state.json", `"data-00001-of-00002.arrow", which does not exist`}},
		{"state.json names a file outside", "single", write("state.json", `{"_data_files": [{"filename": "../x.arrow"}]}`),
			[]string{"state.json", `"../x.arrow"`}},
		{"state.json is not JSON", "single", write("state.json", `{"_data_files": [`),
			[]string{"state.json", "not a save_to_disk state"}},
		{"state.json names no file", "single", write("state.json", `{"_data_files": []}`),
			[]string{"state.json", "names no data file"}},
		{"schema differs between files", "badschema", nil,
			[]string{"data-00001-of-00002.arrow", "schema differs from data-00000-of-00002.arrow's", "caption"}},
		{"both state.json and dataset_dict.json", "single", write("dataset_dict.json", `{"splits": ["train"]}`),
			[]string{"dataset_dict.json", "both state.json"}},
		{"parquet beside save_to_disk files", "single", write("extra.parquet", "PAR1"),
			[]string{"extra.parquet", "save_to_disk"}},
		{"split without its directory", "dict", write("dataset_dict.json", `{"splits": ["train", "test", "validation"]}`),
			[]string{"dataset_dict.json", `split "validation"`}},
		{"split name with a separator", "dict", write("dataset_dict.json", `{"splits": ["train", "../test"]}`),
			[]string{"dataset_dict.json", `"../test"`}},
		{"arrow files without state.json", "single", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "state.json")); err != nil {
				t.Fatal(err)
			}
		}, []string{"no *.parquet files", "state.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			src := filepath.Join(t.TempDir(), "src")
			testtool.CopyTree(t, filepath.Join(root, tc.src), src)
			if tc.change != nil {
				tc.change(t, src)
			}
			opts := Options{Allocator: mem}
			dst := filepath.Join(t.TempDir(), "out")
			err := func() error {
				ins, err := Inspect(context.Background(), src, opts)
				if err != nil {
					return err
				}
				sel, err := ins.Select(nil, nil)
				if err != nil {
					return err
				}
				_, err = Convert(context.Background(), ins, sel, converttest.Dest(t, dst), opts, nil)
				return err
			}()
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %q does not wrap ErrInvalidInput", err)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if msg := err.Error(); msg != strings.TrimSuffix(msg, ".") || strings.ToLower(msg[:1]) != msg[:1] {
				t.Errorf("error %q: want lowercase without a final period", msg)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("destination exists after the error (stat: %v)", err)
			}
		})
	}
}

// TestHFDiskCutEverywhere cuts a data file at every 64th byte: each cut is
// refused with an error naming the file, without a panic or a leak.
func TestHFDiskCutEverywhere(t *testing.T) {
	t.Parallel()
	root := diskRoot(t)
	for _, name := range []string{"single/data-00001-of-00002.arrow", "filefmt/data-00000-of-00001.arrow"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(b); n += 64 {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			p := filepath.Join(t.TempDir(), "t.arrow")
			if err := os.WriteFile(p, b[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			err := readAllArrow(p, int64(n), mem)
			if err == nil || !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "t.arrow") {
				t.Errorf("%s cut at %d of %d: error %v", name, n, len(b), err)
			}
			mem.AssertSize(t, 0)
		}
	}
}

// readAllArrow reads every record batch of an Arrow file.
func readAllArrow(p string, size int64, mem memory.Allocator) error {
	r, err := openArrow(filepath.Base(p), p, size, mem)
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err != nil || rec == nil {
			return err
		}
		rec.Release()
	}
}

// FuzzHFDiskArrow reads mutated Arrow IPC data files (seeded from the
// fixtures, stream and file format): an input error or a clean read, never
// a crash, and no leak after a clean read. (When arrow-go panics while
// building a batch from a bad message, which the reader turns into an
// error, the message's body is not released to the allocator; with Go's
// allocator the collector frees it.)
func FuzzHFDiskArrow(f *testing.F) {
	root := diskRoot(f)
	for _, name := range []string{"single/data-00001-of-00002.arrow", "dict/test/data-00000-of-00001.arrow", "filefmt/data-00000-of-00001.arrow"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "t.arrow")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		err := readAllArrow(p, int64(len(b)), mem)
		if err != nil && !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("error %v is not an input error", err)
		}
		if err == nil {
			mem.AssertSize(t, 0)
		}
	})
}
