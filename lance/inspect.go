package lance

import (
	"fmt"
	"os"
	"strings"

	"github.com/bpconvert/bpconvert/lance/internal/decode"
	"github.com/bpconvert/bpconvert/lance/internal/wire"
	"google.golang.org/protobuf/encoding/protowire"
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
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var out []ColumnEncoding
	if df.Major == 0 && df.Minor < 3 {
		lm, err := readLegacyMeta(f, st.Size())
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
	fm, err := readFileMeta(f, st.Size())
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
	case k == 1:
		return "values"
	case k == 3:
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
		return describeLayout(pl)
	case "ArrayEncoding":
		return describe20(p.encoding.value, 0)
	}
	return p.encoding.name()
}

// describeLayout names a 2.1+ page layout and the compressions it uses.
func describeLayout(pl decode.PageLayout) string {
	name := decode.LayoutNames[pl.Kind]
	if name == "" {
		name = fmt.Sprintf("PageLayout(%d)", pl.Kind)
	}
	// The CompressiveEncoding fields of each layout message.
	var parts map[protowire.Number]string
	switch pl.Kind {
	case decode.LayoutMiniBlock:
		parts = map[protowire.Number]string{1: "rep", 2: "def", 3: "values", 4: "dictionary"}
	case decode.LayoutFullZip:
		parts = map[protowire.Number]string{7: "values"}
	default:
		return name
	}
	var items []string
	err := wire.Walk(pl.Raw, func(f wire.Field) error {
		label, ok := parts[f.Num]
		if !ok {
			return nil
		}
		c, err := decode.ParseCompression(f.B, 0)
		if err != nil {
			items = append(items, label+"=invalid")
			return nil
		}
		items = append(items, label+"="+c.String())
		return nil
	})
	if err != nil {
		return name + "(invalid)"
	}
	if len(items) == 0 {
		return name
	}
	return name + "(" + strings.Join(items, ", ") + ")"
}

// describe20 names a 2.0 ArrayEncoding tree.
func describe20(enc []byte, depth int) string {
	if depth > 16 {
		return "..."
	}
	kind, val, err := decode.Oneof(enc)
	if err != nil {
		return "invalid"
	}
	name := decode.Enc20Name(kind)
	// sub collects the nested ArrayEncoding fields nums of val.
	sub := func(nums ...protowire.Number) []string {
		var out []string
		wire.Walk(val, func(f wire.Field) error {
			for _, n := range nums {
				if f.Num == n {
					out = append(out, describe20(f.B, depth+1))
				}
			}
			return nil
		})
		return out
	}
	wrap := func(n string, inner []string) string {
		if len(inner) == 0 {
			return n
		}
		return n + "<" + strings.Join(inner, ", ") + ">"
	}
	switch kind {
	case decode.Enc20Flat:
		var bits uint64
		scheme := ""
		wire.Walk(val, func(f wire.Field) error {
			switch f.Num {
			case 1:
				bits = f.U
			case 3:
				wire.Walk(f.B, func(g wire.Field) error {
					if g.Num == 1 {
						scheme = string(g.B)
					}
					return nil
				})
			}
			return nil
		})
		if scheme != "" && scheme != "none" {
			return fmt.Sprintf("Flat(%d, %s)", bits, scheme)
		}
		return fmt.Sprintf("Flat(%d)", bits)
	case decode.Enc20Nullable:
		nk, nv, err := decode.Oneof(val)
		if err != nil {
			return "Nullable(invalid)"
		}
		var inner []string
		wire.Walk(nv, func(f wire.Field) error {
			// no nulls: values = 1; some nulls: validity = 1, values = 2
			if (nk == 1 && f.Num == 1) || (nk == 2 && f.Num == 2) {
				inner = append(inner, describe20(f.B, depth+1))
			}
			return nil
		})
		switch nk {
		case 1:
			return wrap("Nullable(none)", inner)
		case 2:
			return wrap("Nullable(some)", inner)
		case 3:
			return "Nullable(all)"
		}
		return fmt.Sprintf("Nullable(%d)", nk)
	case decode.Enc20FixedSizeList:
		var dim uint64
		wire.Walk(val, func(f wire.Field) error {
			if f.Num == 1 {
				dim = f.U
			}
			return nil
		})
		return wrap(fmt.Sprintf("FixedSizeList(%d)", dim), sub(2))
	case decode.Enc20Binary:
		return wrap(name, sub(1, 2))
	case decode.Enc20Dictionary:
		return wrap(name, sub(1, 2))
	case decode.Enc20List:
		return wrap(name, sub(1))
	}
	return name
}
