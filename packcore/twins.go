package packcore

import (
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Twins is a group of distinct keys that name the same file on a file
// system that ignores case (Windows, macOS by default) or Unicode
// normalization (macOS): "café.jpg" written as NFC and as NFD, or "A.jpg"
// and "a.jpg". A pack holds them as separate members; unpacking them onto
// such a file system makes one overwrite or collide with the other.
type Twins struct {
	// Keys are the twins in sorted order (at least two).
	Keys []string
	// Kind is "case", "normalization" or "case and normalization".
	Kind string
}

// FoldKey returns the name under which case-insensitive, normalizing file
// systems see key: its NFC form, lower-cased.
func FoldKey(key string) string {
	return strings.ToLower(norm.NFC.String(key))
}

// FindTwins returns every group of keys that differ but fold to the same
// name (FoldKey), in order of each group's first key. Keys are compared
// whole: "A/x" and "a/x" are twins because their directories are.
func FindTwins(keys []string) []Twins {
	groups := map[string][]string{}
	var order []string
	for _, k := range keys {
		f := FoldKey(k)
		if _, ok := groups[f]; !ok {
			order = append(order, f)
		}
		groups[f] = append(groups[f], k)
	}
	var out []Twins
	for _, f := range order {
		g := groups[f]
		if len(g) < 2 {
			continue
		}
		sort.Strings(g)
		g = compactStrings(g)
		if len(g) < 2 {
			continue
		}
		out = append(out, Twins{Keys: g, Kind: twinKind(g)})
	}
	return out
}

// twinKind says what separates a group of twins.
func twinKind(g []string) string {
	nfc := map[string]bool{}
	lower := map[string]bool{}
	for _, k := range g {
		nfc[norm.NFC.String(k)] = true
		lower[strings.ToLower(k)] = true
	}
	switch {
	case len(nfc) == 1:
		return "normalization"
	case len(lower) == 1:
		return "case"
	}
	return "case and normalization"
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// String describes the group for a warning, for example
// `"café.jpg" and "café.jpg" differ only in Unicode normalization`.
func (t Twins) String() string {
	q := make([]string, len(t.Keys))
	for i, k := range t.Keys {
		q[i] = quoteName(k)
	}
	return strings.Join(q, " and ") + " differ only in " + map[string]string{
		"case":                   "case",
		"normalization":          "Unicode normalization (NFC/NFD)",
		"case and normalization": "case and Unicode normalization",
	}[t.Kind] + "; they collide on case-insensitive or normalizing file systems (macOS, Windows)"
}
