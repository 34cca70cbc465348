// Package lanceverify is convert-lance's comparison for verify --against:
// it opens the Lance dataset convert-lance read, at the version it
// converted, and compares, row by row in scan order, every extracted value
// (blob or binary) with the member its reference names.
//
// It reads the source on its own, through lancefmt and dsverify, never
// through convert/lance: a converter that misread a source would otherwise
// agree with itself (docs/architecture.md, "The verify principle").
package lanceverify

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/bpconvert/bpconvert/dsverify"
	"github.com/bpconvert/bpconvert/lancefmt"
)

// Comparer compares a dataset with a Lance table convert-lance wrote with
// the Lance dataset it was converted from (a directory, or a location in
// object storage read with ranged requests).
var Comparer = dsverify.Comparer{
	Claims:  func(c *dsverify.Check, src string) bool { return c.LanceSource() },
	Compare: compare,
}

// record is the part of convert-lance's schema metadata record that the
// comparison needs.
type record struct {
	SourceVersion uint64   `json:"source_version"`
	PackBase      string   `json:"pack_base"`
	Extracted     []string `json:"extracted"`
}

// compare opens the source dataset at the version that was converted and
// compares, row by row in scan order, every extracted value (blob or
// binary) with the member its reference names.
func compare(c *dsverify.Check, src string) error {
	a := &dsverify.Against{Source: src, Format: "lance"}
	c.Report().Against = a
	sp, _, err := c.Source()
	if err != nil {
		return fmt.Errorf("--against %s: %w", src, err)
	}
	recs := map[string]*record{}
	for rel, s := range c.Records("lance") {
		var r record
		if json.Unmarshal([]byte(s), &r) == nil && len(r.Extracted) > 0 {
			recs[rel] = &r
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(recs)) {
		rec := recs[rel]
		srcDS, err := c.OpenLance(sp, "", lancefmt.OpenOptions{Version: rec.SourceVersion})
		if err != nil {
			return fmt.Errorf("--against %s: %w", src, err)
		}
		outDS, err := c.OpenLance(c.Dataset(), rel, lancefmt.OpenOptions{})
		if err != nil {
			return fmt.Errorf("--against: %s: %w", rel, err)
		}
		base := rec.PackBase
		if base == "" {
			base = "media"
		}
		for _, col := range rec.Extracted {
			if err := c.CompareLanceColumn(a, srcDS, outDS, rel, col, base); err != nil {
				return err
			}
		}
	}
	return nil
}
