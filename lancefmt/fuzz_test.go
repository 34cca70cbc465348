package lancefmt

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/bpconvert/bpconvert/lancefmt/internal/assemble"
	"github.com/bpconvert/bpconvert/lancefmt/internal/decode"
)

// fuzzFixtures returns the fixture directory, or "" when the generator
// cannot run here or LANCE_FUZZ_SYNTHETIC_SEEDS=1 (the seeds then come from
// synthetic inputs only).
func fuzzFixtures(f *testing.F) string {
	if os.Getenv("LANCE_FUZZ_SYNTHETIC_SEEDS") == "1" {
		return ""
	}
	if os.Getenv("BPCONVERT_REQUIRE_TOOLS") != "1" {
		if _, err := os.Stat("../fixtures/lance/node_modules/@lancedb/lancedb"); err != nil {
			return ""
		}
	}
	return fixtures(f)
}

// fixtureDataFiles calls fn for every v2 data file of the fixtures.
func fixtureDataFiles(f *testing.F, fn func(path string, ds *Dataset)) {
	dir := fuzzFixtures(f)
	if dir == "" {
		return
	}
	for _, name := range datasetNames(f, dir) {
		ds, err := Open(context.Background(), filepath.Join(dir, name+".lance"), OpenOptions{})
		if err != nil {
			f.Fatal(err)
		}
		for _, fr := range ds.Fragments() {
			for _, df := range fr.Files {
				if df.Major == 0 && df.Minor < 3 {
					continue
				}
				p, err := ds.dataFilePath(&df)
				if err != nil {
					f.Fatal(err)
				}
				fn(p, ds)
			}
		}
	}
}

func FuzzManifest(f *testing.F) {
	f.Add(manifestBytes(0))
	f.Add(manifestBytes(64))
	if dir := fuzzFixtures(f); dir != "" {
		for _, name := range datasetNames(f, dir) {
			ms, _ := filepath.Glob(filepath.Join(dir, name+".lance", "_versions", "*.manifest"))
			for _, m := range ms {
				b, err := os.ReadFile(m)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseManifestFile(b)
		if err != nil {
			return
		}
		if bad := m.unsupportedFlags(); m.checkPaired() != nil || bad != 0 {
			describeFeatures(bad)
			return
		}
		newSchema(m.Fields, m.SchemaMetadata)
	})
}

// metadataTail returns the metadata region of a data file and its offset.
func metadataTail(b []byte) ([]byte, uint64) {
	if len(b) < fileFooterBytes {
		return nil, 0
	}
	foot := b[len(b)-fileFooterBytes:]
	start := min(binary.LittleEndian.Uint64(foot), binary.LittleEndian.Uint64(foot[8:]), binary.LittleEndian.Uint64(foot[16:]))
	if start > uint64(len(b)) {
		return nil, 0
	}
	return b[start:], start
}

func FuzzFileMetadata(f *testing.F) {
	seeded := 0
	fixtureDataFiles(f, func(p string, _ *Dataset) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if tail, start := metadataTail(b); tail != nil && seeded < 24 {
			f.Add(tail, start)
			seeded++
		}
	})
	f.Add(make([]byte, fileFooterBytes), uint64(0))
	f.Fuzz(func(t *testing.T, tail []byte, start uint64) {
		if start > 1<<40 {
			return
		}
		fm, err := parseFileTail(tail, int64(start), int64(start)+int64(len(tail)))
		if err != nil {
			return
		}
		for ci := range fm.columns {
			describeColumn(fm.columns[ci].encoding)
			for pi := range fm.columns[ci].pages {
				pageEncodingName(&fm.columns[ci].pages[pi])
				describePage(&fm.columns[ci].pages[pi])
			}
		}
	})
}

