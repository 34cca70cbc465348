package packcore

import (
	"slices"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/bpconvert/bpconvert/internal/keyindex"
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
	// One map entry a key (its folded form, most often the key itself,
	// to the position of the first key that folds to it); groups are made
	// only for folded forms seen twice, so a pack of many keys without
	// twins costs one map.
	first := make(map[string]int, len(keys))
	var groups map[int][]string // by the position of the group's first key
	for i, k := range keys {
		f := FoldKey(k)
		j, seen := first[f]
		if !seen {
			first[f] = i
			continue
		}
		if groups == nil {
			groups = map[int][]string{}
		}
		g, ok := groups[j]
		if !ok {
			g = []string{keys[j]}
		}
		groups[j] = append(g, k)
	}
	order := make([]int, 0, len(groups))
	for j := range groups {
		order = append(order, j)
	}
	sort.Ints(order)
	var out []Twins
	for _, j := range order {
		g := groups[j]
		sort.Strings(g)
		g = compactStrings(g)
		if len(g) < 2 {
			continue
		}
		out = append(out, Twins{Keys: g, Kind: twinKind(g)})
	}
	return out
}

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

// TwinFinder finds the twins among keys given one at a time, as FindTwins
// does among a list, in memory that does not grow with the keys: the
// folded forms go to a keyindex.Spilled (a temporary file in a directory
// the caller chooses, and about 9 bytes a key in memory), with the key
// itself only where it differs from its folded form. Only the keys of
// twin groups are held. A TwinFinder is not safe for concurrent use.
type TwinFinder struct {
	// folds maps each folded form to the first key that folded to it:
	// Loc.Shard -1 when that key is the folded form itself, else Loc.Size
	// is its number in keys.
	folds *keyindex.Spilled
	keys  *keyindex.Spilled
	// groups holds the keys of every folded form seen with more than one
	// distinct key.
	groups map[string][]string
}

// NewTwinFinder returns a finder whose temporary files are made in dir.
func NewTwinFinder(dir string) *TwinFinder {
	return &TwinFinder{
		folds:  keyindex.NewSpilled(dir, ".twins-folds-*.tmp"),
		keys:   keyindex.NewSpilled(dir, ".twins-keys-*.tmp"),
		groups: map[string][]string{},
	}
}

// Add takes one key; a key given again is ignored.
func (t *TwinFinder) Add(key string) error {
	f := FoldKey(key)
	loc, seen, err := t.folds.Get(f)
	if err != nil {
		return err
	}
	if !seen {
		loc = keyindex.Loc{Shard: -1}
		if f != key {
			loc = keyindex.Loc{Size: int64(t.keys.Len())}
			if err := t.keys.Put(key, keyindex.Loc{}); err != nil {
				return err
			}
		}
		return t.folds.Put(f, loc)
	}
	first := f
	if loc.Shard != -1 {
		if first, err = t.keys.Key(int(loc.Size)); err != nil {
			return err
		}
	}
	if first == key {
		return nil
	}
	g, ok := t.groups[f]
	if !ok {
		g = []string{first}
	}
	t.groups[f] = append(g, key)
	return nil
}

// Twins returns the groups found, each in sorted order, in the order of
// their first keys (as FindTwins returns them for sorted keys).
func (t *TwinFinder) Twins() []Twins {
	var out []Twins
	for _, g := range t.groups {
		g = slices.Clone(g)
		sort.Strings(g)
		g = compactStrings(g)
		if len(g) >= 2 {
			out = append(out, Twins{Keys: g, Kind: twinKind(g)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Keys[0] < out[j].Keys[0] })
	return out
}

// Close releases the finder's files.
func (t *TwinFinder) Close() {
	t.folds.Close()
	t.keys.Close()
}
