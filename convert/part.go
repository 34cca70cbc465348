package convert

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Part names one of N parts of a conversion split across processes
// (--part I/N): each part converts a deterministic, contiguous share of the
// work, balanced by bytes, into its own directory beside the destination,
// and Finalize joins the parts into the destination. The zero Part is the
// whole conversion.
type Part struct {
	// I is the part's number, from 1; N the number of parts.
	I, N int
}

// MaxParts bounds N.
const MaxParts = 10000

// ParsePart reads "I/N" (1 <= I <= N <= MaxParts). The empty string is the
// whole conversion.
func ParsePart(s string) (Part, error) {
	if s == "" {
		return Part{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > MaxParts || i < 1 || i > n {
		return Part{}, fmt.Errorf("part %q: want I/N with 1 <= I <= N <= %d, such as 2/8", s, MaxParts)
	}
	return Part{I: i, N: n}, nil
}

// Whole reports whether p is the whole conversion (no --part).
func (p Part) Whole() bool { return p.N == 0 }

// String returns "I/N", or "" for the whole conversion.
func (p Part) String() string {
	if p.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", p.I, p.N)
}

// Range returns the items [lo, hi) of this part, for items of the given
// sizes in their conversion order: item j belongs to the part in whose
// share of the total bytes it starts, so the parts are contiguous, cover
// every item once, and carry about equal bytes. Items of size zero (or a
// total of zero) are shared out by count.
func (p Part) Range(sizes []int64) (lo, hi int) {
	if p.Whole() {
		return 0, len(sizes)
	}
	var total int64
	for _, s := range sizes {
		total += max(s, 0)
	}
	owner := func(j int, before int64) int {
		if total == 0 {
			return j * p.N / len(sizes)
		}
		// before*N/total without overflow for totals up to 2^63/N.
		return int(before / ((total + int64(p.N) - 1) / int64(p.N)))
	}
	lo, hi = -1, -1
	var before int64
	for j, s := range sizes {
		if o := owner(j, before); o == p.I-1 {
			if lo < 0 {
				lo = j
			}
			hi = j + 1
		}
		before += max(s, 0)
	}
	if lo < 0 {
		// An empty part sits where its share would start.
		before = 0
		for j, s := range sizes {
			if owner(j, before) >= p.I-1 {
				return j, j
			}
			before += max(s, 0)
		}
		return len(sizes), len(sizes)
	}
	return lo, hi
}

// PartsSuffix ends the name of the directory that holds a destination's
// parts, beside it: ".DST.bpconvert-parts".
const PartsSuffix = ".bpconvert-parts"

// PartsDir returns the directory holding dst's parts.
func PartsDir(dst string) string {
	return filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+PartsSuffix)
}

// PartDir returns the directory that part p of dst is committed to.
func PartDir(dst string, p Part) string {
	return filepath.Join(PartsDir(dst), PartName(p))
}

// PartName is the directory name of part p: part-0002-of-0008.
func PartName(p Part) string { return fmt.Sprintf("part-%04d-of-%04d", p.I, p.N) }

// ParsePartName reads a PartName.
func ParsePartName(name string) (Part, bool) {
	var p Part
	if _, err := fmt.Sscanf(name, "part-%04d-of-%04d", &p.I, &p.N); err != nil || PartName(p) != name || p.I < 1 || p.I > p.N {
		return Part{}, false
	}
	return p, true
}
