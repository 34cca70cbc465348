package video

import (
	"math"
	"testing"
)

// TestTimesSaturate: seconds beyond the int64 range of nanoseconds
// saturate instead of wrapping, and every int64 formats with one sign.
func TestTimesSaturate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		s    float64
		want int64
	}{
		{1.5, 1_500_000_000},
		{1e14, math.MaxInt64},
		{-1e14, math.MinInt64},
		{math.Inf(1), math.MaxInt64},
		{math.NaN(), 0},
	}
	for _, c := range cases {
		if got := SecondsToNS(c.s); got != c.want {
			t.Errorf("SecondsToNS(%v) = %d, want %d", c.s, got, c.want)
		}
	}
	fmts := []struct {
		ns   int64
		want string
	}{
		{2_300_000_000, "2.300000s"},
		{-2_300_000_000, "-2.300000s"},
		{math.MaxInt64, "9223372036.854775s"},
		{math.MinInt64, "-9223372036.854775s"},
	}
	for _, c := range fmts {
		if got := fmtNS(c.ns); got != c.want {
			t.Errorf("fmtNS(%d) = %q, want %q", c.ns, got, c.want)
		}
	}
}
