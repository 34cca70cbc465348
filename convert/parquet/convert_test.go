package parquet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// convertCase is one conversion of a fixture dataset and what to expect.
type convertCase struct {
	name    string
	src     string // relative to the fixture root
	columns []string
	fields  [][]string
	// wantPaths are the selected paths (dotted) Select must return.
	wantPaths []string
	// hf maps table → feature name → the expected rewritten feature JSON.
	hf map[string]map[string]string
	// rewritten and copied count tables.
	rewritten, copied int
	others            []string
	opts              Options
}

func TestParquetConvert(t *testing.T) {
	t.Parallel()
	root := fixtureRoot(t)
	str := `{"dtype":"string","_type":"Value"}`
	cases := []convertCase{
		{
			name:      "hf default selection",
			src:       "hf",
			wantPaths: []string{"audio", "frames", "image"},
			hf: map[string]map[string]string{
				"data/train-00000-of-00001.parquet": {
					"image":   `{"_type":"Image"}`,
					"label":   `{"names":["a","b","c","d","e","f","g"],"_type":"ClassLabel"}`,
					"caption": str,
					"id":      `{"dtype":"int64","_type":"Value"}`,
				},
				"data/audio/clips.parquet": {"audio": `{"sampling_rate":8000,"_type":"Audio"}`, "text": str},
				"data/frames/seq.parquet":  {"frames": `{"feature":{"_type":"Image"},"_type":"Sequence"}`},
				"data/frames/list.parquet": {"frames": `{"feature":{"_type":"Image"},"_type":"List"}`},
			},
			rewritten: 4,
			others:    []string{"README.md", "dataset_info.json", "images/extra-0001.png", "images/extra-0002.jpg"},
		},
		{
			name:      "hf default selection as strings",
			src:       "hf",
			wantPaths: []string{"audio", "frames", "image"},
			hf: map[string]map[string]string{
				"data/train-00000-of-00001.parquet": {"image": str, "caption": str},
				"data/audio/clips.parquet":          {"audio": str, "text": str},
				"data/frames/seq.parquet":           {"frames": `{"feature":` + str + `,"_type":"Sequence"}`},
				"data/frames/list.parquet":          {"frames": `{"feature":` + str + `,"_type":"List"}`},
			},
			rewritten: 4,
			others:    []string{"README.md", "dataset_info.json", "images/extra-0001.png", "images/extra-0002.jpg"},
			opts:      Options{Media: MediaString},
		},
		{
			name:      "hf one column, small shards",
			src:       "hf",
			columns:   []string{"frames"},
			wantPaths: []string{"frames"},
			hf: map[string]map[string]string{
				"data/frames/seq.parquet": {"frames": `{"feature":{"_type":"Image"},"_type":"Sequence"}`},
			},
			rewritten: 2,
			copied:    2,
			others:    []string{"README.md", "dataset_info.json", "images/extra-0001.png", "images/extra-0002.jpg"},
			opts:      Options{Options: convert.Options{PackOptions: convert.PackOptions{MaxPackBytes: 4 << 10}}},
		},
		{
			name:      "plain binary, nested field and list",
			src:       "plain",
			columns:   []string{"jpg", "extras"},
			fields:    [][]string{{"meta", "thumb"}},
			wantPaths: []string{"extras", "jpg", "meta.thumb"},
			rewritten: 1,
		},
		{
			name:      "pages larger than 1 MiB, uncompressed and zstd",
			src:       "large",
			columns:   []string{"image"},
			wantPaths: []string{"image"},
			rewritten: 2,
			opts:      Options{BatchRows: 5},
		},
		{
			name:      "ARROW:schema replaced, large_binary",
			src:       "arrowschema",
			columns:   []string{"image", "raw"},
			wantPaths: []string{"image", "raw"},
			hf: map[string]map[string]string{
				"t.parquet": {"image": `{"_type":"Image"}`, "raw": str, "id": `{"dtype":"int64","_type":"Value"}`},
			},
			rewritten: 1,
		},
		{
			name:      "many other column types unchanged, list inside a struct",
			src:       "types",
			columns:   []string{"b"},
			fields:    [][]string{{"st", "y"}},
			wantPaths: []string{"b", "st.y"},
			rewritten: 1,
		},
		{
			name:      "a table without rows",
			src:       "empty",
			wantPaths: []string{"image"},
			rewritten: 2,
		},
		{
			name:      "plain, tiny batches",
			src:       "plain/part-00000.parquet",
			columns:   []string{"jpg"},
			wantPaths: []string{"jpg"},
			rewritten: 1,
			opts:      Options{BatchRows: 7},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runConvertCase(t, root, tc)
		})
	}
}

