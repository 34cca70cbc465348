package plan

import (
	"math/bits"
	"slices"
)

// Evidence is what inspecting the values of a column, feature or file group found. It is
// filled by [Evidence.Add] and [Evidence.AddNull], one call per inspected value, and by
// the caller, who sets Values (and Unit when the values are not table values).
//
// Sizes and kinds describe the inspected non-null values, except TotalBytes, which is
// the entry's total: when every value was inspected (Sampled equals Values) the sum of
// their sizes; otherwise the converter sets it to a measure of the whole data it takes
// without reading every value (parquet: the uncompressed size of the column chunks that
// hold the values, from the file metadata).
type Evidence struct {
	// Unit names what is counted, in the plural: "values" (the default when empty),
	// "files", "members", "frames".
	Unit string `json:"unit"`
	// Values is how many values the entry has (for a column: the table's row count).
	Values int64 `json:"values"`
	// Sampled is how many values were inspected.
	Sampled int64 `json:"sampled"`
	// NonNull is how many inspected values were not null.
	NonNull int64 `json:"non_null"`
	// TotalBytes is the entry's total size (see above); Add sums the inspected
	// values into it.
	TotalBytes int64 `json:"total_bytes"`
	// MeanBytes is the mean size of the inspected non-null values, rounded down;
	// 0 when NonNull is 0.
	MeanBytes int64 `json:"mean_bytes"`
	// MinBytes and MaxBytes bound the sizes of the inspected non-null values.
	MinBytes int64 `json:"min_bytes"`
	MaxBytes int64 `json:"max_bytes"`
	// Kinds are the distinct kinds found (sniff labels such as "JPEG"), sorted.
	Kinds []string `json:"kinds"`
	// Nulls, when set, counts the null values of the whole entry (from
	// file metadata or a full read), not the sample's; NonNull and the
	// sizes stay the sample's.
	Nulls *int64 `json:"nulls,omitempty"`
	// NotSampled is set when no value was read for the plan (a plan made from metadata
	// only, under --yes): the sizes, kinds and Sampled are then zero because nothing
	// was counted, not because the entry is empty.
	NotSampled bool `json:"not_sampled,omitempty"`
}

// NotSampledText is what text plans show for figures a plan did not read.
const NotSampledText = "not sampled (--yes plans from metadata)"

// Add records one inspected, non-null value of size bytes. kind is its sniffed label;
// an empty kind is not recorded.
func (e *Evidence) Add(size int64, kind string) {
	if e.NonNull == 0 || size < e.MinBytes {
		e.MinBytes = size
	}
	if e.NonNull == 0 || size > e.MaxBytes {
		e.MaxBytes = size
	}
	e.Sampled++
	e.NonNull++
	e.TotalBytes += size
	e.MeanBytes = e.TotalBytes / e.NonNull
	if kind != "" {
		if i, found := slices.BinarySearch(e.Kinds, kind); !found {
			e.Kinds = slices.Insert(e.Kinds, i, kind)
		}
	}
}

// AddNull records one inspected null value.
func (e *Evidence) AddNull() {
	e.Sampled++
}

// DefaultSamples is how many values converters sample per column or file group for a
// plan's evidence (the reference tool's figure): enough to see mixed kinds and the size
// spread, few enough that planning a remote dataset stays quick.
const DefaultSamples = 32

// SampleIndices returns up to n evenly spaced indices into a sequence of length values,
// in increasing order: all of them when length <= n, else the first, the last and n-2
// spread between them. It returns nil when n or length is not positive.
func SampleIndices(n int, length int64) []int64 {
	if n <= 0 || length <= 0 {
		return nil
	}
	if length <= int64(n) {
		out := make([]int64, length)
		for i := range out {
			out[i] = int64(i)
		}
		return out
	}
	if n == 1 {
		return []int64{0}
	}
	out := make([]int64, n)
	last, steps := uint64(length-1), uint64(n-1)
	for i := range out {
		// i*last/steps without overflowing for lengths near the int64 limit.
		hi, lo := bits.Mul64(uint64(i), last)
		q, _ := bits.Div64(hi, lo, steps)
		out[i] = int64(q)
	}
	return out
}
