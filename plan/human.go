package plan

import (
	"math"
	"strconv"
)

// HumanBytes formats a byte count for people: "N B" below 1 KiB, else one decimal and a
// binary unit (KiB, MiB, GiB, TiB, PiB, EiB; 1 KiB = 1024 B). The units are labelled
// KiB/MiB/GiB rather than KB/MB/GB because the divisor is 1024, so no reader has to guess
// whether "1 GB" meant 10^9 or 2^30 bytes. A value that would round to
// 1024.0 of a unit is shown in the next unit ("1.0 MiB", not "1024.0 KiB"). Negative
// counts get a minus sign.
func HumanBytes(n int64) string {
	sign, u := "", uint64(n)
	if n < 0 {
		sign, u = "-", uint64(-(n+1))+1 // also right for math.MinInt64
	}
	if u < 1024 {
		return sign + strconv.FormatUint(u, 10) + " B"
	}
	const units = "KMGTPE"
	v := float64(u)
	for i := 0; i < len(units); i++ {
		v /= 1024
		r := math.Round(v*10) / 10
		if r < 1024 || i == len(units)-1 {
			return sign + strconv.FormatFloat(r, 'f', 1, 64) + " " + units[i:i+1] + "iB"
		}
	}
	panic("unreachable")
}

// Thousands formats n with a comma between groups of three digits: 1,234,567.
func Thousands(n int64) string {
	sign, u := "", uint64(n)
	if n < 0 {
		sign, u = "-", uint64(-(n+1))+1
	}
	s := strconv.FormatUint(u, 10)
	out := make([]byte, 0, len(sign)+len(s)+len(s)/3)
	out = append(out, sign...)
	for i := 0; i < len(s); i++ {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