// fuzzPageSeeds adds the pages of the fixtures whose buffers are small.
func fuzzPageSeeds(f *testing.F, want string) {
	seeded := 0
	fixtureDataFiles(f, func(p string, _ *Dataset) {
		fh, err := os.Open(p)
		if err != nil {
			f.Fatal(err)
		}
		defer fh.Close()
		st, _ := fh.Stat()
		fm, err := readFileMeta(fh, st.Size())
		if err != nil {
			f.Fatal(err)
		}
		for ci := range fm.columns {
			for pi := range fm.columns[ci].pages {
				pg := &fm.columns[ci].pages[pi]
				if pg.encoding.name() != want || len(pg.bufSizes) > 3 || pg.length > 0xffff || seeded > 200 {
					continue
				}
				total := uint64(0)
				for _, s := range pg.bufSizes {
					total += s
				}
				if total > 64<<10 {
					continue
				}
				bufs, err := readPageBuffers(fh, fm.size, pg)
				if err != nil {
					f.Fatal(err)
				}
				for len(bufs) < 3 {
					bufs = append(bufs, nil)
				}
				f.Add(pg.encoding.value, bufs[0], bufs[1], bufs[2], uint16(pg.length), uint8(len(pg.bufSizes)))
				seeded++
			}
		}
	})
}

// fuzzTypes are the Arrow types page decoders are asked to produce.
var fuzzTypes = []arrow.DataType{
	arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64,
	arrow.BinaryTypes.String, arrow.BinaryTypes.LargeBinary, arrow.FixedWidthTypes.Boolean,
	arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Float32),
}

func FuzzPage21(f *testing.F) {
	fuzzPageSeeds(f, "PageLayout")
	f.Add([]byte{0x12, 0x02, 0x2a, 0x00}, []byte{}, []byte{}, []byte{}, uint16(4), uint8(0))
	f.Fuzz(func(t *testing.T, enc, b0, b1, b2 []byte, rows uint16, nbuf uint8) {
		bufs := decode.PageBuffers{b0, b1, b2}[:min(int(nbuf), 3)]
		pl, err := decode.ParsePageLayout(enc)
		if err != nil {
			return
		}
		decode.DescribeLayout(pl)
		if pl.Kind == decode.LayoutFullZip {
			inPlaceMatches(t, pl, bufs, int(rows))
			itemsMatch(t, pl, bufs, int(rows))
		}
		for _, dt := range fuzzTypes {
			sp, err := decode.Structural(pl, bufs, int(rows), func(n int) decode.Leaf { return assemble.ZeroLeaf(dt, n) }, decode.ValueMem{})
			if err != nil {
				return
			}
			a, err := assemble.Unravel(sp, []arrow.Field{{Name: "x", Type: dt, Nullable: true}})
			if err == nil {
				a.Release()
			}
			a, err = assemble.Unravel(sp, []arrow.Field{{Name: "l", Type: arrow.ListOf(dt), Nullable: true}, {Name: "item", Type: dt, Nullable: true}})
			if err == nil {
				a.Release()
			}
			if pl.Kind == decode.LayoutFullZip {
				parseBlobV2Descriptors(sp, pl.Raw)
			}
		}
		if pl.Kind == decode.LayoutBlob {
			decodeBlobV1Layout(pl.Raw, bufs, int(rows))
		}
	})
}

func FuzzPage20(f *testing.F) {
	fuzzPageSeeds(f, "ArrayEncoding")
	f.Fuzz(func(t *testing.T, enc, b0, b1, b2 []byte, rows uint16, nbuf uint8) {
		bufs := decode.PageBuffers{b0, b1, b2}[:min(int(nbuf), 3)]
		decode.Describe20(enc)
		for _, arrowDict := range []bool{false, true} {
			l, valid, err := decode.Array20(enc, bufs, int(rows), 0, arrowDict)
			if err != nil {
				continue
			}
			for _, dt := range fuzzTypes {
				if a, err := assemble.LeafArray(dt, l, valid); err == nil {
					a.Release()
				}
			}
		}
		if k, v, err := decode.Oneof(enc); err == nil && k == decode.Enc20List {
			decode.List20(v, bufs, int(rows))
		}
	})
}

func FuzzDeletionFile(f *testing.F) {
	fixtureDataFiles(f, func(string, *Dataset) {})
	if dir := fuzzFixtures(f); dir != "" {
		ms, _ := filepath.Glob(filepath.Join(dir, "*.lance", "_deletions", "*"))
		for _, m := range ms {
			b, err := os.ReadFile(m)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, filepath.Ext(m) == ".bin")
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, bitmap bool) {
		if bitmap {
			parseDeletionBitmap(b)
		} else {
			parseDeletionArrow(b, defaultAlloc)
		}
	})
}

