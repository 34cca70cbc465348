package lancefmt

import (
	"context"
	"google.golang.org/protobuf/encoding/protowire"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// encodingsOf describes the encodings of one page, e.g.
// "2.1 MiniBlockLayout values=InlineBitpacking(32) def=OutOfLineBitpacking(16)<Flat(1)>".
func encodingsOf(p *pageInfo) []string {
	switch p.encoding.name() {
	case "ArrayEncoding":
		var out []string
		var rec func(b []byte, depth int)
		// children lists the fields of each variant holding nested
		// ArrayEncodings.
		children := map[int][]protowireNum{decode.Enc20FixedSizeList: {2}, decode.Enc20List: {1}, decode.Enc20Binary: {1, 2}, decode.Enc20Dictionary: {1, 2}, decode.Enc20PackedStruct: {1}}
		rec = func(b []byte, depth int) {
			k, v, err := decode.Oneof(b)
			if err != nil || depth > 8 {
				return
			}
			out = append(out, "2.0 "+decode.Enc20Name(k))
			if k == decode.Enc20Flat {
				wire.Walk(v, func(f wire.Field) error {
					if f.Num == 3 {
						wire.Walk(f.B, func(g wire.Field) error {
							if g.Num == 1 {
								out = append(out, "2.0 Flat compressed "+string(g.B))
							}
							return nil
						})
					}
					return nil
				})
			}
			if k == decode.Enc20Nullable {
				nk, nv, err := decode.Oneof(v)
				if err != nil || nk == 3 {
					return
				}
				wire.Walk(nv, func(f wire.Field) error {
					rec(f.B, depth+1)
					return nil
				})
				return
			}
			wire.Walk(v, func(f wire.Field) error {
				for _, c := range children[k] {
					if f.Num == c && f.Type == 2 {
						rec(f.B, depth+1)
					}
				}
				return nil
			})
		}
		rec(p.encoding.value, 0)
		return out
	case "PageLayout":
		pl, err := decode.ParsePageLayout(p.encoding.value)
		if err != nil {
			return nil
		}
		out := []string{"2.1+ " + decode.LayoutNames[pl.Kind]}
		inline := false
		wire.Walk(pl.Raw, func(f wire.Field) error {
			switch {
			case pl.Kind == decode.LayoutConstant && f.Num == 6:
				inline = true
			case pl.Kind == decode.LayoutFullZip && f.Num == 1 && f.U > 0:
				out = append(out, "2.1+ FullZipLayout with repetition")
			case pl.Kind == decode.LayoutMiniBlock && f.Num == 10 && f.U > 0:
				out = append(out, "2.1+ MiniBlockLayout large chunks")
			}
			return nil
		})
		if pl.Kind == decode.LayoutConstant {
			nb := len(p.bufSizes)
			if !inline && (nb == 1 || nb == 3) {
				out = append(out, "2.1+ ConstantLayout value buffer")
			}
			if nb >= 2 {
				out = append(out, "2.1+ ConstantLayout with levels")
			}
		}
		wire.Walk(pl.Raw, func(f wire.Field) error {
			tag := ""
			switch {
			case pl.Kind == decode.LayoutMiniBlock && f.Num <= 4:
				tag = [...]string{"", "rep", "def", "values", "dictionary"}[f.Num]
			case pl.Kind == decode.LayoutFullZip && f.Num == 7:
				tag = "values"
			case pl.Kind == decode.LayoutConstant && f.Num == 6:
				out = append(out, "2.1+ ConstantLayout inline value")
			case pl.Kind == decode.LayoutBlob && f.Num == 1:
				tag = "inner"
			}
			if tag == "inner" {
				if il, err := decode.ParsePageLayout(f.B); err == nil {
					out = append(out, "2.1+ BlobLayout inner "+decode.LayoutNames[il.Kind])
				}
				return nil
			}
			if tag != "" {
				if c, err := decode.ParseCompression(f.B, 0); err == nil {
					out = append(out, "2.1+ "+decode.LayoutNames[pl.Kind]+" "+tag+" "+c.String())
				}
			}
			return nil
		})
		return out
	}
	return []string{p.encoding.typeURL}
}

// TestFixtureEncodings lists the encodings found in the fixture files and
// checks that the ones this package claims to decode are really exercised
// by the value-for-value tests.
func TestFixtureEncodings(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	seen := map[string]int{}
	for _, name := range datasetNames(t, dir) {
		ds, err := Open(context.Background(), filepath.Join(dir, name+".lance"), OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range ds.Fragments() {
			fr := &ds.Fragments()[i]
			for _, df := range fr.Files {
				if df.Major == 0 && df.Minor < 3 {
					continue
				}
				p, err := ds.dataFilePath(&df)
				if err != nil {
					t.Fatal(err)
				}
				f, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				st, _ := f.Stat()
				fm, err := readFileMeta(f, st.Size())
				f.Close()
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				for ci := range fm.columns {
					for pi := range fm.columns[ci].pages {
						for _, e := range encodingsOf(&fm.columns[ci].pages[pi]) {
							seen[e]++
						}
					}
				}
			}
		}
	}
	var all []string
	for e := range seen {
		all = append(all, e)
	}
	sort.Strings(all)
	t.Logf("encodings in the fixtures:\n%s", strings.Join(all, "\n"))
	for _, want := range []string{
		"2.0 Nullable", "2.0 Flat", "2.0 Binary", "2.0 Dictionary", "2.0 List", "2.0 FixedSizeList", "2.0 SimpleStruct", "2.0 PackedStruct",
		"2.1+ MiniBlockLayout", "2.1+ FullZipLayout", "2.1+ ConstantLayout", "2.1+ BlobLayout",
		"2.1+ MiniBlockLayout values Fsst<Variable<Flat(32)>>",
		"2.1+ MiniBlockLayout values InlineBitpacking(32)",
		"2.1+ MiniBlockLayout values Flat(64)",
		"2.1+ MiniBlockLayout values Flat(1)",
		"2.1+ MiniBlockLayout values FixedSizeList<Flat(32)>",
		"2.1+ MiniBlockLayout values Rle<Flat(32)>",
		"2.1+ MiniBlockLayout def OutOfLineBitpacking(16)<Flat(1)>",
		"2.1+ MiniBlockLayout def Rle<Flat(16)>",
		"2.1+ MiniBlockLayout dictionary Variable<Flat(32)>",
		"2.1+ FullZipLayout values Fsst<Variable<Flat(32)>>",
		"2.1+ FullZipLayout values FixedSizeList<Flat(32)>",
		"2.1+ FullZipLayout values VariablePackedStruct",
		"2.1+ ConstantLayout inline value",
		"2.1+ FullZipLayout values General<Variable<Flat(32)>>",
		"2.1+ MiniBlockLayout dictionary General<Variable<Flat(32)>>",
		"2.1+ MiniBlockLayout rep OutOfLineBitpacking(16)<Flat(1)>",
		"2.1+ MiniBlockLayout values InlineBitpacking(64)",
		"2.1+ MiniBlockLayout values Flat(128)",
		"2.1+ MiniBlockLayout rep Rle<Flat(16)>",
		"2.1+ ConstantLayout value buffer",
		"2.1+ ConstantLayout with levels",
		"2.1+ FullZipLayout with repetition",
		"2.1+ MiniBlockLayout large chunks",
		"2.1+ MiniBlockLayout values General<ByteStreamSplit<Flat(32)>>",
		"2.1+ MiniBlockLayout values PackedStruct<Flat(96)>",
		"2.1+ FullZipLayout values Flat(64)",
		"2.1+ MiniBlockLayout dictionary General<Flat(64)>",
		"2.0 Flat compressed zstd",
	} {
		if seen[want] == 0 {
			t.Errorf("no fixture page uses %q", want)
		}
	}
}

type protowireNum = protowire.Number
