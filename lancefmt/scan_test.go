package lancefmt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// canon converts value i of a to the canonical JSON form gen.mjs writes.
func canon(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Int8:
		return json.Number(strconv.Itoa(int(a.Value(i))))
	case *array.Int16:
		return json.Number(strconv.Itoa(int(a.Value(i))))
	case *array.Int32:
		return json.Number(strconv.Itoa(int(a.Value(i))))
	case *array.Uint8:
		return json.Number(strconv.Itoa(int(a.Value(i))))
	case *array.Uint16:
		return json.Number(strconv.Itoa(int(a.Value(i))))
	case *array.Uint32:
		return json.Number(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		s := sha256.Sum256(a.Value(i))
		return hex.EncodeToString(s[:])
	case *array.LargeBinary:
		s := sha256.Sum256(a.Value(i))
		return hex.EncodeToString(s[:])
	case *array.Timestamp:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Date32:
		return strconv.FormatInt(int64(a.Value(i))*86400000, 10)
	case *array.Date64:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Time32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Time64:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Duration:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Float16:
		return float64(a.Value(i).Float32())
	case *array.Decimal128:
		v := a.Value(i)
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], v.LowBits())
		binary.LittleEndian.PutUint64(b[8:], uint64(v.HighBits()))
		return hex.EncodeToString(b[:])
	case *array.FixedSizeBinary:
		s := sha256.Sum256(a.Value(i))
		return hex.EncodeToString(s[:])
	case *array.FixedSizeList:
		n := int(a.DataType().(*arrow.FixedSizeListType).Len())
		start, _ := a.ValueOffsets(i)
		if f, ok := a.ListValues().(*array.Float32); ok && n >= 32 {
			var buf bytes.Buffer
			for k := 0; k < n; k++ {
				binary.Write(&buf, binary.LittleEndian, f.Value(int(start)+k))
			}
			s := sha256.Sum256(buf.Bytes())
			return hex.EncodeToString(s[:])
		}
		out := make([]any, n)
		for k := range out {
			out[k] = canon(a.ListValues(), int(start)+k)
		}
		return out
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for k := start; k < end; k++ {
			out = append(out, canon(a.ListValues(), int(k)))
		}
		return out
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		out := map[string]any{}
		for k, f := range st.Fields() {
			out[f.Name] = canon(a.Field(k), i)
		}
		return out
	}
	return fmt.Sprintf("unsupported %s", a.DataType())
}

// sameValue compares a canonical Go value with one decoded from JSON.
func sameValue(got, want any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case json.Number:
		switch g := got.(type) {
		case json.Number:
			return g == w
		case float64:
			f, err := w.Float64()
			return err == nil && (f == g || math.IsNaN(f) && math.IsNaN(g))
		}
		return false
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !sameValue(g[i], w[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k := range w {
			if !sameValue(g[k], w[k]) {
				return false
			}
		}
		return true
	default:
		return got == want
	}
}

// decodeWant decodes one expected JSON value keeping numbers exact.
func decodeWant(raw json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Sprintf("bad json %s", raw)
	}
	return v
}

// scanAll reads every batch of a scan and returns the canonical values per
// column, in scan order.
func scanAll(t *testing.T, ds *Dataset, cols []string, batch int) map[string][]any {
	t.Helper()
	return scanWith(t, ds, ScanOptions{Columns: cols, BatchSize: batch})
}

