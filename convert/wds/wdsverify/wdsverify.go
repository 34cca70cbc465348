// Package wdsverify is convert-wds's comparison for verify --against: it
// re-reads the WebDataset tar shards a samples table was written from and
// compares every member with the pack member of its key (an inline field
// with its cell in the samples table), then names every row of the table
// whose sample the shards hold no member of.
//
// It reads the source on its own, never through convert/wds: the shards
// through dsverify's tar reader (which dsverify's comparison of packs made
// from shards shares), a member's sample key and field from WebDataset's
// convention here (sample.go). A converter that misread a source would
// otherwise agree with itself (docs/architecture.md, "The verify
// principle").
package wdsverify

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/bpconvert/bpconvert/dsverify"
)

// Comparer compares a dataset with a samples table (and neither a Lance
// nor a LeRobot source: those are Lance's and LeRobot's to compare) with
// the tar shards it was converted from.
var Comparer = dsverify.Comparer{
	Claims: func(c *dsverify.Check, src string) bool {
		_, ok := samplesTable(c)
		return ok && !c.LanceSource() && !c.LeRobotSource()
	},
	Compare: compare,
}

// table is what a samples table records about itself, and what the
// comparison reads of its rows.
type table struct {
	rel         string
	packBase    string
	shardPrefix bool
	inline      map[string]bool
	// samples holds every row's __key__; inlineText the inline cells, by
	// the sample's key and the field, joined by a NUL.
	samples    map[int64]string
	inlineText map[string]string
}

// samplesTable returns the samples table of the dataset: the last, in path
// order, of the parquet tables named samples.parquet whose record is
// convert-wds's.
func samplesTable(c *dsverify.Check) (*table, bool) {
	recs := c.Records("parquet")
	rels := make([]string, 0, len(recs))
	for rel := range recs {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	var t *table
	for _, rel := range rels {
		if !strings.HasSuffix(rel, "samples.parquet") {
			continue
		}
		var rec struct {
			SourceFormat string   `json:"source_format"`
			PackBase     string   `json:"pack_base"`
			Inline       []string `json:"inline"`
			ShardPrefix  bool     `json:"shard_prefix"`
		}
		if json.Unmarshal([]byte(recs[rel]), &rec) != nil || rec.SourceFormat != "webdataset" {
			continue
		}
		t = &table{rel: rel, packBase: rec.PackBase, shardPrefix: rec.ShardPrefix, inline: map[string]bool{}}
		for _, f := range rec.Inline {
			t.inline[f] = true
		}
	}
	return t, t != nil
}

// readRows reads the samples table's __key__ and inline cells. A table
// that cannot be read whole keeps the rows read (the reference check
// reports it).
func (t *table) readRows(c *dsverify.Check) {
	t.samples = map[int64]string{}
	t.inlineText = map[string]string{}
	_ = c.ReadStrings(t.rel, func(row int64, column, value string) {
		switch {
		case column == "__key__":
			t.samples[row] = value
		case t.inline[column]:
			t.inlineText[t.samples[row]+"\x00"+column] = value
		}
	})
}

// compare re-reads the WebDataset shards and compares every member with
// the pack member of its key (an inline field with its table cell).
func compare(c *dsverify.Check, src string) error {
	t, _ := samplesTable(c)
	t.readRows(c)
	keys, err := c.CompareShards(src, dsverify.Shards{PackBase: t.packBase, Prefixed: t.shardPrefix, Inline: t.inlineCell})
	if err != nil {
		return err
	}
	t.missingSamples(c, src, keys)
	return nil
}

// inlineCell returns, for a member (name in its shard, its key prefix
// prefix) of an inline field, what compares its bytes with the field's
// cell in the samples table; nil for another member.
func (t *table) inlineCell(prefix, name string) func(b []byte) string {
	field, sample, ok := sampleField(name)
	if !ok || !t.inline[field] {
		return nil
	}
	text, inTable := t.inlineText[prefix+sample+"\x00"+field]
	return func(b []byte) string {
		switch {
		case !inTable:
			return fmt.Sprintf("inline field %q of sample %q is not in the samples table", field, prefix+sample)
		case text != string(b):
			return fmt.Sprintf("inline field %q of sample %q differs from the source", field, prefix+sample)
		}
		return ""
	}
}

// missingSamples reports every row of the samples table whose sample the
// source holds no member of (a shard of the source gone, or not named),
// keys being the members read: each is a mismatch and a problem naming the
// row and its sample.
func (t *table) missingSamples(c *dsverify.Check, src string, keys map[string]struct{}) {
	a := c.Report().Against
	if a == nil || len(t.samples) == 0 {
		return
	}
	held := map[string]bool{}
	for key := range keys {
		if _, sample, ok := sampleField(key); ok {
			held[sample] = true
		}
	}
	rows := make([]int64, 0)
	for row, sample := range t.samples {
		if !held[sample] {
			rows = append(rows, row)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i] < rows[j] })
	for _, row := range rows {
		a.Mismatches++
		c.Problem(dsverify.Problem{Table: t.rel, Row: row,
			Reason: fmt.Sprintf("sample %q: %s holds no member of it (%d of the table's %d rows have none)", t.samples[row], src, len(rows), len(t.samples))})
	}
}
