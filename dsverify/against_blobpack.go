package dsverify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/bpconvert/bpconvert/lancefmt"
)

// Datasets converted by blobpack 0.2.0 (the Python tool bpconvert grew
// from) carry no bpconvert record; their layout says what was done.
//
// blobpack convert-parquet SRC DST writes DST/extraction.json, DST/tables/
// (each source table at its path relative to SRC, or its file name when
// SRC is a file) and DST/media/pack-NNNN.zip. extraction.json holds
// "fields", the extracted field paths (top-level columns first, then
// struct paths), and "source_schemas", an object whose keys are the source
// tables' relative paths in the order they were converted. Each binary
// leaf becomes the reference zip://FFFFFF/JJJJ/RRRRRRRRRRRR::media/pack-NNNN.zip
// (file index, field index, row, zero-padded); a null stays null.
//
// blobpack convert-lance SRC DST --column C writes DST/table.lance (the
// kept columns, then each extracted column as strings) and DST/media; a
// value of row R becomes zip://C/RRRRRRRRRRRR.bin::media/pack-NNNN.zip, in
// scan order; a null stays null. It records neither the source's version
// nor which columns it extracted: a string column of the output that is a
// binary or blob column of the same name in the source was extracted, and
// the source is compared at its latest version.

// blobpackParquet is what extraction.json records.
type blobpackParquet struct {
	fields [][]string
	tables []string // source tables relative to SRC, in conversion order
}

// blobpackExtraction is the name of blobpack's record of a parquet
// conversion, at the dataset root.
const blobpackExtraction = "extraction.json"

// readBlobpackParquet reads extraction.json at the root, if there is one
// that blobpack convert-parquet wrote.
func (v *Check) readBlobpackParquet() (*blobpackParquet, error) {
	f := v.out.file(blobpackExtraction)
	if !f.exists() {
		return nil, nil
	}
	b, err := f.readAll(v.ctx, 64<<20)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Fields        [][]string      `json:"fields"`
		SourceSchemas json.RawMessage `json:"source_schemas"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Fields) == 0 || len(doc.SourceSchemas) == 0 {
		return nil, nil // some other extraction.json
	}
	// The keys of source_schemas, in order: the file indices of the keys.
	dec := json.NewDecoder(bytes.NewReader(doc.SourceSchemas))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("%s: source_schemas is not an object", blobpackExtraction)
	}
	rec := &blobpackParquet{fields: doc.Fields}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: source_schemas: %w", blobpackExtraction, err)
		}
		rec.tables = append(rec.tables, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("%s: source_schemas: %w", blobpackExtraction, err)
		}
	}
	for _, f := range rec.fields {
		if len(f) == 0 {
			return nil, fmt.Errorf("%s: an empty field path", blobpackExtraction)
		}
	}
	return rec, nil
}

// againstBlobpackParquet compares every extracted value of every source
// table with the member its reference in tables/ names.
func (v *Check) againstBlobpackParquet(src string, rec *blobpackParquet) error {
	sp, name, err := v.source()
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	isDir := name == ""
	if !isDir && len(rec.tables) != 1 {
		return fmt.Errorf("--against %s: a single table, but blobpack converted %d tables (%s lists them); give their directory", src, len(rec.tables), blobpackExtraction)
	}
	a := &Against{Source: src, Format: "parquet, converted by blobpack 0.2.0"}
	v.rep.Against = a
	e := v.set("media")
	if e.err != nil {
		return fmt.Errorf("--against: pack directory media: %w", e.err)
	}
	for _, rel := range rec.tables {
		sf := sp.file(name)
		if isDir {
			sf = sp.file(rel)
		}
		out := "tables/" + rel
		if !sf.exists() {
			a.Mismatches++
			v.problem(Problem{Table: out, Row: -1, Reason: fmt.Sprintf("no source table %s to compare with", sf)})
			continue
		}
		for _, f := range rec.fields {
			if err := v.compareColumn(a, sp, path.Dir(sf.rel), sf, v.out.file(out), out, f, e.set); err != nil {
				return err
			}
		}
	}
	return nil
}

// againstBlobpackLance compares, row by row in scan order, every column of
// the source that the output holds as strings of references.
func (v *Check) againstBlobpackLance(src string, rels []string) error {
	a := &Against{Source: src, Format: "lance, converted by blobpack 0.2.0"}
	v.rep.Against = a
	sp, _, err := v.source()
	if err != nil {
		return fmt.Errorf("--against %s: %w", src, err)
	}
	srcDS, err := openLance(v.ctx, sp, "", lancefmt.OpenOptions{})
	if err != nil {
		return fmt.Errorf("--against %s: %w", src, err)
	}
	a.Notes = append(a.Notes, fmt.Sprintf("blobpack records no source version: compared with version %d of %s, the latest", srcDS.Version(), src))
	for _, rel := range rels {
		outDS, err := openLance(v.ctx, v.out, rel, lancefmt.OpenOptions{})
		if err != nil {
			return fmt.Errorf("--against: %s: %w", rel, err)
		}
		var cols []string
		for _, f := range outDS.Schema().Fields {
			sf := srcDS.Schema().Field(f.Name)
			if sf == nil || !isStringField(outDS, f.Name) || !(sf.IsBlob() || isBinaryField(srcDS, f.Name)) {
				continue
			}
			cols = append(cols, f.Name)
		}
		if len(cols) == 0 {
			a.Mismatches++
			v.problem(Problem{Table: rel, Row: -1, Reason: fmt.Sprintf("no column of references here is a binary or blob column of %s: not a conversion of that source", src)})
			continue
		}
		for _, col := range cols {
			if err := v.compareLanceColumn(a, srcDS, outDS, rel, col, v.packsOf("media")); err != nil {
				return err
			}
		}
	}
	return nil
}

func isStringField(ds *lancefmt.Dataset, name string) bool {
	sc := ds.Schema()
	i := sc.Arrow.FieldIndices(name)
	if len(i) != 1 {
		return false
	}
	switch sc.Arrow.Field(i[0]).Type.(type) {
	case *arrow.StringType, *arrow.LargeStringType:
		return true
	}
	return false
}

func isBinaryField(ds *lancefmt.Dataset, name string) bool {
	sc := ds.Schema()
	i := sc.Arrow.FieldIndices(name)
	if len(i) != 1 {
		return false
	}
	switch sc.Arrow.Field(i[0]).Type.(type) {
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return true
	}
	return false
}
