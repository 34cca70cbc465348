package lancefmt

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// valueTypes are the logical types Dataset.Values reads.
var valueTypes = map[string]bool{"binary": true, "large_binary": true, "string": true, "large_string": true}

// scanBinary returns the values of a binary column as Scan reads them (nil
// for null), with the fragment of each.
func scanBinary(t *testing.T, ds *Dataset, col string) ([][]byte, []uint64) {
	t.Helper()
	sc, err := ds.Scan(context.Background(), ScanOptions{Columns: []string{col}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var vals [][]byte
	var frags []uint64
	for sc.Next() {
		a := sc.RecordBatch().Column(0)
		for i := 0; i < a.Len(); i++ {
			var v []byte
			if !a.IsNull(i) {
				v = []byte{}
				switch x := a.(type) {
				case *array.Binary:
					v = append(v, x.Value(i)...)
				case *array.LargeBinary:
					v = append(v, x.Value(i)...)
				case *array.String:
					v = append(v, x.Value(i)...)
				case *array.LargeString:
					v = append(v, x.Value(i)...)
				default:
					t.Fatalf("column %q is %s", col, a.DataType())
				}
			}
			vals = append(vals, v)
			frags = append(frags, sc.Fragment())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vals, frags
}

// readValues returns the values of a binary column as a ValueScanner with
// the given window and largest held value reads them, through Bytes when
// it holds a value and through Open otherwise (every value is also opened
// and its prefix read, which must agree).
func readValues(t *testing.T, ds *Dataset, col string, window, maxHeld int64) ([][]byte, []uint64, int) {
	t.Helper()
	vs, err := ds.Values(context.Background(), col, ValueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	vs.window, vs.maxHeld = window, maxHeld
	var vals [][]byte
	var frags []uint64
	streamed := 0
	for vs.Next() {
		v := vs.Value()
		frags = append(frags, v.Fragment)
		if v.Null {
			vals = append(vals, nil)
			continue
		}
		pre, err := v.Prefix(5)
		if err != nil {
			t.Fatal(err)
		}
		r, err := v.Open()
		if err != nil {
			t.Fatal(err)
		}
		opened, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("fragment %d row %d: %v", v.Fragment, v.Row, err)
		}
		b, held, err := v.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if !held {
			streamed++
			b = opened
		}
		if !bytes.Equal(b, opened) || !bytes.HasPrefix(b, pre) || len(pre) != min(5, len(b)) {
			t.Fatalf("fragment %d row %d: Bytes, Open and Prefix disagree", v.Fragment, v.Row)
		}
		if int64(len(b)) != v.Size {
			t.Fatalf("fragment %d row %d: %d bytes, Size %d", v.Fragment, v.Row, len(b), v.Size)
		}
		vals = append(vals, append([]byte{}, b...))
	}
	if err := vs.Err(); err != nil {
		t.Fatal(err)
	}
	return vals, frags, streamed
}

// TestValuesMatchScan reads every binary and string column of every fixture dataset
// written by Lance (each dumped version, so deletions too) with a
// ValueScanner and expects Scan's values (which TestScanMatchesLance
// compares with Lance's own scan), in the same order and fragments: with
// the default window, and with a window of 64 bytes and no value held, so
// that every full-zip value is read in pieces.
func TestValuesMatchScan(t *testing.T) {
	t.Parallel()
	for _, set := range fixtureSets {
		t.Run(set.name, func(t *testing.T) {
			dir := set.dir(t)
			columns, streamed := 0, 0
			for _, name := range datasetNames(t, dir) {
				exp := loadExpected(t, dir, name)
				for _, es := range exp.Scans {
					ds, err := Open(context.Background(), filepath.Join(dir, name+".lance"), OpenOptions{Version: es.Version})
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range ds.Schema().Fields {
						if f.IsBlob() || !valueTypes[f.LogicalType] || ds.Schema().Unsupported[f.Name] != nil {
							continue
						}
						columns++
						t.Run(fmt.Sprintf("%s/v%d/%s", name, es.Version, f.Name), func(t *testing.T) {
							want, wantFrags := scanBinary(t, ds, f.Name)
							for _, lim := range []struct{ window, held int64 }{{valueWindow, maxHeldValue}, {64, 0}} {
								got, frags, n := readValues(t, ds, f.Name, lim.window, lim.held)
								streamed += n
								if len(got) != len(want) {
									t.Fatalf("window %d: %d values, Scan reads %d", lim.window, len(got), len(want))
								}
								for i := range want {
									if (got[i] == nil) != (want[i] == nil) || !bytes.Equal(got[i], want[i]) || frags[i] != wantFrags[i] {
										t.Fatalf("window %d: value %d (fragment %d) differs from Scan's (fragment %d)", lim.window, i, frags[i], wantFrags[i])
									}
								}
							}
						})
					}
				}
			}
			t.Logf("%d columns, %d values read in pieces", columns, streamed)
			if columns == 0 || streamed == 0 {
				t.Fatalf("%d binary and string columns in the fixtures, %d values read in pieces", columns, streamed)
			}
		})
	}
}
