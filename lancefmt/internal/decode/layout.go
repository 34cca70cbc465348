package decode

import (
	"encoding/binary"
	"fmt"

	"github.com/bpconvert/bpconvert/lancefmt/internal/bitpack"
	"github.com/bpconvert/bpconvert/lancefmt/internal/fsst"
	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// Repetition/definition layer kinds of 2.1+ pages, innermost first.
const (
	LayerAllValidItem     = 1
	layerAllValidList     = 2
	LayerNullableItem     = 3
	LayerNullableList     = 4
	LayerEmptyableList    = 5
	LayerNullAndEmptyList = 6
)

// IsList reports whether a layer kind describes a list.
func IsList(k int) bool { return k == layerAllValidList || k >= LayerNullableList }

// defLevels returns the number of definition levels a layer consumes.
func defLevels(k int) int {
	switch k {
	case LayerNullableItem, LayerNullableList, LayerEmptyableList:
		return 1
	case LayerNullAndEmptyList:
		return 2
	}
	return 0
}

// StructPage is one decoded 2.1+ page of a leaf column before the levels
// are unravelled: per item repetition and definition levels (nil when
// absent) and the visible values.
type StructPage struct {
	Rows   int
	Rep    []uint16
	Def    []uint16
	Vals   Leaf
	Layers []int // innermost first
}

// MaxVisibleDef returns the highest definition level whose item still owns
// a value slot: the levels of the layers inside the innermost list.
func MaxVisibleDef(layers []int) int {
	n := 0
	for _, k := range layers {
		if IsList(k) {
			break
		}
		n += defLevels(k)
	}
	return n
}

// PageLayout is a decoded 2.1+ PageLayout.
type PageLayout struct {
	Kind int // 1 mini-block, 2 all-null/constant, 3 full-zip, 4 blob
	Raw  []byte
}

// page layout field numbers
const (
	LayoutMiniBlock = 1
	LayoutConstant  = 2
	LayoutFullZip   = 3
	LayoutBlob      = 4
	plSparse        = 5
)

// Field numbers of the 2.1+ layout messages.
const (
	miniRepCompression     = 1 // MiniBlockLayout
	miniDefCompression     = 2
	miniValueCompression   = 3
	miniDictionary         = 4
	miniNumDictItems       = 5
	miniLayers             = 6
	miniNumBuffers         = 7
	miniRepIndexDepth      = 8
	miniNumItems           = 9
	miniHasLargeChunk      = 10
	constLayers            = 5 // ConstantLayout
	constInlineValue       = 6
	constRepCompression    = 7
	constDefCompression    = 8
	constNumRepValues      = 9
	constNumDefValues      = 10
	fullZipBitsRep         = 1 // FullZipLayout
	fullZipBitsDef         = 2
	fullZipBitsPerValue    = 3
	fullZipBitsPerOffset   = 4
	fullZipNumItems        = 5
	fullZipNumVisibleItems = 6
	fullZipValueCompress   = 7
	fullZipLayers          = 8
)

var LayoutNames = map[int]string{LayoutMiniBlock: "MiniBlockLayout", LayoutConstant: "ConstantLayout", LayoutFullZip: "FullZipLayout", LayoutBlob: "BlobLayout", plSparse: "SparseLayout"}

// ParsePageLayout decodes the oneof of a PageLayout message.
func ParsePageLayout(b []byte) (PageLayout, error) {
	var pl PageLayout
	err := wire.Walk(b, func(f wire.Field) error {
		if pl.Kind == 0 {
			pl.Kind, pl.Raw = int(f.Num), f.B
		}
		return nil
	})
	if err == nil && pl.Kind == 0 {
		err = fmt.Errorf("%w: empty page layout", errCorrupt)
	}
	return pl, err
}

// PageBuffers holds the buffers of one page, read from the file.
type PageBuffers [][]byte

// Alloc returns a byte slice of length n for decoded values; its contents
// need not be zero (the decoder writes every byte).
type Alloc func(n int) []byte

// ValueMem says where the values of a full-zip page of variable-width
// values go.
type ValueMem struct {
	// Alloc supplies their buffer (nil: make).
	Alloc Alloc
	// InPlace lets the decoder move the values within the page's own data
	// buffer, to its start, when none grows in decoding (plain values,
	// zstd frames of raw blocks): no second buffer, and the page buffers
	// are changed. Otherwise Alloc serves.
	InPlace bool
}

// Structural decodes one 2.1+ page holding rows top-level rows. vm says
// where the values of a full-zip page of variable-width values go (see
// FullZipAlloc).
func Structural(pl PageLayout, bufs PageBuffers, rows int, zero func(n int) Leaf, vm ValueMem) (*StructPage, error) {
	switch pl.Kind {
	case LayoutMiniBlock:
		return MiniBlock(pl.Raw, bufs, rows)
	case LayoutConstant:
		return decodeConstant(pl.Raw, bufs, rows, zero)
	case LayoutFullZip:
		return FullZipAlloc(pl.Raw, bufs, rows, vm)
	}
	name := LayoutNames[pl.Kind]
	if name == "" {
		name = fmt.Sprintf("PageLayout(%d)", pl.Kind)
	}
	return nil, fmt.Errorf("page layout %s is not supported", name)
}

// parseLayers decodes a repeated RepDefLayer field.
func parseLayers(dst []int, f wire.Field) ([]int, error) {
	vs, err := wire.PackedUints(nil, f)
	for _, v := range vs {
		if v < 1 || v > 6 {
			return nil, fmt.Errorf("%w: unknown rep/def layer %d", errCorrupt, v)
		}
		dst = append(dst, int(v))
	}
	return dst, err
}

// MiniBlock decodes a MiniBlockLayout page.
func MiniBlock(raw []byte, bufs PageBuffers, rows int) (*StructPage, error) {
	var repC, defC, valC, dictC *Compression
	var numDict, numBuffers, numItems uint64
	var repDepth uint64
	var large bool
	sp := &StructPage{Rows: rows}
	err := wire.Walk(raw, func(f wire.Field) error {
		var err error
		switch f.Num {
		case miniRepCompression:
			repC, err = ParseCompression(f.B, 0)
		case miniDefCompression:
			defC, err = ParseCompression(f.B, 0)
		case miniValueCompression:
			valC, err = ParseCompression(f.B, 0)
		case miniDictionary:
			dictC, err = ParseCompression(f.B, 0)
		case miniNumDictItems:
			numDict = f.U
		case miniLayers:
			sp.Layers, err = parseLayers(sp.Layers, f)
		case miniNumBuffers:
			numBuffers = f.U
		case miniRepIndexDepth:
			repDepth = f.U
		case miniNumItems:
			numItems = f.U
		case miniHasLargeChunk:
			large = f.U != 0
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if valC == nil {
		return nil, fmt.Errorf("%w: mini-block without value compression", errCorrupt)
	}
	if numBuffers < 1 || numBuffers > 16 {
		return nil, fmt.Errorf("%w: mini-block with %d buffers per chunk", errCorrupt, numBuffers)
	}
	want := 2
	if dictC != nil {
		want++
	}
	if repDepth > 0 {
		want++
	}
	if len(bufs) < want {
		return nil, fmt.Errorf("%w: mini-block page has %d buffers, needs %d", errCorrupt, len(bufs), want)
	}
	meta, data := bufs[0], bufs[1]
	ww := 2
	if large {
		ww = 4
	}
	nChunks := len(meta) / ww
	if numItems > uint64(len(data))*8+uint64(nChunks)*4096 && numItems > 0 {
		return nil, fmt.Errorf("%w: %d items cannot fit %d bytes", errCorrupt, numItems, len(data))
	}
	var seen uint64
	pos := 0
	for ci := 0; ci < nChunks; ci++ {
		word := bitpack.ReadWord(meta, ci, ww*8)
		size := int((word>>4)+1) * 8
		var n uint64
		if ci < nChunks-1 {
			n = 1 << (word & 0xf)
		} else {
			if numItems < seen {
				return nil, fmt.Errorf("%w: mini-block chunks exceed %d items", errCorrupt, numItems)
			}
			n = numItems - seen
		}
		if n > numItems-seen {
			return nil, fmt.Errorf("%w: mini-block chunks exceed %d items", errCorrupt, numItems)
		}
		seen += n
		if pos+size > len(data) || size < 0 {
			return nil, fmt.Errorf("%w: mini-block chunk %d of %d bytes at %d exceeds %d", errCorrupt, ci, size, pos, len(data))
		}
		if err := sp.decodeChunk(data[pos:pos+size], repC, defC, valC, int(numBuffers), large, int(n)); err != nil {
			return nil, fmt.Errorf("chunk %d: %w", ci, err)
		}
		pos += size
	}
	if seen != numItems {
		return nil, fmt.Errorf("%w: mini-block chunks hold %d of %d items", errCorrupt, seen, numItems)
	}
	if dictC != nil {
		if numDict > blockValuesBound(len(bufs[2])) {
			return nil, fmt.Errorf("%w: dictionary of %d items in %d bytes", errCorrupt, numDict, len(bufs[2]))
		}
		dict, err := decodeBlock(dictC, bufs[2], int(numDict))
		if err != nil {
			return nil, fmt.Errorf("dictionary: %w", err)
		}
		sp.Vals, err = ApplyDictionary(sp.Vals, dict)
		if err != nil {
			return nil, err
		}
	}
	if sp.Rep == nil && sp.Def == nil && sp.Vals.N != rows {
		return nil, fmt.Errorf("%w: page of %d rows holds %d values", errCorrupt, rows, sp.Vals.N)
	}
	return sp, nil
}

// decodeChunk decodes one mini-block chunk and appends its levels and
// values to sp.
func (sp *StructPage) decodeChunk(c []byte, repC, defC, valC *Compression, nbuf int, large bool, n int) error {
	rd := c
	u16 := func() (int, error) {
		if len(rd) < 2 {
			return 0, fmt.Errorf("%w: chunk header truncated", errCorrupt)
		}
		v := int(binary.LittleEndian.Uint16(rd))
		rd = rd[2:]
		return v, nil
	}
	numLevels, err := u16()
	if err != nil {
		return err
	}
	repBytes, defBytes := 0, 0
	if repC != nil {
		if repBytes, err = u16(); err != nil {
			return err
		}
	}
	if defC != nil {
		if defBytes, err = u16(); err != nil {
			return err
		}
	}
	sizes := make([]int, nbuf)
	for i := range sizes {
		if large {
			if len(rd) < 4 {
				return fmt.Errorf("%w: chunk header truncated", errCorrupt)
			}
			sizes[i] = int(binary.LittleEndian.Uint32(rd))
			rd = rd[4:]
		} else if sizes[i], err = u16(); err != nil {
			return err
		}
	}
	off := len(c) - len(rd)
	take := func(n int) ([]byte, error) {
		off = (off + 7) &^ 7
		if n < 0 || off+n > len(c) {
			return nil, fmt.Errorf("%w: chunk buffer of %d bytes at %d exceeds %d", errCorrupt, n, off, len(c))
		}
		b := c[off : off+n]
		off += n
		return b, nil
	}
	if repC != nil {
		b, err := take(repBytes)
		if err != nil {
			return err
		}
		l, err := decodeBlock(repC, b, numLevels)
		if err != nil {
			return fmt.Errorf("repetition levels: %w", err)
		}
		lv, err := u16Levels(l)
		if err != nil {
			return err
		}
		sp.Rep = append(sp.Rep, lv...)
	}
	if defC != nil {
		b, err := take(defBytes)
		if err != nil {
			return err
		}
		l, err := decodeBlock(defC, b, numLevels)
		if err != nil {
			return fmt.Errorf("definition levels: %w", err)
		}
		lv, err := u16Levels(l)
		if err != nil {
			return err
		}
		sp.Def = append(sp.Def, lv...)
	}
	vb := make([][]byte, nbuf)
	for i := range vb {
		if vb[i], err = take(sizes[i]); err != nil {
			return err
		}
	}
	l, err := decodeMini(valC, vb, n)
	if err != nil {
		return fmt.Errorf("values %s: %w", valC, err)
	}
	return appendLeaf(&sp.Vals, l)
}

// ApplyDictionary replaces integer indices by dictionary values.
func ApplyDictionary(idx Leaf, dict Leaf) (Leaf, error) {
	if idx.Offs != nil || idx.Bits < 8 {
		return Leaf{}, fmt.Errorf("%w: dictionary indices of %d bits", errCorrupt, idx.Bits)
	}
	get := func(i int) (int, error) {
		v := bitpack.ReadWord(idx.Data, i, idx.Bits)
		if idx.Bits < 64 && v>>(idx.Bits-1) != 0 && idx.Bits != 8 {
			// negative indices do not occur; treat as corrupt
		}
		if v >= uint64(dict.N) {
			return 0, fmt.Errorf("%w: dictionary index %d of %d", errCorrupt, v, dict.N)
		}
		return int(v), nil
	}
	out := Leaf{N: idx.N}
	if dict.Offs != nil {
		out.Offs = make([]uint64, idx.N+1)
		var buf []byte
		for i := 0; i < idx.N; i++ {
			k, err := get(i)
			if err != nil {
				if dict.N == 0 {
					k = -1
				} else {
					return Leaf{}, err
				}
			}
			if k >= 0 {
				buf = append(buf, dict.Data[dict.Offs[k]:dict.Offs[k+1]]...)
			}
			out.Offs[i+1] = uint64(len(buf))
		}
		out.Data = buf
		return out, nil
	}
	if dict.Bits%8 != 0 || dict.Bits == 0 {
		return Leaf{}, fmt.Errorf("dictionary of %d-bit values is not supported", dict.Bits)
	}
	w := dict.Bits / 8
	out.Bits = dict.Bits
	out.Data = make([]byte, idx.N*w)
	for i := 0; i < idx.N; i++ {
		k, err := get(i)
		if err != nil {
			if dict.N == 0 {
				continue
			}
			return Leaf{}, err
		}
		copy(out.Data[i*w:], dict.Data[k*w:k*w+w])
	}
	return out, nil
}

// constantMeta is what a constant page's layout message says.
type constantMeta struct {
	inline         []byte
	hasInline      bool
	repC, defC     *Compression
	numRep, numDef uint64
}

// decodeConstant decodes an AllNullLayout (2.1) or ConstantLayout (2.2) page.
func decodeConstant(raw []byte, bufs PageBuffers, rows int, zero func(n int) Leaf) (*StructPage, error) {
	sp := &StructPage{Rows: rows}
	var m constantMeta
	err := wire.Walk(raw, func(f wire.Field) error {
		var err error
		switch f.Num {
		case constLayers:
			sp.Layers, err = parseLayers(sp.Layers, f)
		case constInlineValue:
			m.inline, m.hasInline = f.B, true
		case constRepCompression:
			m.repC, err = ParseCompression(f.B, 0)
		case constDefCompression:
			m.defC, err = ParseCompression(f.B, 0)
		case constNumRepValues:
			m.numRep = f.U
		case constNumDefValues:
			m.numDef = f.U
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var valueBuf []byte
	rest := bufs
	if !m.hasInline && (len(bufs) == 1 || len(bufs) == 3) {
		valueBuf, rest = bufs[0], bufs[1:]
	}
	if err := sp.constantLevels(m, rest, len(bufs)); err != nil {
		return nil, err
	}
	n := sp.visibleItems()
	if !m.hasInline && valueBuf == nil && sp.Def == nil {
		if err := sp.allNullLevels(n); err != nil {
			return nil, err
		}
	}
	value := m.inline
	switch {
	case m.hasInline:
	case valueBuf != nil:
		v, off, err := parseConstantValueBuffer(valueBuf)
		if err != nil {
			return nil, err
		}
		if len(v) > maxDecodedBytes/max(n, 1) {
			return nil, fmt.Errorf("%w: constant value of %d bytes", errCorrupt, len(v))
		}
		if off != nil {
			// variable width: replicate the bytes
			sp.Vals = repeatVariable(v, n)
			return sp, nil
		}
		value = v
	default:
		sp.Vals = zero(n)
		return sp, nil
	}
	if len(value) == 0 || len(value) > maxDecodedBytes/max(n, 1) {
		return nil, fmt.Errorf("%w: constant value of %d bytes", errCorrupt, len(value))
	}
	sp.Vals = repeatValue(value, n, zero(0))
	return sp, nil
}

// constantLevels decodes the repetition and definition levels of a
// constant page from its two level buffers (rest; none when the page has
// no levels) and checks them; nbufs is the page's buffer count, for the
// error.
func (sp *StructPage) constantLevels(m constantMeta, rest PageBuffers, nbufs int) error {
	var err error
	switch len(rest) {
	case 0:
	case 2:
		if sp.Rep, err = constantLevelBuffer(m.repC, rest[0], m.numRep); err != nil {
			return fmt.Errorf("repetition levels: %w", err)
		}
		if sp.Def, err = constantLevelBuffer(m.defC, rest[1], m.numDef); err != nil {
			return fmt.Errorf("definition levels: %w", err)
		}
	default:
		return fmt.Errorf("%w: constant page with %d buffers", errCorrupt, nbufs)
	}
	if sp.Rep != nil && sp.Def != nil && len(sp.Rep) != len(sp.Def) {
		return fmt.Errorf("%w: %d repetition and %d definition levels", errCorrupt, len(sp.Rep), len(sp.Def))
	}
	if sp.Rows > MaxPageItems || len(sp.Def) > MaxPageItems || len(sp.Rep) > MaxPageItems {
		return fmt.Errorf("%w: constant page of %d rows", errCorrupt, sp.Rows)
	}
	return nil
}

// constantLevelBuffer decodes one level buffer of a constant page: n
// levels compressed with c, or raw 16-bit levels when c is nil.
func constantLevelBuffer(c *Compression, b []byte, n uint64) ([]uint16, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if c == nil {
		if len(b)%2 != 0 {
			return nil, fmt.Errorf("%w: raw levels of odd length", errCorrupt)
		}
		out := make([]uint16, len(b)/2)
		for i := range out {
			out[i] = binary.LittleEndian.Uint16(b[2*i:])
		}
		return out, nil
	}
	if n > blockValuesBound(len(b)) {
		return nil, fmt.Errorf("%w: %d levels in %d bytes", errCorrupt, n, len(b))
	}
	l, err := decodeBlock(c, b, int(n))
	if err != nil {
		return nil, err
	}
	return u16Levels(l)
}

// visibleItems counts the items of a constant page that hold a value slot:
// those whose definition level reaches the innermost layer, every
// repetition level's item, or one per row without levels.
func (sp *StructPage) visibleItems() int {
	switch {
	case sp.Def != nil:
		mv := MaxVisibleDef(sp.Layers)
		n := 0
		for _, d := range sp.Def {
			if int(d) <= mv {
				n++
			}
		}
		return n
	case sp.Rep != nil:
		return len(sp.Rep)
	}
	return sp.Rows
}

// allNullLevels gives an all-null page without definition levels its n
// levels: every item null at the innermost nullable layer.
func (sp *StructPage) allNullLevels(n int) error {
	lvl := uint16(0)
	for _, k := range sp.Layers {
		if defLevels(k) > 0 {
			lvl = 1
			break
		}
	}
	sp.Def = make([]uint16, n)
	for i := range sp.Def {
		sp.Def[i] = lvl
	}
	if sp.Rep != nil && len(sp.Rep) != n {
		return fmt.Errorf("%w: all-null page levels", errCorrupt)
	}
	return nil
}

// repeatVariable is n variable-width values, each v.
func repeatVariable(v []byte, n int) Leaf {
	l := Leaf{N: n, Offs: make([]uint64, n+1), Data: make([]byte, 0, len(v)*n)}
	for i := 0; i < n; i++ {
		l.Data = append(l.Data, v...)
		l.Offs[i+1] = uint64(len(l.Data))
	}
	return l
}

// repeatValue is n values, each value, in the leaf form of z (variable
// width, bits, or fixed width of value's length).
func repeatValue(value []byte, n int, z Leaf) Leaf {
	if z.Offs != nil {
		return repeatVariable(value, n)
	}
	if z.Bits == 1 {
		out := make([]byte, (n+7)/8)
		if value[0] != 0 {
			for i := range out {
				out[i] = 0xff
			}
		}
		return Leaf{N: n, Bits: 1, Data: out}
	}
	out := make([]byte, 0, len(value)*n)
	for i := 0; i < n; i++ {
		out = append(out, value...)
	}
	return Leaf{N: n, Bits: len(value) * 8, Data: out, Dim: z.Dim}
}

// parseConstantValueBuffer decodes the value buffer of a constant page:
// u32 buffer count, u32 lengths, then the Arrow buffers of a one-value
// array. It returns the value bytes and, for variable width, the offsets.
func parseConstantValueBuffer(b []byte) ([]byte, []byte, error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("%w: constant value buffer of %d bytes", errCorrupt, len(b))
	}
	nb := int(binary.LittleEndian.Uint32(b))
	if nb < 1 || nb > 3 || len(b) < 4+4*nb {
		return nil, nil, fmt.Errorf("%w: constant value with %d buffers", errCorrupt, nb)
	}
	var parts [][]byte
	off := 4 + 4*nb
	for i := 0; i < nb; i++ {
		n := int(binary.LittleEndian.Uint32(b[4+4*i:]))
		if n < 0 || off+n > len(b) {
			return nil, nil, fmt.Errorf("%w: constant value buffer %d of %d bytes", errCorrupt, i, n)
		}
		parts = append(parts, b[off:off+n])
		off += n
	}
	if nb == 1 {
		return parts[0], nil, nil
	}
	offs, data := parts[len(parts)-2], parts[len(parts)-1]
	var start, end uint64
	switch len(offs) {
	case 8:
		start, end = uint64(binary.LittleEndian.Uint32(offs)), uint64(binary.LittleEndian.Uint32(offs[4:]))
	case 16:
		start, end = binary.LittleEndian.Uint64(offs), binary.LittleEndian.Uint64(offs[8:])
	default:
		return nil, nil, fmt.Errorf("%w: constant value offsets of %d bytes", errCorrupt, len(offs))
	}
	if start > end || end > uint64(len(data)) {
		return nil, nil, fmt.Errorf("%w: constant value offsets", errCorrupt)
	}
	return data[start:end], offs, nil
}

// FullZip decodes a FullZipLayout page.
func FullZip(raw []byte, bufs PageBuffers, rows int) (*StructPage, error) {
	return FullZipAlloc(raw, bufs, rows, ValueMem{})
}

// FullZipAlloc decodes a FullZipLayout page. The values of a variable-width
// page are written into one buffer of their exact decoded size, measured by
// a first pass over the items' headers, taken from vm.Alloc (nil: make), or
// moved to the start of the page's data buffer with vm.InPlace when the
// first pass finds that no value grows in decoding; the buffer never grows
// while the page is decoded. Should the sizes the headers announce be
// wrong, the values are still decoded (into a buffer grown by append) or
// the page is refused, as without the first pass.
func FullZipAlloc(raw []byte, bufs PageBuffers, rows int, vm ValueMem) (*StructPage, error) {
	h, err := parseFullZip(raw)
	if err != nil {
		return nil, err
	}
	bitsRep, bitsDef, bitsValue, bitsOffset, numItems, numVisible, valC := h.bitsRep, h.bitsDef, h.bitsValue, h.bitsOffset, h.numItems, h.numVisible, h.valC
	sp := &StructPage{Rows: rows, Layers: h.layers}
	if len(bufs) < 1 {
		return nil, fmt.Errorf("%w: full-zip page without values", errCorrupt)
	}
	data := bufs[0]
	if numItems > uint64(len(data))+1 || numVisible > numItems {
		return nil, fmt.Errorf("%w: full-zip page claims %d items in %d bytes", errCorrupt, numItems, len(data))
	}
	cw := h.ctrlBytes()
	mv := MaxVisibleDef(sp.Layers)
	if bitsRep > 0 {
		sp.Rep = make([]uint16, 0, numItems)
	}
	if bitsDef > 0 {
		sp.Def = make([]uint16, 0, numItems)
	}
	pv, err := newPerValue(valC, int(bitsValue), int(bitsOffset))
	if err != nil {
		return nil, err
	}
	if pv.lenBytes > 0 {
		if total, visible, shrinks, ok := pv.measure(data, numItems, cw, bitsDef, mv); ok {
			switch {
			case vm.InPlace && shrinks && total <= len(data):
				// Each value is written behind the position it is read
				// from: before it come at least its length prefix, and
				// the values before it took no more room decoded than
				// stored.
				pv.out.Data = data[:0:len(data)]
				pv.inPlace = true
			case vm.Alloc != nil:
				pv.out.Data = vm.Alloc(total)[:0]
			default:
				pv.out.Data = make([]byte, 0, total)
			}
			pv.out.Offs = make([]uint64, 1, visible+1)
		}
	} else if n := min(numVisible, numItems); n*uint64(pv.fixed) <= uint64(len(data)) {
		pv.out.Data = make([]byte, 0, n*uint64(pv.fixed))
	}
	pos := 0
	for i := uint64(0); i < numItems; i++ {
		def := 0
		if cw > 0 {
			if pos+cw > len(data) {
				return nil, fmt.Errorf("%w: full-zip item %d truncated", errCorrupt, i)
			}
			w := bitpack.ReadWord(data[pos:], 0, cw*8)
			pos += cw
			def = int(w & (1<<bitsDef - 1))
			if bitsRep > 0 {
				sp.Rep = append(sp.Rep, uint16(w>>bitsDef))
			}
			if bitsDef > 0 {
				sp.Def = append(sp.Def, uint16(def))
			}
		}
		if bitsDef > 0 && def > mv {
			continue
		}
		n, err := pv.add(data[pos:], def == 0)
		if err != nil {
			return nil, fmt.Errorf("full-zip item %d: %w", i, err)
		}
		pos += n
	}
	sp.Vals = pv.out
	return sp, nil
}

// fullZipHeader is a decoded FullZipLayout message.
type fullZipHeader struct {
	bitsRep, bitsDef, bitsValue, bitsOffset uint64
	numItems, numVisible                    uint64
	valC                                    *Compression
	layers                                  []int
}

// parseFullZip decodes and checks a FullZipLayout message.
func parseFullZip(raw []byte) (fullZipHeader, error) {
	var h fullZipHeader
	err := wire.Walk(raw, func(f wire.Field) error {
		var err error
		switch f.Num {
		case fullZipBitsRep:
			h.bitsRep = f.U
		case fullZipBitsDef:
			h.bitsDef = f.U
		case fullZipBitsPerValue:
			h.bitsValue = f.U
		case fullZipBitsPerOffset:
			h.bitsOffset = f.U
		case fullZipNumItems:
			h.numItems = f.U
		case fullZipNumVisibleItems:
			h.numVisible = f.U
		case fullZipValueCompress:
			h.valC, err = ParseCompression(f.B, 0)
		case fullZipLayers:
			h.layers, err = parseLayers(h.layers, f)
		}
		return err
	})
	if err != nil {
		return h, err
	}
	if h.valC == nil {
		return h, fmt.Errorf("%w: full-zip page without values", errCorrupt)
	}
	if h.bitsRep > 16 || h.bitsDef > 16 || h.bitsValue%8 != 0 || (h.bitsOffset != 0 && h.bitsOffset != 32 && h.bitsOffset != 64) {
		return h, fmt.Errorf("%w: full-zip widths rep %d def %d value %d offset %d", errCorrupt, h.bitsRep, h.bitsDef, h.bitsValue, h.bitsOffset)
	}
	return h, nil
}

// ctrlBytes is the size of each item's repetition/definition word.
func (h *fullZipHeader) ctrlBytes() int {
	switch t := h.bitsRep + h.bitsDef; {
	case t == 0:
		return 0
	case t <= 8:
		return 1
	case t <= 16:
		return 2
	}
	return 4
}

// measure walks the items of a full-zip page of variable-width values and
// returns the bytes their decoded values take, the number of visible items
// and whether no value grows in decoding (see growsNot); ok is false when a
// size cannot be known in advance (FSST, a zstd frame without its size) or
// the page is malformed (the decoding pass then reports where).
func (pv *perValue) measure(data []byte, numItems uint64, cw int, bitsDef uint64, mv int) (total int, visible int, shrinks bool, ok bool) {
	if pv.fsst != nil {
		return 0, 0, false, false
	}
	shrinks = true
	// The values may take as much room as the page they are read from
	// (which is in memory already), or maxDecodedBytes when that is more.
	limit := max(maxDecodedBytes, len(data))
	pos := 0
	for i := uint64(0); i < numItems; i++ {
		def := 0
		if cw > 0 {
			if pos+cw > len(data) {
				return 0, 0, false, false
			}
			def = int(bitpack.ReadWord(data[pos:], 0, cw*8) & (1<<bitsDef - 1))
			pos += cw
		}
		if bitsDef > 0 && def > mv {
			continue
		}
		visible++
		if def != 0 {
			continue
		}
		if pos+pv.lenBytes > len(data) {
			return 0, 0, false, false
		}
		n := bitpack.ReadWord(data[pos:], 0, pv.lenBytes*8)
		pos += pv.lenBytes
		if n > uint64(len(data)-pos) {
			return 0, 0, false, false
		}
		v := data[pos : pos+int(n)]
		pos += int(n)
		size := len(v)
		if pv.c.Kind == ceGeneral {
			s, known := decompressedSize(pv.c.comp, v)
			if !known {
				return 0, 0, false, false
			}
			size = s
			shrinks = shrinks && growsNot(pv.c.comp, v, size)
		}
		if size > limit-total {
			return 0, 0, false, false
		}
		total += size
	}
	return total, visible, shrinks, true
}

// perValue decodes the values of a full-zip page one by one.
type perValue struct {
	c        *Compression
	fixed    int // bytes per fixed-width value (0 for variable)
	lenBytes int // bytes of the length prefix (variable)
	fsst     *fsst.Table
	validity int // FSL: bytes of the zipped validity prefix
	out      Leaf
	// inPlace: out.Data is the page's data buffer, values are moved
	// within it (see FullZipAlloc).
	inPlace bool
}

func newPerValue(c *Compression, bitsValue, bitsOffset int) (*perValue, error) {
	pv := &perValue{c: c, fixed: bitsValue / 8, lenBytes: bitsOffset / 8}
	switch {
	case pv.fixed > 0:
		pv.out = Leaf{Bits: bitsValue}
		switch c.Kind {
		case CompressFlat:
		case ceFixedSizeList:
			if c.inner == nil || c.inner.Kind != CompressFlat || c.Bits == 0 {
				return nil, fmt.Errorf("full-zip value compression %s is not supported", c)
			}
			pv.out.Dim = int(c.Bits)
			if c.hasValidity {
				pv.validity = (int(c.Bits) + 7) / 8
				pv.out.ItemValid = []byte{}
			}
			if int(c.Bits)*int(c.inner.Bits)/8+pv.validity != pv.fixed && int(c.Bits)*int(c.inner.Bits)/8 != pv.fixed {
				return nil, fmt.Errorf("%w: fixed size list of %d×%d bits in %d-byte values", errCorrupt, c.Bits, c.inner.Bits, pv.fixed)
			}
			pv.out.Bits = int(c.Bits) * int(c.inner.Bits)
		default:
			return nil, fmt.Errorf("full-zip value compression %s is not supported", c)
		}
	case pv.lenBytes > 0:
		pv.out = Leaf{Offs: []uint64{0}}
		switch c.Kind {
		case CompressVariable, ceGeneral:
		case ceFsst:
			t, err := fsst.ParseTable(c.symbols)
			if err != nil {
				return nil, err
			}
			pv.fsst = t
		case CompressVariablePackedStruct:
		default:
			return nil, fmt.Errorf("full-zip value compression %s is not supported", c)
		}
	default:
		return nil, fmt.Errorf("%w: full-zip page without value width", errCorrupt)
	}
	return pv, nil
}

// add decodes one visible value from b, returning the bytes consumed.
func (pv *perValue) add(b []byte, valid bool) (int, error) {
	o := &pv.out
	if pv.fixed > 0 {
		if len(b) < pv.fixed {
			return 0, fmt.Errorf("%w: value truncated", errCorrupt)
		}
		v := b[:pv.fixed]
		if pv.out.Dim > 0 && pv.validity > 0 && len(v) == pv.validity+o.Bits/8 {
			o.ItemValid = appendBits(o.ItemValid, o.N*o.Dim, v[:pv.validity], o.Dim)
			v = v[pv.validity:]
		} else if o.ItemValid != nil {
			o.ItemValid = appendBits(o.ItemValid, o.N*o.Dim, allValid(o.Dim), o.Dim)
		}
		o.Data = append(o.Data, v...)
		o.N++
		return pv.fixed, nil
	}
	if !valid {
		o.Offs = append(o.Offs, uint64(len(o.Data)))
		o.N++
		return 0, nil
	}
	if len(b) < pv.lenBytes {
		return 0, fmt.Errorf("%w: length prefix truncated", errCorrupt)
	}
	n := bitpack.ReadWord(b, 0, pv.lenBytes*8)
	if n > uint64(len(b)-pv.lenBytes) {
		return 0, fmt.Errorf("%w: value of %d bytes exceeds the page", errCorrupt, n)
	}
	v := b[pv.lenBytes : pv.lenBytes+int(n)]
	switch {
	case pv.fsst != nil:
		var err error
		if o.Data, err = pv.fsst.Decode(o.Data, v, maxDecodedBytes); err != nil {
			return 0, err
		}
	case pv.c.Kind == ceGeneral && pv.inPlace:
		// Only stored forms were let in place: decoding must not fall
		// back to a decoder writing over bytes it has yet to read.
		var ok bool
		if o.Data, ok = appendInPlace(pv.c.comp, o.Data, v); !ok {
			return 0, fmt.Errorf("%w: value changed between the passes over the page", errCorrupt)
		}
	case pv.c.Kind == ceGeneral:
		var err error
		if o.Data, err = decompressAppend(pv.c.comp, o.Data, v); err != nil {
			return 0, err
		}
	default:
		o.Data = append(o.Data, v...)
	}
	o.Offs = append(o.Offs, uint64(len(o.Data)))
	o.N++
	return pv.lenBytes + int(n), nil
}

// blockValuesBound is the most values a block-compressed buffer of n bytes
// is accepted to expand to (run-length encoding reaches 255 values per
// 2-3 bytes), so that hostile counts cannot force huge allocations.
func blockValuesBound(n int) uint64 {
	return min(uint64(n)*512+4096, MaxPageItems)
}
