package lance

import (
	"fmt"
	"slices"

	"github.com/bpconvert/bpconvert/internal/offheap"
)

// refs holds one column's new cell values (references, or kept external
// URIs) for every physical row of the fragments it touched, until the
// table is rewritten. A run may hold millions of them, so they are kept
// compactly, outside the Go heap: the text of each value once, back to
// back, and per row one 8-byte cell naming its text. A shared blob's rows
// share one text. Values are made Go strings again one fragment at a time.
type refs struct {
	text  offheap.Table[byte]
	cells offheap.Table[uint64] // per row; 0: no value
	frags map[uint64]fragCells
	// rows returns a fragment's number of physical rows.
	rows func(frag uint64) uint64
}

// fragCells is where a fragment's rows lie in refs.cells.
type fragCells struct{ start, n uint64 }

// A cell is validBit | offset<<lenBits | length.
const (
	lenBits  = 24
	validBit = 1 << 63
	maxText  = 1<<(63-lenBits) - 1 // offsets up to 512 GiB of text
)

func newRefs(rows func(frag uint64) uint64) *refs {
	r := &refs{frags: map[uint64]fragCells{}, rows: rows}
	set := offheap.NewSet(r)
	r.text = offheap.NewTable[byte](set)
	r.cells = offheap.NewTable[uint64](set)
	return r
}

// set gives physical row phys of fragment frag the value v, and returns
// its cell for rows that share it (setCell).
func (r *refs) set(frag, phys uint64, v string) (uint64, error) {
	off := uint64(len(r.text.S))
	if len(v) >= 1<<lenBits || off > maxText {
		return 0, fmt.Errorf("fragment %d row %d: a reference of %d bytes after %d bytes of references is beyond what a run holds", frag, phys, len(v), off)
	}
	offheap.PushString(&r.text, v)
	cell := validBit | off<<lenBits | uint64(len(v))
	return cell, r.setCell(frag, phys, cell)
}

// setCell gives a row the value of an earlier row's cell.
func (r *refs) setCell(frag, phys, cell uint64) error {
	fc, ok := r.frags[frag]
	if !ok {
		fc = fragCells{start: uint64(len(r.cells.S)), n: r.rows(frag)}
		r.cells.Extend(int(fc.n))
		r.frags[frag] = fc
	}
	if phys >= fc.n {
		return fmt.Errorf("fragment %d: row %d of %d physical rows", frag, phys, fc.n)
	}
	r.cells.S[fc.start+phys] = cell
	return nil
}

// values returns fragment frag's n values and which rows have one; a
// fragment never touched has none.
func (r *refs) values(frag, n uint64) ([]string, []bool, error) {
	vals, valid := make([]string, n), make([]bool, n)
	fc, ok := r.frags[frag]
	if !ok {
		return vals, valid, nil
	}
	if fc.n != n {
		return nil, nil, fmt.Errorf("fragment %d: %d references for %d physical rows", frag, fc.n, n)
	}
	for i, c := range r.cells.S[fc.start : fc.start+n] {
		if c&validBit != 0 {
			off, l := (c&^validBit)>>lenBits, c&(1<<lenBits-1)
			vals[i], valid[i] = string(r.text.S[off:off+l]), true
		}
	}
	return vals, valid, nil
}

// fragments returns the fragments touched, in order.
func (r *refs) fragments() []uint64 {
	out := make([]uint64, 0, len(r.frags))
	for f := range r.frags {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}
