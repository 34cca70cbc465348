package wds

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
)

// Output names inside DST.
const (
	// MediaDir is the pack directory, relative to DST; references name it.
	MediaDir = convert.MediaDir
	// TableName is the samples table, relative to DST.
	TableName = "samples.parquet"
)

// DefaultInlineMax is the largest member that Inline stores in the table.
const DefaultInlineMax = 1 << 20

// Options configure a WebDataset conversion.
type Options struct {
	// Options are the settings every converter takes. With QuickPlan the
	// plan reads only the headers of plain tar shards: compressed shards
	// are not decompressed for it, and it counts only the plain ones (and
	// says so), so that the conversion decompresses each shard once; the
	// conversion checks every shard as it goes either way.
	convert.Options
	// Stdin is read when the source is "-".
	Stdin io.Reader
	// StdinName names the shard read from Stdin (default "stdin"): its
	// --shard-prefix stem and its __shard__ value in the table. Errors name
	// it "-".
	StdinName string
	// ShardPrefix puts each shard's stem before its keys:
	// train-000003/000123.jpg. Use it when keys repeat across shards.
	ShardPrefix bool
	// NoTable skips samples.parquet. (The zero value writes it, so an
	// Options literal that forgets the field still gets the default.)
	NoTable bool
	// Inline lists fields (lower-case, as in the table: "cls", "txt",
	// "json") whose contents the table holds as strings instead of
	// references. The members are still packed.
	Inline []string
	// InlineMax is the largest member stored inline (default
	// DefaultInlineMax); a larger one is an error.
	InlineMax int64
	// src and dst are NewJob's.
	src string
	dst convert.Dest

	// mem is the allocator for the table (tests use a checked one).
	mem memory.Allocator
}

// withDefaults fills in defaults and normalises Inline.
func (o Options) withDefaults() Options {
	if o.InlineMax <= 0 {
		o.InlineMax = DefaultInlineMax
	}
	if o.MaxPackBytes <= 0 {
		o.MaxPackBytes = packcore.DefaultMaxPackBytes
	}
	if o.MaxMembers <= 0 {
		o.MaxMembers = convert.DefaultMaxMembers
	}
	inl := make([]string, 0, len(o.Inline))
	for _, f := range o.Inline {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" && !slices.Contains(inl, f) {
			inl = append(inl, f)
		}
	}
	slices.Sort(inl)
	o.Inline = inl
	return o
}

// check rejects option combinations that make no sense.
func (o Options) check() error {
	if len(o.Inline) > 0 && o.NoTable {
		return fmt.Errorf("wds: inline fields need the samples table, which is turned off")
	}
	for _, f := range o.Inline {
		if strings.HasPrefix(strings.TrimPrefix(f, "."), "__") || strings.Contains(f, "/") {
			return fmt.Errorf("wds: %q is not a field name", f)
		}
	}
	return nil
}

// inline reports whether field is stored inline.
func (o Options) inline(field string) bool {
	_, ok := slices.BinarySearch(o.Inline, field)
	return ok
}

// Result is what Convert did.
type Result struct {
	// Source and Dest are the source as given and the absolute output
	// directory.
	Source, Dest string
	// Shards counts the tar shards read.
	Shards int
	// Members counts the regular members converted; Links the hard and
	// symbolic links converted with their target's bytes; Dirs the
	// directory entries skipped. Inline counts the members and links of
	// inline fields among them, whose text is in the table and which are
	// not packed.
	Members, Links, Dirs, Inline int64
	// Samples counts the samples (table rows); Outside the packed members
	// that belong to no sample (names WebDataset skips).
	Samples, Outside int64
	// Fields lists the table's field columns, sorted.
	Fields []string
	// Table is the samples table's path relative to Dest, or "".
	Table string
	// Pack is what the pack writer wrote.
	Pack packcore.Stats
	// Warnings are things the user should know.
	Warnings []string
	// summary is the run's outcome in the CLI's summary form.
	summary plan.Summary

	// linkPaths counts links copied at once, after their target's shard
	// completed, and at the end of the input (for tests).
	linkPaths [3]int
}
