package parquet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestKeptColumnsExact converts 30 tables of random nested types written
// by pyarrow, and a dataset written by Hugging Face datasets 5.2.0
// (fixtures/parquet/exacttypes.py, seeded), extracting the media columns,
// and has pyarrow and datasets compare each output with its source: every
// other column keeps its Arrow field (type, extension types at any depth,
// list element names, nullability, field metadata:
// schema.equals(check_metadata=True)) and its values, every parquet leaf
// its physical, logical and converted type and levels, every column chunk
// its column index and offset index (the null bytes of a kept
// List(Image()) included), and datasets.load_dataset finds the source's
// features (List(Json()), Json(), Array2D, ClassLabel, Image()) and rows.
//
// The column indexes of repeated leaves, which the output's writer
// (arrow-go) counts wrong and bpconvert builds again, are compared with
// pyarrow's in the source wherever the two split a column chunk into pages
// at the same rows: the same null pages, minimums and maximums. The tables
// come from -exact-seed (1 unless given); a failure names the seed.
func TestKeptColumnsExact(t *testing.T) {
	py := testtool.Python(t)
	root := t.TempDir()
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	env := append(os.Environ(), "HF_HOME="+filepath.Join(root, "hf-home"), "HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1")
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(py, append([]string{filepath.Join(fixtureDir, "exacttypes.py")}, args...)...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("exacttypes.py %s: %v\n%s", args[0], err, stderr.String())
		}
		return out
	}
	seed := fmt.Sprint(*exactSeed)
	run("gen", src, "30", seed)
	dirs, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	indexes := 0
	for _, d := range dirs {
		cols := []string{"image"}
		if d.Name() == "hf" {
			cols = append(cols, "frames")
		}
		ctx := context.Background()
		ins, err := Inspect(ctx, filepath.Join(src, d.Name()), Options{})
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		sel, err := ins.Select(cols, nil)
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		if _, err := Convert(ctx, ins, sel, filepath.Join(dst, d.Name()), Options{}, nil); err != nil {
			t.Fatalf("seed %s: %s: %v", seed, d.Name(), err)
		}
		n, err := sameColumnIndexes(filepath.Join(src, d.Name(), "data.parquet"), filepath.Join(dst, d.Name(), "data.parquet"), cols)
		if err != nil {
			t.Errorf("seed %s: %s: %v", seed, d.Name(), err)
		}
		indexes += n
	}
	// A bound that keeps the comparison from passing by comparing nothing.
	if indexes < 50 {
		t.Errorf("seed %s: %d column indexes of repeated leaves compared, want at least 50", seed, indexes)
	}
	var rep struct {
		Tables     int      `json:"tables"`
		Mismatches []string `json:"mismatches"`
	}
	if err := json.Unmarshal(run("check", src, dst), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Tables != 31 || len(rep.Mismatches) > 0 {
		t.Fatalf("seed %s: %d tables compared (want 31), %d mismatches:\n%s", seed, rep.Tables, len(rep.Mismatches), strings.Join(rep.Mismatches, "\n"))
	}
}

var exactSeed = flag.Int64("exact-seed", 1, "seed of the random tables of TestKeptColumnsExact")

// sameColumnIndexes compares the column indexes of the repeated leaves of
// the parquet files src and dst, but those of the columns extracted,
// wherever both split a column chunk into pages at the same rows, and
// returns how many it compared.
func sameColumnIndexes(src, dst string, extracted []string) (int, error) {
	open := func(p string) (*file.Reader, error) { return file.OpenParquetFile(p, false) }
	sf, err := open(src)
	if err != nil {
		return 0, err
	}
	defer sf.Close()
	df, err := open(dst)
	if err != nil {
		return 0, err
	}
	defer df.Close()
	n := 0
	for r := 0; r < sf.NumRowGroups(); r++ {
		sr, err := sf.GetPageIndexReader().RowGroup(r)
		if err != nil {
			return n, err
		}
		dr, err := df.GetPageIndexReader().RowGroup(r)
		if err != nil {
			return n, err
		}
		for c := 0; c < sf.MetaData().Schema.NumColumns(); c++ {
			col := sf.MetaData().Schema.Column(c)
			if col.MaxRepetitionLevel() == 0 || slices.Contains(extracted, col.ColumnPath()[0]) {
				continue
			}
			dc := df.MetaData().Schema.ColumnIndexByName(col.ColumnPath().String())
			soi, err1 := sr.GetOffsetIndex(c)
			doi, err2 := dr.GetOffsetIndex(dc)
			sci, err3 := sr.GetColumnIndex(c)
			dci, err4 := dr.GetColumnIndex(dc)
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				return n, fmt.Errorf("row group %d %s: %w", r, col.ColumnPath(), err)
			}
			if soi == nil || sci == nil || doi == nil || dci == nil || !sameFirstRows(soi, doi) {
				continue
			}
			if !slices.Equal(sci.GetNullPages(), dci.GetNullPages()) ||
				!slices.EqualFunc(sci.GetMinValues(), dci.GetMinValues(), bytes.Equal) ||
				!slices.EqualFunc(sci.GetMaxValues(), dci.GetMaxValues(), bytes.Equal) {
				return n, fmt.Errorf("row group %d %s: column index: null pages %v, min %x, max %x became %v, %x, %x", r, col.ColumnPath(),
					sci.GetNullPages(), sci.GetMinValues(), sci.GetMaxValues(), dci.GetNullPages(), dci.GetMinValues(), dci.GetMaxValues())
			}
			n++
		}
	}
	return n, nil
}

func sameFirstRows(a, b metadata.OffsetIndex) bool {
	pa, pb := a.GetPageLocations(), b.GetPageLocations()
	return slices.EqualFunc(pa, pb, func(x, y *metadata.PageLocation) bool { return x.FirstRowIndex == y.FirstRowIndex })
}