// scanWith is scanAll with the scan's options.
func scanWith(t *testing.T, ds *Dataset, opts ScanOptions) map[string][]any {
	t.Helper()
	sc, err := ds.Scan(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	out := map[string][]any{}
	for sc.Next() {
		rec := sc.RecordBatch()
		for c, f := range rec.Schema().Fields() {
			col := rec.Column(c)
			if v, ok := col.(interface{ ValidateFull() error }); ok && v.ValidateFull() != nil {
				err := v.ValidateFull()
				t.Fatalf("column %q: invalid array: %v", f.Name, err)
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				out[f.Name] = append(out[f.Name], canon(col, i))
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestScanMatchesLance compares every column of every fixture dataset, at
// each dumped version, value for value with Lance's own scan.
func TestScanMatchesLance(t *testing.T) {
	t.Parallel()
	for _, set := range fixtureSets {
		t.Run(set.name, func(t *testing.T) { scansMatchLance(t, set.dir(t)) })
	}
}

// scansMatchLance compares the datasets of one fixture directory with the
// scans Lance dumped for them.
func scansMatchLance(t *testing.T, dir string) {
	for _, name := range datasetNames(t, dir) {
		t.Run(name, func(t *testing.T) {
			exp := loadExpected(t, dir, name)
			path := filepath.Join(dir, name+".lance")
			var full *expectedScan
			for si := range exp.Scans {
				es := &exp.Scans[si]
				t.Run(fmt.Sprintf("v%d", es.Version), func(t *testing.T) {
					ds, err := Open(context.Background(), path, OpenOptions{Version: es.Version})
					if err != nil {
						t.Fatal(err)
					}
					if got := ds.NumRows(); got != uint64(es.NumRows) {
						t.Errorf("NumRows = %d, want %d", got, es.NumRows)
					}
					var cols []string
					for c := range es.Values {
						if f := ds.Schema().Field(c); f != nil && !f.IsBlob() {
							cols = append(cols, c)
						}
					}
					if full != nil && len(es.Values) == 1 {
						// Compare this (deleted-rows) scan to the earlier full
						// one, for the columns still in the schema.
						cols = nil
						for c := range full.Values {
							if f := ds.Schema().Field(c); f != nil && !f.IsBlob() {
								cols = append(cols, c)
							}
						}
					}
					got := scanAll(t, ds, cols, 1000)
					ids := got["id"]
					if len(ids) != es.NumRows {
						t.Fatalf("scan yields %d rows, want %d", len(ids), es.NumRows)
					}
					// Expected values by row: this scan's own values, or the
					// full scan's values for the same ids.
					want := func(col string, row int) any {
						return decodeWant(es.Values[col][row])
					}
					fullIndex := map[string]int{}
					if full != nil && len(es.Values) == 1 {
						for i, raw := range full.Values["id"] {
							fullIndex[fmt.Sprint(decodeWant(raw))] = i
						}
						want = func(col string, row int) any {
							k, ok := fullIndex[fmt.Sprint(ids[row])]
							if !ok {
								return "missing id"
							}
							return decodeWant(full.Values[col][k])
						}
						for i, raw := range es.Values["id"] {
							if !sameValue(ids[i], decodeWant(raw)) {
								t.Fatalf("row %d: id %v, want %s", i, ids[i], raw)
							}
						}
					}
					for _, col := range cols {
						bad := 0
						for row, g := range got[col] {
							w := want(col, row)
							if !sameValue(g, w) {
								if bad < 3 {
									t.Errorf("column %q row %d (id %v): got %s, want %s", col, row, ids[row], show(g), show(w))
								}
								bad++
							}
						}
						if bad > 0 {
							t.Errorf("column %q: %d of %d values differ", col, bad, len(got[col]))
						}
						if len(got[col]) != len(ids) {
							t.Errorf("column %q: %d values for %d rows", col, len(got[col]), len(ids))
						}
					}
				})
				if full == nil && len(es.Values) > 1 {
					full = es
				}
			}
		})
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ReplaceAll(s, "\n", " ")
}

// TestBatchSizes scans datasets with deletions and multi-page columns at
// several batch sizes, with and without batches ending at page boundaries,
// with a checked allocator, and expects the same values as at batch size
// 1000 and no leaked buffer.
func TestBatchSizes(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	for _, name := range []string{"types_2_0", "types_2_1", "types_2_2", "big_2_0", "big_2_2"} {
		ref, err := Open(context.Background(), filepath.Join(dir, name+".lance"), OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := scanAll(t, ref, nil, 1000)
		for _, run := range []struct {
			bs    int
			pages bool
		}{{7, false}, {4096, false}, {1 << 20, false}, {7, true}, {1 << 20, true}} {
			bs := run.bs
			t.Run(fmt.Sprintf("%s/%d/pages=%v", name, bs, run.pages), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				ds, err := Open(context.Background(), filepath.Join(dir, name+".lance"), OpenOptions{Allocator: mem})
				if err != nil {
					t.Fatal(err)
				}
				if bs == 7 && strings.HasPrefix(name, "big") {
					t.Skip("slow at batch size 7")
				}
				got := scanWith(t, ds, ScanOptions{BatchSize: bs, PageBatches: run.pages})
				if len(got) != len(want) {
					t.Fatalf("%d columns, want %d", len(got), len(want))
				}
				for col, wv := range want {
					gv := got[col]
					if len(gv) != len(wv) {
						t.Fatalf("column %q: %d values, want %d", col, len(gv), len(wv))
					}
					for i := range wv {
						if show(gv[i]) != show(wv[i]) {
							t.Fatalf("column %q row %d: %s, want %s", col, i, show(gv[i]), show(wv[i]))
						}
					}
				}
			})
		}
	}
}

// TestUnsupportedEncodingError patches a page layout of a real file into
// one this package does not decode and expects an error naming dataset,
// fragment, column, page and encoding.
func TestUnsupportedEncodingError(t *testing.T) {
	t.Parallel()
	src := filepath.Join(fixtures(t), "blob2_2_2.lance")
	dir := filepath.Join(t.TempDir(), "patched.lance")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	ds, err := Open(context.Background(), dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ds.dataFilePath(&ds.Fragments()[0].Files[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fm, err := readFileMeta(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	enc := fm.columns[0].pages[0].encoding.value // column "id": a MiniBlockLayout
	if i := bytes.Index(b, enc); i < 0 || bytes.Contains(b[i+1:], enc) || b[i] != 0x0a {
		t.Fatalf("page encoding not found exactly once (first byte %x)", enc[0])
	} else {
		b[i] = 0x2a // PageLayout field 5: SparseLayout (file version 2.3)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := ds.Scan(context.Background(), ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if sc.Next() {
		t.Fatal("scan of an unsupported page yields a batch")
	}
	msg := fmt.Sprint(sc.Err())
	for _, want := range []string{dir, "fragment 0", `column "id"`, "page 0", "SparseLayout"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
}

// BenchmarkScan scans every column of the multi-page fixtures; the bytes
// per operation are the sizes of the data files read.
func BenchmarkScan(b *testing.B) {
	dir := fixtures(b)
	for _, name := range []string{"big_2_0", "big_2_1", "big_2_2", "types_legacy"} {
		b.Run(name, func(b *testing.B) {
			ds, err := Open(context.Background(), filepath.Join(dir, name+".lance"), OpenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			var size int64
			for _, fr := range ds.Fragments() {
				for _, df := range fr.Files {
					p, _ := ds.dataFilePath(&df)
					st, err := os.Stat(p)
					if err != nil {
						b.Fatal(err)
					}
					size += st.Size()
				}
			}
			b.SetBytes(size)
			for b.Loop() {
				sc, err := ds.Scan(context.Background(), ScanOptions{})
				if err != nil {
					b.Fatal(err)
				}
				rows := uint64(0)
				for sc.Next() {
					rows += uint64(sc.RecordBatch().NumRows())
				}
				if err := sc.Err(); err != nil {
					b.Fatal(err)
				}
				sc.Close()
				if rows != ds.NumRows() {
					b.Fatalf("%d rows, want %d", rows, ds.NumRows())
				}
			}
		})
	}
}
