package lancefmt

import (
	"fmt"

	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
)

// ColumnEncoding describes how one column of a data file stores a field:
// its file, its column-level encoding and the encoding of every page. It is
// what an inspector shows; reading values does not need it.
type ColumnEncoding struct {
	Fragment     uint64 // fragment id
	File         string // data file, relative to its data directory
	Major, Minor uint32 // file format version
	FieldID      int32  // the field the column stores
	// Path names the field from its top-level field, dot-separated, for
	// example "st.x" or "li.item".
	Path string
	// Column is the column index in the data file (the field's position
	// in legacy files).
	Column int
	// Encoding is the column-level encoding of 2.0+ files ("values", or
	// "blob" for blob v1 columns of 2.0 files); legacy files give their
	// field encoding ("plain", "var_binary", "dictionary").
	Encoding string
	Pages    []PageEncoding
}

// PageEncoding describes one page of a column.
type PageEncoding struct {
	// Length is the page length as stored: top-level rows (2.1+), items
	// (2.0) or values (legacy).
	Length uint64
	// Bytes is the size of the page's buffers (0 for legacy files, whose
	// page table records no size).
	Bytes uint64
	// Encoding names the page's encoding tree, for example
	// "MiniBlockLayout(values=InlineBitpacking(64))" (2.1+) or
	// "Nullable(some)<Flat(64)>" (2.0).
	Encoding string
}

// ColumnEncodings reads the metadata of the data files of fragment fr and
// describes the columns that store the top-level fields named by columns
// (every field when columns is nil), in data file and column order. Fields
// without a column in the fragment (added later, dropped) are absent.
func (d *Dataset) ColumnEncodings(fr *Fragment, columns []string) ([]ColumnEncoding, error) {
	paths := map[int32]string{}
	var walkFields func(f *Field, prefix string)
	walkFields = func(f *Field, prefix string) {
		p := prefix + f.Name
		paths[f.ID] = p
		for _, c := range f.Children {
			walkFields(c, p+".")
		}
	}
	var tops []*Field
	if columns == nil {
		tops = d.schema.Fields
	}
	for _, name := range columns {
		f := d.schema.Field(name)
		if f == nil {
			return nil, fmt.Errorf("lance: %s: no column %q", d.dir, name)
		}
		tops = append(tops, f)
	}
	for _, f := range tops {
		walkFields(f, "")
	}
	var out []ColumnEncoding
	for i := range fr.Files {
		df := &fr.Files[i]
		var wanted []int // indices into df.Fields
		for k, id := range df.Fields {
			if _, ok := paths[id]; ok && df.ColumnIndices[k] >= 0 {
				wanted = append(wanted, k)
			}
		}
		if len(wanted) == 0 {
			continue
		}
		ces, err := d.fileEncodings(fr, df, wanted, paths)
		if err != nil {
			return nil, fmt.Errorf("lance: %s: fragment %d: data file %s: %w", d.dir, fr.ID, df.Path, err)
		}
		out = append(out, ces...)
	}
	return out, nil
}

// fileEncodings describes the columns of data file df that store the
// fields df.Fields[k] for k in wanted.
func (d *Dataset) fileEncodings(fr *Fragment, df *DataFile, wanted []int, paths map[int32]string) ([]ColumnEncoding, error) {
	p, err := d.dataFilePath(df)
	if err != nil {
		return nil, err
	}
	f, err := d.openFile(d.ctx, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []ColumnEncoding
	if df.Major == 0 && df.Minor < 3 {
		lm, err := readLegacyMeta(f, f.Size())
		if err != nil {
			return nil, err
		}
		for _, k := range wanted {
			id := df.Fields[k]
			lf := lm.fields[id]
			if lf == nil || lf.encoding == 0 {
				continue // a struct: its children hold the values
			}
			ce := ColumnEncoding{Fragment: fr.ID, File: df.Path, Major: df.Major, Minor: df.Minor,
				FieldID: id, Path: paths[id], Column: int(df.ColumnIndices[k]), Encoding: legacyEncodingName(lf.encoding)}
			for b := range lm.batchRows {
				_, n, err := lm.page(f, id, b)
				if err != nil {
					return nil, fmt.Errorf("field %d: %w", id, err)
				}
				ce.Pages = append(ce.Pages, PageEncoding{Length: n, Encoding: ce.Encoding})
			}
			out = append(out, ce)
		}
		return out, nil
	}
	fm, err := readFileMeta(f, f.Size())
	if err != nil {
		return nil, err
	}
	for _, k := range wanted {
		id, ci := df.Fields[k], int(df.ColumnIndices[k])
		if ci >= len(fm.columns) {
			return nil, fmt.Errorf("%w: column index %d of %d", errCorrupt, ci, len(fm.columns))
		}
		col := &fm.columns[ci]
		ce := ColumnEncoding{Fragment: fr.ID, File: df.Path, Major: df.Major, Minor: df.Minor,
			FieldID: id, Path: paths[id], Column: ci, Encoding: describeColumn(col.encoding)}
		for i := range col.pages {
			pg := &col.pages[i]
			var n uint64
			for _, s := range pg.bufSizes {
				n += s
			}
			ce.Pages = append(ce.Pages, PageEncoding{Length: pg.length, Bytes: n, Encoding: describePage(pg)})
		}
		out = append(out, ce)
	}
	return out, nil
}

// ColumnEncoding (the column-level encoding message) oneof field numbers.
const (
	columnEncodingValues = 1
	columnEncodingBlob   = 3
)

// describeColumn names a column-level encoding: for a ColumnEncoding
// message, the variant it holds ("values" for plain columns, "blob" for
// blob v1 columns of 2.0 files).
func describeColumn(e encodingAny) string {
	if e.name() != "ColumnEncoding" {
		return e.name()
	}
	k, _, err := decode.Oneof(e.value)
	switch {
	case err != nil:
		return "ColumnEncoding(invalid)"
	case k == columnEncodingValues:
		return "values"
	case k == columnEncodingBlob:
		return "blob"
	}
	return fmt.Sprintf("ColumnEncoding(%d)", k)
}

// legacyEncodingName names a legacy field encoding.
func legacyEncodingName(e uint64) string {
	switch e {
	case legacyPlain:
		return "plain"
	case legacyVarBinary:
		return "var_binary"
	case legacyDictionary:
		return "dictionary"
	}
	return fmt.Sprintf("encoding(%d)", e)
}

// describePage names the encoding tree of a page. It never fails: parts it
// cannot decode are named as such.
func describePage(p *pageInfo) string {
	switch p.encoding.name() {
	case "PageLayout":
		pl, err := decode.ParsePageLayout(p.encoding.value)
		if err != nil {
			return "PageLayout(invalid)"
		}
		return decode.DescribeLayout(pl)
	case "ArrayEncoding":
		return decode.Describe20(p.encoding.value)
	}
	return p.encoding.name()
}