// convertChecked inspects src, checks that the selection of columns and
// fields is wantPaths (dotted, sorted) and converts it into a new directory,
// with a checked allocator that must end with nothing allocated. It returns
// the options used and the output directory.
func convertChecked(t *testing.T, src string, opts Options, columns []string, fields [][]string, wantPaths []string) (*Inspection, Selection, *Result, Options, string) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	opts.Allocator = mem
	opts.ToolVersion = "test"
	ctx := context.Background()
	ins, err := Inspect(ctx, src, opts)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	sel, err := ins.Select(columns, fields)
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	var got []string
	for _, p := range sel.Paths {
		got = append(got, dotted(p))
	}
	slices.Sort(got)
	if !slices.Equal(got, wantPaths) {
		t.Fatalf("selected %v, want %v", got, wantPaths)
	}
	dst := filepath.Join(t.TempDir(), "out")
	res, err := Convert(ctx, ins, sel, converttest.Dest(t, dst), opts, nil)
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	return ins, sel, res, opts, dst
}

func runConvertCase(t *testing.T, root string, tc convertCase) {
	src := filepath.Join(root, tc.src)
	ctx := context.Background()
	ins, sel, res, opts, dst := convertChecked(t, src, tc.opts, tc.columns, tc.fields, tc.wantPaths)
	if res.Rewritten != tc.rewritten || res.Copied != tc.copied {
		t.Errorf("rewrote %d and copied %d tables, want %d and %d", res.Rewritten, res.Copied, tc.rewritten, tc.copied)
	}
	if _, err := os.Stat(stage.Path(dst)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging directory left behind: %v", err)
	}

	// Other files: copied byte for byte.
	for _, o := range tc.others {
		want, err := os.ReadFile(filepath.Join(src, o))
		if err != nil {
			t.Fatal(err)
		}
		gotb, err := os.ReadFile(filepath.Join(dst, o))
		if err != nil || string(gotb) != string(want) {
			t.Errorf("%s not copied unchanged (err %v)", o, err)
		}
	}
	if !slices.Equal(ins.Others, tc.others) && !(len(ins.Others) == 0 && len(tc.others) == 0) {
		t.Errorf("other files %v, want %v", ins.Others, tc.others)
	}

	set, err := packcore.OpenSet(filepath.Join(dst, MediaDir), packcore.SetOptions{})
	if err != nil {
		t.Fatalf("OpenSet: %v", err)
	}
	defer set.Close()
	if set.Len() != int(res.Pack.Members) {
		t.Errorf("pack set has %d members, writer reported %d", set.Len(), res.Pack.Members)
	}
	rep, err := packcore.Verify(ctx, filepath.Join(dst, MediaDir))
	if err != nil || !rep.OK() {
		t.Errorf("verify: %v %v", err, rep.Problems)
	}
	if opts.MaxPackBytes > 0 {
		if res.Pack.Shards < 2 {
			t.Errorf("%d shards with MaxPackBytes %d, want several", res.Pack.Shards, opts.MaxPackBytes)
		}
	}
	unzipTest(t, filepath.Join(dst, MediaDir))

	// Every table, read back by DuckDB.
	var files []string
	for _, tb := range ins.Tables {
		files = append(files, filepath.Join(ins.Root, filepath.FromSlash(tb.Rel)), filepath.Join(dst, filepath.FromSlash(tb.Rel)))
	}
	dumps := dump(t, files...)
	refs := 0
	for _, tb := range ins.Tables {
		in := dumps[filepath.Join(ins.Root, filepath.FromSlash(tb.Rel))]
		out := dumps[filepath.Join(dst, filepath.FromSlash(tb.Rel))]
		refs += checkTable(t, tb.Rel, ins.Root, sel.Paths, in, out, set, tc.hf[tb.Rel])
	}
	if int64(refs) != res.Pack.Members {
		t.Errorf("tables hold %d references, packs hold %d members", refs, res.Pack.Members)
	}
	// One placement group per row: all payloads of a row share a shard.
	if res.Pack.GroupsSplit != 0 {
		t.Errorf("%d placement groups split across shards", res.Pack.GroupsSplit)
	}
}

