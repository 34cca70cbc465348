package packcore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
)

// TestTwinFinderMatchesFindTwins: the streaming finder reports the groups
// FindTwins finds in the sorted keys, in the same order, for the cases of
// TestFindTwins in any order and for 60,000 keys in shuffled order with
// twins of every kind among them (case, normalization, both; an early key
// that is its own folded form and a later one that is not, and the other
// way round; keys given twice). Its files leave nothing in the directory.
func TestTwinFinderMatchesFindTwins(t *testing.T) {
	t.Parallel()
	nfc, nfd := "caf\u00e9.jpg", "cafe\u0301.jpg"
	many := make([]string, 0, 60_100)
	for i := range 60_000 {
		many = append(many, fmt.Sprintf("%04d/%08d.jpg", i/1000, i))
	}
	many = append(many, "0001/00001234.JPG", "0042/00042000.Jpg", "0042/00042000.jPG", "Z/"+nfd, "z/"+nfc,
		"0007/00007007.jpg", "X/"+nfc, "x/"+nfc, "x/"+nfd, "Big", "big")
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(many), func(i, j int) { many[i], many[j] = many[j], many[i] })
	cases := [][]string{
		{nfc, nfd, "x"},
		{nfd, nfc},
		{"A.jpg", "a.jpg", "b.jpg"},
		{"a.jpg", "A.jpg"},
		{"Dir/" + nfc, "dir/" + nfd},
		{"a", "b", "a/b"},
		{"A/x", "a/x", "B", "b"},
		{"x", "x"},
		{"X", "X"},
		{"x", "X", "x"},
		{"X", "x", "X"},
		{"b", "a", "A", "B", "b", nfd, nfc},
		many,
	}
	for _, keys := range cases {
		dir := t.TempDir()
		tf := NewTwinFinder(dir)
		for _, k := range keys {
			if err := tf.Add(k); err != nil {
				t.Fatal(err)
			}
		}
		got := tf.Twins()
		tf.Close()
		want := FindTwins(slices.Sorted(slices.Values(keys)))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%.10q (%d keys): TwinFinder %q, FindTwins %q", keys, len(keys), got, want)
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
			t.Errorf("the directory holds %d entries (%v)", len(ents), err)
		}
	}
}
