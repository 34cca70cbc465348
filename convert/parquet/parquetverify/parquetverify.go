// Package parquetverify is convert-parquet's comparison for verify
// --against: it compares every table convert-parquet rewrote with the
// source table it was rewritten from, row by row, each extracted value with
// the member its reference names and each kept column value by value.
//
// It reads the source on its own, through dsverify (the parquet and Arrow
// readers there), and never through convert/parquet: a converter that
// misread a source would otherwise agree with itself (docs/architecture.md,
// "The verify principle").
package parquetverify

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/bpconvert/bpconvert/dsverify"
)

// Comparer compares a dataset with a table convert-parquet rewrote (and
// neither a samples table, nor a Lance or LeRobot source: those are
// WebDataset's, Lance's and LeRobot's to compare) with the parquet tables,
// or Hugging Face save_to_disk Arrow files, it was converted from.
var Comparer = dsverify.Comparer{
	Claims: func(c *dsverify.Check, src string) bool {
		return len(records(c)) > 0 && !holdsSamples(c) && !c.LanceSource() && !c.LeRobotSource()
	},
	Compare: CompareTables,
}

// record is the part of convert-parquet's table record that the
// comparison needs.
type record struct {
	PackBase  string `json:"pack_base"`
	Extracted []struct {
		Path []string `json:"path"`
	} `json:"extracted"`
}

// decodeRecord decodes a table's record: ok is false for one that names no
// field extracted (another converter's, a samples table's).
func decodeRecord(s string) (*record, bool) {
	var r record
	if json.Unmarshal([]byte(s), &r) != nil || len(r.Extracted) == 0 {
		return nil, false
	}
	return &r, true
}

// records returns the parquet and Arrow tables of the dataset that carry
// convert-parquet's record, by path relative to the root.
func records(c *dsverify.Check) map[string]*record {
	out := map[string]*record{}
	for _, format := range []string{"parquet", "arrow"} {
		for rel, s := range c.Records(format) {
			if r, ok := decodeRecord(s); ok {
				out[rel] = r
			}
		}
	}
	return out
}

// holdsSamples reports whether the dataset has a samples table
// (convert-wds's record in a table named samples.parquet), which makes it
// WebDataset's to compare.
func holdsSamples(c *dsverify.Check) bool {
	for rel, s := range c.Records("parquet") {
		var r struct {
			SourceFormat string   `json:"source_format"`
			PackBase     string   `json:"pack_base"`
			Inline       []string `json:"inline"`
			ShardPrefix  bool     `json:"shard_prefix"`
		}
		if strings.HasSuffix(rel, "samples.parquet") && json.Unmarshal([]byte(s), &r) == nil && r.SourceFormat == "webdataset" {
			return true
		}
	}
	return false
}

// CompareTables compares every table of the dataset that carries
// convert-parquet's record with the table of the same path in the source
// src (or the Arrow data file of that name, for a Hugging Face save_to_disk
// source; a single file src for the table of its name), row by row: each
// extracted value with the member its reference names, every other column
// value by value. A dataset with no such table is left as it is (LeRobot's
// comparison, whose tables may carry the record, calls it too).
func CompareTables(c *dsverify.Check, src string) error {
	recs := records(c)
	if len(recs) == 0 {
		return nil
	}
	sp, name, err := c.Source()
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	if sp.Empty() {
		return fmt.Errorf("--against: %s: %w: no objects there", src, fs.ErrNotExist)
	}
	isDir := name == ""
	a := &dsverify.Against{Source: src, Format: "parquet"}
	c.Report().Against = a
	var keptColumns, keptValues int64
	for _, rel := range slices.Sorted(maps.Keys(recs)) {
		rec := recs[rel]
		if !isDir && name != path.Base(rel) {
			continue
		}
		sf := sp.File(rel)
		if strings.HasSuffix(rel, ".arrow") {
			a.Format = "Hugging Face save_to_disk (Arrow)"
		}
		if !sf.Exists() && strings.HasSuffix(rel, ".parquet") {
			// a Hugging Face save_to_disk source: the table was written
			// from the Arrow data file of the same name
			if arrowSrc := sp.File(strings.TrimSuffix(rel, ".parquet") + ".arrow"); arrowSrc.Exists() {
				sf = arrowSrc
				a.Format = "Hugging Face save_to_disk (Arrow)"
			}
		}
		if !sf.Exists() {
			a.Mismatches++
			c.Problem(dsverify.Problem{Table: rel, Row: -1, Reason: fmt.Sprintf("no source table %s to compare with", sf)})
			continue
		}
		base := rec.PackBase
		if base == "" {
			base = "media"
		}
		set, err := c.PackSet(base)
		if err != nil {
			return fmt.Errorf("--against: pack directory %s: %w", base, err)
		}
		out := c.Dataset().File(rel)
		var roots []string
		for _, x := range rec.Extracted {
			if err := c.CompareColumn(a, sp, "", sf, out, x.Path, set); err != nil {
				return err
			}
			if len(x.Path) > 0 {
				roots = append(roots, x.Path[0])
			}
		}
		columns, values, err := c.CompareKept(a, sf, out, roots)
		keptColumns += columns
		keptValues += values
		if err != nil {
			return err
		}
	}
	if keptColumns > 0 {
		a.Notes = append(a.Notes, fmt.Sprintf("kept columns compared value by value: %d values in %d columns", keptValues, keptColumns))
	}
	return nil
}