// checkTable compares a table with its conversion and returns how many
// references it checked.
func checkTable(t *testing.T, rel, root string, paths [][]string, in, out dumpTable, set *packcore.Set, hf map[string]string) int {
	t.Helper()
	if !slices.Equal(in.RowGroups, out.RowGroups) {
		t.Errorf("%s: row groups %v, want %v", rel, out.RowGroups, in.RowGroups)
	}
	if !slices.Equal(in.Columns, out.Columns) {
		t.Errorf("%s: columns %v, want %v", rel, out.Columns, in.Columns)
	}
	if !slices.Equal(in.topLevel(), out.topLevel()) {
		t.Errorf("%s: top-level fields %v, want %v", rel, out.topLevel(), in.topLevel())
	}
	if got, want := codecsByRoot(out), codecsByRoot(in); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: codecs %v, want %v", rel, got, want)
	}
	if len(out.Rows) != len(in.Rows) {
		t.Fatalf("%s: %d rows, want %d", rel, len(out.Rows), len(in.Rows))
	}
	// Metadata: no key twice, every source key kept.
	seen := map[string]bool{}
	for _, p := range out.KV {
		if seen[p[0]] {
			t.Errorf("%s: metadata key %q appears twice", rel, p[0])
		}
		seen[p[0]] = true
	}
	for _, p := range in.KV {
		if !seen[p[0]] {
			t.Errorf("%s: metadata key %q dropped", rel, p[0])
		}
	}
	if v, _ := in.kv("fixture.note"); v != "" {
		if got, _ := out.kv("fixture.note"); got != v {
			t.Errorf("%s: fixture.note = %q, want %q", rel, got, v)
		}
	}
	selHere := map[string][]string{}
	for _, p := range paths {
		if slices.Contains(in.Columns, p[0]) {
			selHere[p[0]] = p[1:]
		}
	}
	if len(selHere) > 0 {
		recJSON, n := out.kv(MetaKey)
		if n != 1 {
			t.Errorf("%s: %q metadata appears %d times", rel, MetaKey, n)
		}
		var rec TableRecord
		if err := json.Unmarshal([]byte(recJSON), &rec); err != nil || rec.PackBase != MediaDir || len(rec.Extracted) != len(selHere) || rec.SourceSchema == "" {
			t.Errorf("%s: bpconvert metadata %s (err %v)", rel, recJSON, err)
		}
	} else if _, n := out.kv(MetaKey); n != 0 {
		t.Errorf("%s: copied table has bpconvert metadata", rel)
	}
	if hf != nil {
		v, _ := out.kv(HFKey)
		var doc struct {
			Info struct {
				Features map[string]json.RawMessage `json:"features"`
			} `json:"info"`
		}
		if err := json.Unmarshal([]byte(v), &doc); err != nil {
			t.Fatalf("%s: huggingface metadata: %v", rel, err)
		}
		for name, want := range hf {
			if !jsonEqual(doc.Info.Features[name], []byte(want)) {
				t.Errorf("%s: feature %s = %s, want %s", rel, name, doc.Info.Features[name], want)
			}
		}
	}

	key := strings.TrimSuffix(rel, ".parquet")
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
			colPath := dotted(append([]string{col}, rest...))
			prefix := fmt.Sprintf("%s/%s/%012d", colPath, key, r)
			n, err := checkValue(iv, ov, rest, prefix, root, set)
			if err != nil {
				t.Fatalf("%s: row %d column %s: %v", rel, r, col, err)
			}
			refs += n
		}
	}
	return refs
}