func FuzzLegacyFile(f *testing.F) {
	if dir := fuzzFixtures(f); dir != "" {
		ps, _ := filepath.Glob(filepath.Join(dir, "types_legacy.lance", "data", "*.lance"))
		for _, p := range ps {
			if st, err := os.Stat(p); err == nil && st.Size() < 1<<20 {
				b, err := os.ReadFile(p)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b)
			}
		}
	}
	f.Add([]byte("0123456789abcdefLANC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		lm, err := readLegacyMeta(r, int64(len(b)))
		if err != nil {
			return
		}
		for id := lm.minID; id <= lm.maxID && id < lm.minID+64; id++ {
			for batch := range lm.batchRows {
				pos, n, err := lm.page(r, id, batch)
				if err != nil {
					continue
				}
				lm.readVarBinary(r, pos, n)
			}
		}
	})
}

// inPlaceMatches checks that decoding a full-zip page in place (the values
// moved within the page's own buffer) gives what decoding into a new buffer
// gives, each from a copy of the page.
func inPlaceMatches(t *testing.T, pl decode.PageLayout, bufs decode.PageBuffers, rows int) {
	t.Helper()
	clone := func() decode.PageBuffers {
		c := make(decode.PageBuffers, len(bufs))
		for i, b := range bufs {
			c[i] = bytes.Clone(b)
		}
		return c
	}
	zero := func(n int) decode.Leaf { return assemble.ZeroLeaf(arrow.BinaryTypes.LargeBinary, n) }
	want, werr := decode.Structural(pl, clone(), rows, zero, decode.ValueMem{})
	got, gerr := decode.Structural(pl, clone(), rows, zero, decode.ValueMem{InPlace: true})
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("in place: %v; into a new buffer: %v", gerr, werr)
	}
	if werr == nil && (!bytes.Equal(want.Vals.Data, got.Vals.Data) || !slices.Equal(want.Vals.Offs, got.Vals.Offs) || !slices.Equal(want.Def, got.Def)) {
		at := 0
		for at < min(len(got.Vals.Data), len(want.Vals.Data)) && got.Vals.Data[at] == want.Vals.Data[at] {
			at++
		}
		t.Fatalf("in place decoding differs: %d offsets and %d value bytes, want %d and %d; first differing byte at %d", len(got.Vals.Offs), len(got.Vals.Data), len(want.Vals.Offs), len(want.Vals.Data), at)
	}
}

// itemsMatch reads the values of a full-zip page of one value a row item
// by item as a ValueScanner does (with its default window, and with a
// window of 64 bytes and no value held, so that values are read in
// pieces), and, when both that and decoding the whole page succeed,
// expects the same values.
func itemsMatch(t *testing.T, pl decode.PageLayout, bufs decode.PageBuffers, rows int) {
	t.Helper()
	z, err := decode.ParseZipValues(pl.Raw)
	if err != nil || z.Repeated() || z.NumItems != uint64(rows) || len(bufs) == 0 {
		return
	}
	want, werr := decode.FullZip(pl.Raw, bufs, rows)
	for _, lim := range []struct{ window, held int64 }{{valueWindow, maxHeldValue}, {64, 0}} {
		s := &ValueScanner{ds: &Dataset{}, field: &Field{Name: "x"}, frag: &Fragment{}, window: lim.window, maxHeld: lim.held}
		s.win.buf = make([]byte, 0, lim.window)
		s.win.reset(bytes.NewReader(bufs[0]), 0, int64(len(bufs[0])))
		src := &zipSource{s: s, z: z, where: "page"}
		var got [][]byte
		ok := true
		for ok {
			v := Value{s: s}
			more, err := src.next(&v)
			if err != nil || !more {
				ok = err == nil
				break
			}
			if v.Null {
				got = append(got, nil)
				continue
			}
			r, err := v.Open()
			if err != nil {
				ok = false
				break
			}
			b, err := io.ReadAll(io.LimitReader(r, 1<<24))
			r.Close()
			if err != nil || int64(len(b)) != v.Size {
				ok = false
				break
			}
			got = append(got, b)
		}
		if !ok || werr != nil || want.Rep != nil || want.Vals.Offs == nil || want.Vals.N != len(got) {
			continue
		}
		for i, g := range got {
			null := want.Def != nil && want.Def[i] != 0
			w := want.Vals.Data[want.Vals.Offs[i]:want.Vals.Offs[i+1]]
			if (g == nil) != null || !bytes.Equal(g, w) {
				t.Fatalf("window %d: value %d read item by item differs from the page's decoding", lim.window, i)
			}
		}
	}
}
