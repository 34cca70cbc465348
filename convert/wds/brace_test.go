package wds

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// The expected expansions are those of the Python braceexpand package
// 0.1.7 (its README and test suite), which WebDataset uses.
func TestExpandBraces(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern string
		want    []string
	}{
		{"shards/train-{000000..000003}.tar", []string{"shards/train-000000.tar", "shards/train-000001.tar", "shards/train-000002.tar", "shards/train-000003.tar"}},
		{"plain.tar", []string{"plain.tar"}},
		{"", []string{""}},
		{"{1,2}", []string{"1", "2"}},
		{"{1}", []string{"{1}"}},
		{"{}", []string{"{}"}},
		{"{1,2{}}", []string{"1", "2{}"}},
		{"a{b,c}d{e,f}", []string{"abde", "abdf", "acde", "acdf"}},
		{"a{b,c{d,e,}}", []string{"ab", "acd", "ace", "ac"}},
		{"a{b,{c,{d,e}}}", []string{"ab", "ac", "ad", "ae"}},
		{"{{a,b},{c,d}}", []string{"a", "b", "c", "d"}},
		{"python{2.{5..7},3.{2,3}}", []string{"python2.5", "python2.6", "python2.7", "python3.2", "python3.3"}},
		{"index.html{,.backup}", []string{"index.html", "index.html.backup"}},
		{"{7..10}", []string{"7", "8", "9", "10"}},
		{"{10..7}", []string{"10", "9", "8", "7"}},
		{"{1..5..2}", []string{"1", "3", "5"}},
		{"{5..1..2}", []string{"5", "3", "1"}},
		{"{1..5..-2}", []string{"1", "3", "5"}},
		{"{1..4..0}", []string{"1", "2", "3", "4"}},
		{"{07..10}", []string{"07", "08", "09", "10"}},
		{"{7..010}", []string{"007", "008", "009", "010"}},
		{"{0..2}", []string{"0", "1", "2"}},
		{"{2..-1}", []string{"2", "1", "0", "-1"}},
		{"{-01..1}", []string{"-01", "000", "001"}},
		{"{a..e}", []string{"a", "b", "c", "d", "e"}},
		{"{a..e..2}", []string{"a", "c", "e"}},
		{"{e..a}", []string{"e", "d", "c", "b", "a"}},
		{"{e..a..2}", []string{"e", "c", "a"}},
		{"{C..A}", []string{"C", "B", "A"}},
		{"{1..a}", []string{"{1..a}"}},
		{"{a..1}", []string{"{a..1}"}},
		{"{1..1}", []string{"1"}},
		{"{a..a}", []string{"a"}},
		{"{,}", []string{"", ""}},
		{"{Z..a}", []string{"Z", "a"}},
		{"{a..Z}", []string{"a", "Z"}},
		{`{\,1,2}`, []string{",1", "2"}},
		{`{1\,,2}`, []string{"1,", "2"}},
		{`{1,\,2}`, []string{"1", ",2"}},
		{`{1,2\,}`, []string{"1", "2,"}},
		{`\\{1,2}`, []string{`\1`, `\2`}},
		{`\}{1,2}`, []string{"}1", "}2"}},
		{`\{{1,2}`, []string{"{1", "{2"}},
		{`{1,2}\}`, []string{"1}", "2}"}},
		{`{1,2}\{`, []string{"1{", "2{"}},
		{`trailing\`, []string{`trailing\`}},
	}
	for _, c := range cases {
		got, err := ExpandBraces(c.pattern)
		if err != nil {
			t.Errorf("ExpandBraces(%q): %v", c.pattern, err)
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("ExpandBraces(%q) = %q, want %q", c.pattern, got, c.want)
		}
	}
}

func TestExpandBracesRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern string
		want    string
	}{
		{"{{1,2}", "unbalanced"},
		{"{1,2}}", "unbalanced"},
		{"{1},2}", "unbalanced"},
		{"{1,{2}", "unbalanced"},
		{"{}1,2}", "unbalanced"},
		{"{1,2{}", "unbalanced"},
		{"}{1,2}", "unbalanced"},
		{"{1,2}{", "unbalanced"},
		{"{1,2\\}", "unbalanced"},
		{"}{", "unbalanced"}, // braceexpand passes this one through; a shard name never needs it
		// An escaped opening brace leaves the closing one unbalanced, in
		// braceexpand 0.1.7 too.
		{`\{1,2}`, "unbalanced"},
		{`\{1..2}`, "unbalanced"},
		{"shards/{000000..001000001}.tar", "more than"},
		{"{0..9}{0..9}{0..9}{0..9}{0..9}{0..9}{0..9}", "more than"},
		{"{0..9223372036854775807}", "more than"},
		{"{1..99999999999999999999}", "out of range"},
	}
	for _, c := range cases {
		got, err := ExpandBraces(c.pattern)
		if !errors.Is(err, ErrBadPattern) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ExpandBraces(%q) = %d names, %v; want an error saying %q", c.pattern, len(got), err, c.want)
		}
	}
}

func TestExpandShards(t *testing.T) {
	t.Parallel()
	cases := []struct {
		spec string
		want []string
	}{
		{"a-{0..1}.tar::b-{x,y}.tar", []string{"a-0.tar", "a-1.tar", "b-x.tar", "b-y.tar"}},
		{"a.tar::::b.tar", []string{"a.tar", "b.tar"}},
		{"a.tar", []string{"a.tar"}},
	}
	for _, c := range cases {
		got, err := ExpandShards(c.spec)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ExpandShards(%q) = %q, %v; want %q", c.spec, got, err, c.want)
		}
	}
	if _, err := ExpandShards("a-{0..999999}.tar::b-{0..9}.tar"); !errors.Is(err, ErrBadPattern) {
		t.Errorf("ExpandShards over the limit: err = %v", err)
	}
}