// checkValue compares one source value with its converted form along the
// remaining selected path.
func checkValue(in, out any, path []string, keyPrefix, root string, set *packcore.Set) (int, error) {
	if in == nil {
		if out != nil {
			return 0, fmt.Errorf("null became %v", out)
		}
		return 0, nil
	}
	if list, ok := in.([]any); ok {
		ol, ok := out.([]any)
		if !ok || len(ol) != len(list) {
			return 0, fmt.Errorf("list %v became %v", in, out)
		}
		n := 0
		for i := range list {
			k, err := checkValue(list[i], ol[i], path, fmt.Sprintf("%s-%04d", keyPrefix, i), root, set)
			if err != nil {
				return 0, fmt.Errorf("element %d: %w", i, err)
			}
			n += k
		}
		return n, nil
	}
	m, ok := in.(map[string]any)
	if !ok {
		return 0, fmt.Errorf("unexpected source value %v", in)
	}
	if len(path) > 0 {
		om, ok := out.(map[string]any)
		if !ok {
			return 0, fmt.Errorf("struct %v became %v", in, out)
		}
		n := 0
		for k, v := range m {
			if k == path[0] {
				c, err := checkValue(v, om[k], path[1:], keyPrefix, root, set)
				if err != nil {
					return 0, err
				}
				n += c
			} else if !reflect.DeepEqual(v, om[k]) {
				return 0, fmt.Errorf("field %s: %v became %v", k, v, om[k])
			}
		}
		return n, nil
	}
	var wantSHA, ext string
	if _, isBlob := m["sha256"]; isBlob {
		wantSHA = m["sha256"].(string)
	} else {
		b, p := m["bytes"], m["path"]
		if ps, ok := p.(string); ok {
			ext = strings.ToLower(filepath.Ext(ps))
		}
		switch {
		case b != nil:
			wantSHA = b.(map[string]any)["sha256"].(string)
		case p != nil:
			data, err := os.ReadFile(filepath.Join(root, p.(string)))
			if err != nil {
				return 0, err
			}
			sum := sha256.Sum256(data)
			wantSHA = hex.EncodeToString(sum[:])
		default:
			if om, ok := out.(map[string]any); out != nil && !(ok && om["bytes"] == nil && om["path"] == nil) {
				return 0, fmt.Errorf("struct without bytes or path became %v", out)
			}
			return 0, nil
		}
	}
	ref, ok := out.(string)
	if om, isMap := out.(map[string]any); isMap && om["bytes"] == nil {
		// A media struct kept (Options.Media): its path is the reference.
		ref, ok = om["path"].(string)
	}
	if !ok {
		return 0, fmt.Errorf("payload became %v, want a reference", out)
	}
	k, shard, err := packcore.ParseRef(ref)
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(shard, MediaDir+"/pack-") {
		return 0, fmt.Errorf("reference %s: shard path %s", ref, shard)
	}
	gotExt, found := strings.CutPrefix(k, keyPrefix)
	if !found || !strings.HasPrefix(gotExt, ".") || strings.ContainsAny(gotExt, "/-") || (ext != "" && gotExt != ext) {
		return 0, fmt.Errorf("member key %q, want %s<ext> (ext %q)", k, keyPrefix, ext)
	}
	data, err := set.Read(ref)
	if err != nil {
		return 0, err
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != wantSHA {
		return 0, fmt.Errorf("%s: sha256 %s, want %s", ref, got, wantSHA)
	}
	return 1, nil
}

func codecsByRoot(d dumpTable) map[string]string {
	out := map[string]string{}
	for path, c := range d.Compression {
		root, _, _ := strings.Cut(path, ", ")
		out[root] = c
	}
	return out
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// unzipTest runs unzip -t on every shard.
func unzipTest(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("unzip"); err != nil {
		if os.Getenv(testtool.RequireEnv) == "1" {
			t.Fatal("unzip is not installed (" + testtool.RequireEnv + "=1)")
		}
		t.Log("unzip is not installed: shards not checked with unzip -t")
		return
	}
	shards, err := packcore.ListShards(dir)
	if err != nil || len(shards) == 0 {
		t.Fatalf("no shards in %s: %v", dir, err)
	}
	for _, s := range shards {
		out, err := exec.Command("unzip", "-tq", filepath.Join(dir, s)).CombinedOutput()
		if err != nil {
			t.Errorf("unzip -t %s: %v\n%s", s, err, out)
		}
	}
}

// TestParquetSourceIsSymlink converts through a symlink to the dataset
// directory, as a source path often is.
func TestParquetSourceIsSymlink(t *testing.T) {
	t.Parallel()
	root := fixtureRoot(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(root, "hf"), link); err != nil {
		t.Fatal(err)
	}
	ins, err := Inspect(context.Background(), link, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ins.Tables) != 4 || len(ins.Others) != 4 {
		t.Fatalf("%d tables and %d other files through the symlink, want 4 and 4", len(ins.Tables), len(ins.Others))
	}
	sel, err := ins.Select(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(context.Background(), ins, sel, converttest.Dest(t, filepath.Join(t.TempDir(), "out")), Options{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := stage.CheckDisjoint(link, filepath.Join(root, "hf", "x")); !errors.Is(err, stage.ErrOverlap) {
		t.Errorf("destination inside the symlinked source: %v, want ErrOverlap", err)
	}
}

func TestParquetBatchSizeDoesNotChangeKeys(t *testing.T) {
	t.Parallel()
	root := fixtureRoot(t)
	ctx := context.Background()
	var outs []string
	for _, rows := range []int{5, 4096} {
		dst, _ := convertPlain(t, ctx, root, Options{BatchRows: rows})
		outs = append(outs, filepath.Join(dst, "part-00000.parquet"))
	}
	// Keys are the same whatever the batch size; the shard a member lands
	// in may differ (shards roll at the member cap and at group starts),
	// so the shard names are masked.
	d := dump(t, outs...)
	shard := regexp.MustCompile(`::media/pack-[0-9]+\.zip`)
	mask := func(rows [][]any) string {
		b, err := json.Marshal(rows)
		if err != nil {
			t.Fatal(err)
		}
		return shard.ReplaceAllString(string(b), "::media/pack-NNNN.zip")
	}
	a, b := d[outs[0]], d[outs[1]]
	if len(a.Rows) == 0 || mask(a.Rows) != mask(b.Rows) {
		t.Fatalf("keys differ between batch sizes 5 and 4096 (%d and %d rows)", len(a.Rows), len(b.Rows))
	}
	if !strings.Contains(mask(a.Rows), "zip://jpg/part-00000/000000002499.jpg::") {
		t.Fatalf("no reference to the last row's jpg in %.300s", mask(a.Rows))
	}
}

func TestParquetBadInput(t *testing.T) {
	t.Parallel()
	root := fixtureRoot(t)
	cases := []struct {
		name     string
		src      string
		columns  []string
		dst      string // relative to the fixture root; default a new temp dir
		wantIs   error
		wantText []string
	}{
		{name: "not parquet", src: "bad/notparquet.parquet", wantIs: ErrInvalidInput, wantText: []string{"notparquet.parquet", "not a readable parquet file"}},
		{name: "truncated footer", src: "bad/truncated.parquet", wantIs: ErrInvalidInput, wantText: []string{"truncated.parquet"}},
		{name: "column not binary", src: "plain", columns: []string{"txt"}, wantIs: ErrInvalidInput, wantText: []string{`column "txt"`, "expected a binary field"}},
		{name: "path escapes root", src: "escape", wantIs: ErrInvalidInput, wantText: []string{"data/t.parquet", "row 0", `column "image"`, "outside the dataset root"}},
		{name: "file is a symlink leaving the root", src: "escapelink", wantIs: ErrInvalidInput, wantText: []string{"images/link.png", "outside the source directory"}},
		{name: "path missing", src: "missing", wantIs: ErrInvalidInput, wantText: []string{"data/t.parquet", "row 0", `column "image"`, "names no file"}},
		{name: "symlink outside source", src: "symlink", wantIs: ErrInvalidInput, wantText: []string{"link.parquet", "outside the source directory"}},
		{name: "no such column", src: "plain", columns: []string{"nope"}, wantIs: ErrBadSelection, wantText: []string{`"nope"`, "candidates: jpg"}},
		{name: "nothing declared", src: "plain", wantIs: ErrNeedSelection, wantText: []string{"candidates: jpg (binary)"}},
		{name: "destination inside source", src: "hf", dst: "hf/out", wantIs: stage.ErrOverlap},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			opts := Options{Allocator: mem}
			dst := filepath.Join(t.TempDir(), "out")
			if tc.dst != "" {
				dst = filepath.Join(root, tc.dst)
			}
			err := func() error {
				ins, err := Inspect(context.Background(), filepath.Join(root, tc.src), opts)
				if err != nil {
					return err
				}
				sel, err := ins.Select(tc.columns, nil)
				if err != nil {
					return err
				}
				_, err = Convert(context.Background(), ins, sel, converttest.Dest(t, dst), opts, nil)
				return err
			}()
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %q does not wrap %v", err, tc.wantIs)
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
			if _, err := os.Stat(stage.Path(dst)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("staging directory exists after the error (stat: %v)", err)
			}
		})
	}
}

func TestParquetInspect(t *testing.T) {
	t.Parallel()
	root := fixtureRoot(t)
	type want struct {
		name, media string
		isStruct    bool
		tables      int
		rows        int64
		kinds       []string
	}
	cases := []struct {
		src  string
		want []want
	}{
		{"hf", []want{
			{"audio", "Audio", true, 1, 40, []string{"FLAC", "WAV"}},
			{"frames", "List(Image)", true, 2, 60, []string{"JPEG", "PNG"}},
			{"image", "Image", true, 1, 4500, []string{"JPEG", "PNG", "empty"}},
		}},
		{"plain", []want{
			{"jpg", "", false, 1, 2500, []string{"JPEG", "empty"}},
			{"meta.thumb", "", false, 1, 2500, []string{"PNG"}},
			{"extras", "", false, 1, 2500, []string{"WAV"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ins, err := Inspect(context.Background(), filepath.Join(root, tc.src), Options{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			if len(ins.Candidates) != len(tc.want) {
				t.Fatalf("%d candidates %v, want %d", len(ins.Candidates), ins.candidateList(), len(tc.want))
			}
			for i, w := range tc.want {
				c := ins.Candidates[i]
				if c.Name() != w.name || c.Media != w.media || c.Struct != w.isStruct || c.Tables != w.tables || c.Rows != w.rows {
					t.Errorf("candidate %d = %s media %q struct %v in %d tables, %d rows; want %+v", i, c.Name(), c.Media, c.Struct, c.Tables, c.Rows, w)
				}
				if c.ChunkBytes <= 0 || c.Evidence.Sampled == 0 || c.Evidence.Values != w.rows {
					t.Errorf("%s: chunk bytes %d, evidence %+v", c.Name(), c.ChunkBytes, c.Evidence)
				}
				if !slices.Equal(c.Evidence.Kinds, w.kinds) {
					t.Errorf("%s: kinds %v, want %v", c.Name(), c.Evidence.Kinds, w.kinds)
				}
			}
		})
	}
}

// cancelAfter cancels a context after n payloads were reported.
type cancelAfter struct {
	n      int64
	cancel context.CancelFunc
}

func (c *cancelAfter) SetTotal(items, bytes int64) {}
func (c *cancelAfter) Milestone(string)            {}
func (c *cancelAfter) Add(items, bytes int64) {
	c.n -= items
	if c.n <= 0 {
		c.cancel()
	}
}

func TestParquetCancel(t *testing.T) {
	t.Parallel()
	root := fixtureRoot(t)
	for _, after := range []int64{1, 300, 2400} { // 2,450 non-null jpg values
		t.Run(fmt.Sprint(after), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := Options{Allocator: mem, BatchRows: 64}
			prog := &cancelAfter{n: after, cancel: cancel}
			ins, err := Inspect(ctx, filepath.Join(root, "plain"), opts)
			if err != nil {
				t.Fatal(err)
			}
			sel, err := ins.Select([]string{"jpg"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "out")
			_, err = Convert(ctx, ins, sel, converttest.Dest(t, dst), opts, prog)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("destination exists after cancellation (stat: %v)", err)
			}
			if _, err := os.Stat(stage.Path(dst)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("staging directory exists after cancellation (stat: %v)", err)
			}
		})
	}
}

// TestParquetArrowSchemaReplaced checks that a source ARROW:schema is not
// carried over stale: the output has exactly one, it describes the
// reference columns as strings, and field metadata it held survives.
func TestParquetArrowSchemaReplaced(t *testing.T) {
	t.Parallel()
	root := fixtureRoot(t)
	ctx := context.Background()
	ins, err := Inspect(ctx, filepath.Join(root, "arrowschema"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ins.Tables[0].schema.Field(2).Type.ID(); got != arrow.LARGE_BINARY {
		t.Fatalf("raw read as %v, want large_binary from the source ARROW:schema", got)
	}
	sel, err := ins.Select([]string{"image", "raw"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	if _, err := Convert(ctx, ins, sel, converttest.Dest(t, dst), Options{}, nil); err != nil {
		t.Fatal(err)
	}
	pf, err := file.OpenParquetFile(filepath.Join(dst, "t.parquet"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	n := 0
	for _, k := range pf.MetaData().KeyValueMetadata().Keys() {
		if k == "ARROW:schema" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d ARROW:schema entries, want 1", n)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]arrow.Type{"image": arrow.STRUCT, "raw": arrow.STRING} {
		f, _ := sc.FieldsByName(name)
		if len(f) != 1 || f[0].Type.ID() != want {
			t.Errorf("%s is %v in the stored schema, want %s", name, f, want)
		}
	}
	id, _ := sc.FieldsByName("id")
	if v, ok := id[0].Metadata.GetValue("note"); !ok || v != "kept" {
		t.Errorf("id field metadata %v, want note=kept", id[0].Metadata)
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestParquetPlanGolden renders the plans of the fixture datasets as text and
// JSON and compares them with golden files (refresh with -update). Fixture
// paths are replaced by SRC and DST. No plan gives two verdicts on the
// schema.
func TestParquetPlanGolden(t *testing.T) {
	t.Parallel()
	root := fixtureRoot(t)
	cases := []struct {
		name    string
		src     string
		columns []string
		fields  [][]string
	}{
		{name: "hf-default", src: "hf"},
		{name: "plain-selected", src: "plain", columns: []string{"jpg"}, fields: [][]string{{"meta", "thumb"}}},
		{name: "plain-none", src: "plain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ins, err := Inspect(context.Background(), filepath.Join(root, tc.src), Options{})
			if err != nil {
				t.Fatal(err)
			}
			sel, err := ins.Select(tc.columns, tc.fields)
			if err != nil && !errors.Is(err, ErrNeedSelection) {
				t.Fatal(err)
			}
			p := ins.Plan(sel, "/DST")
			var text, js bytes.Buffer
			if err := plan.RenderText(&text, p); err != nil {
				t.Fatal(err)
			}
			// One verdict on the schema: a table rewritten because of its
			// fields never says otherwise than they do.
			if strings.Contains(text.String(), "schema kept") && strings.Contains(text.String(), "SCHEMA CHANGES") {
				t.Errorf("the plan says both schema kept and SCHEMA CHANGES:\n%s", text.String())
			}
			if err := plan.RenderJSON(&js, p); err != nil {
				t.Fatal(err)
			}
			for ext, got := range map[string]string{"txt": text.String(), "json": js.String()} {
				got = strings.ReplaceAll(got, root, "SRC")
				golden(t, filepath.Join("testdata", tc.name+"."+ext+".golden"), got)
			}
		})
	}
}

// golden compares got with a golden file, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run PlanGolden -update to create it)", err)
	}
	if string(want) == got {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Fatalf("%s differs at line %d:\nwant: %q\ngot:  %q\n(run go test -run PlanGolden -update to accept)", path, i+1, w, g)
		}
	}
}

// TestRowsShareAShard: a row's payloads from several selected columns are
// packed one after the other, so a row is one placement group even though
// the batch is rewritten column by column: under a small member cap every
// row's references name one shard, and no group is reported split.
func TestRowsShareAShard(t *testing.T) {
	t.Parallel()
	const members = 7
	dst, res := convertPlain(t, context.Background(), fixtureRoot(t), Options{BatchRows: 64, Options: convert.Options{PackOptions: convert.PackOptions{MaxMembers: members}}})
	if res.Pack.Shards < 10 || res.Pack.GroupsSplit != 0 {
		t.Fatalf("max members %d: %d shards, %d groups split; want many shards and none split", members, res.Pack.Shards, res.Pack.GroupsSplit)
	}
	out := filepath.Join(dst, "part-00000.parquet")
	shard := regexp.MustCompile(`::media/(pack-[0-9]+\.zip)`)
	rows, multi := 0, 0
	for i, row := range dump(t, out)[out].Rows {
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, m := range shard.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		if len(names) > 1 {
			t.Fatalf("max members %d: row %d references %d shards: %s", members, i, len(names), b)
		}
		if len(shard.FindAllString(string(b), -1)) > 1 {
			multi++
		}
		rows++
	}
	if rows == 0 || multi < rows/2 {
		t.Fatalf("max members %d: %d rows, %d with several payloads: the fixture no longer tests this", members, rows, multi)
	}
}

// convertPlain converts the "plain" fixture's jpg and extras columns with
// opts into a new directory and returns it with the result.
func convertPlain(t *testing.T, ctx context.Context, root string, opts Options) (string, *Result) {
	t.Helper()
	ins, err := Inspect(ctx, filepath.Join(root, "plain"), opts)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := ins.Select([]string{"jpg", "extras"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	res, err := Convert(ctx, ins, sel, converttest.Dest(t, dst), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dst, res
}
