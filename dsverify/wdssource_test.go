package dsverify

import (
	"slices"
	"testing"

	"github.com/bpconvert/bpconvert/convert/wds"
)

// TestExpandBraces: verify --against expands a shard list as Python's
// braceexpand 0.1.7 (which WebDataset uses) does, and as convert-wds does:
// the two implementations are independent and must agree, so verify reads
// the shards that were converted.
func TestExpandBraces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern string
		want    []string // nil: an error
	}{
		{"s/train-{000..003}.tar", []string{"s/train-000.tar", "s/train-001.tar", "s/train-002.tar", "s/train-003.tar"}},
		{"a.tar::b.tar", []string{"a.tar", "b.tar"}},
		{"a.tar::::{b,c}.tar", []string{"a.tar", "b.tar", "c.tar"}},
		{"x{a,b}y{1..2}", []string{"xay1", "xay2", "xby1", "xby2"}},
		{"{a,{b,c}d,}", []string{"a", "bd", "cd", ""}},
		{"{x}", []string{"{x}"}},
		{"{}", []string{"{}"}},
		{"{{a,b}}", []string{"{a}", "{b}"}},
		{"{9..11}", []string{"9", "10", "11"}},
		{"{3..1}", []string{"3", "2", "1"}},
		{"{1..7..3}", []string{"1", "4", "7"}},
		{"{7..1..-3}", []string{"7", "4", "1"}},
		{"{1..3..0}", []string{"1", "2", "3"}},
		{"{8..010}", []string{"008", "009", "010"}},
		{"{0..1}", []string{"0", "1"}},
		{"{-1..1}", []string{"-1", "0", "1"}},
		{"{-02..0}", []string{"-02", "-01", "000"}},
		{"{x..z}", []string{"x", "y", "z"}},
		{"{Y..b}", []string{"Y", "Z", "a", "b"}},
		{"{d..a..2}", []string{"d", "b"}},
		{"{1..b}", []string{"{1..b}"}},
		{"{1..3,x}", []string{"1..3", "x"}},
		{`a\{b,c\}`, []string{"a{b,c}"}},
		{`{a\,b,c}`, []string{"a,b", "c"}},
		{"{a,b", nil},
		{"a}b", nil},
		{"{0..2000000}", nil},
	} {
		got, err := expandShardList(tc.pattern)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: %d names, want an error", tc.pattern, len(got))
			}
		} else if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, %v; want %q", tc.pattern, got, err, tc.want)
		}
		conv, cerr := wds.ExpandShards(tc.pattern)
		if (cerr == nil) != (err == nil) || !slices.Equal(conv, got) {
			t.Errorf("%q: convert-wds expands to %q (%v), verify to %q (%v)", tc.pattern, conv, cerr, got, err)
		}
	}
}
