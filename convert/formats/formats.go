// Package formats is the one list of the converters: a Format value per
// converter, saying what the source format is called, which command runs
// it (operands, help text, examples, the converter's own flags and the
// opener of its source), how --append tells what is new, how finalize
// joins the files its split runs write and how verify --against compares
// an output with its source. finalize, verify --against, the CLI's
// commands and the test that holds the README's commands table to the code
// range over All; the CLI imports no converter package. Adding a converter
// is its package (with its comparison in a package of its directory,
// convert/X/Xverify, built on dsverify.Check), its Format here, its row in
// the README's table and its section in docs/converters.md
// (docs/architecture.md, "How to add a converter").
//
// It is not a registry filled at init time: the list is a literal, in the
// order help shows it, and nothing else adds to it.
package formats

import (
	"context"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lance"
	"github.com/bpconvert/bpconvert/convert/lance/lanceverify"
	"github.com/bpconvert/bpconvert/convert/lerobot"
	"github.com/bpconvert/bpconvert/convert/lerobot/lerobotverify"
	"github.com/bpconvert/bpconvert/convert/lerobot/video/linked"
	"github.com/bpconvert/bpconvert/convert/parquet"
	"github.com/bpconvert/bpconvert/convert/parquet/parquetverify"
	"github.com/bpconvert/bpconvert/convert/wds"
	"github.com/bpconvert/bpconvert/convert/wds/wdsverify"
	"github.com/bpconvert/bpconvert/dsverify"
	"github.com/bpconvert/bpconvert/objstore"
	flag "github.com/spf13/pflag"
)

// Format is one converter.
type Format struct {
	// Name is the source format as plans and summaries name it.
	Name string
	// Command is the CLI command that runs the converter.
	Command string
	// Args are the command's operands as help shows them.
	Args string
	// Summary is the command's line in help and in the README's commands
	// table.
	Summary string
	// Long is help's text after the summary (paragraphs; may be empty).
	Long string
	// Examples are the command lines help shows.
	Examples []string
	// Open opens the one SRC operand, once (the converter package's
	// OpenSource): what reading it in object storage fetches is counted in
	// the options' Stats. A bad local path is a *srctree.LocalError; a bad
	// source an *InputError.
	Open func(ctx context.Context, src string, o objstore.Options) (convert.Source, error)
	// OpenMany, set instead of Open, opens one or more SRC operands (a
	// shell glob's) as one source; an unopened Source is standard input.
	OpenMany func(ctx context.Context, srcs []string, o objstore.Options) (convert.Source, error)
	// Flags declares the converter's own flags (beside those every
	// converter takes) and returns what checks them and makes its job
	// once they are parsed.
	Flags func(fs *flag.FlagSet) convert.JobFlags
	// Growth is how --append tells what is new in the source.
	Growth convert.Growth
	// Companion, when set, is the program that runs the conversion for
	// this build (one without the converter's engine): the command hands
	// itself over to it, and plans here only for --dry-run when it is
	// missing. A companion bpconvert-X is this program built with the
	// build tag X.
	Companion string
	// Joiner names, for each file that the parts of a split run write (by
	// slash path relative to the output), how finalize joins it: nil for a
	// file that every part must hold the same.
	Joiner func(rel string) convert.TableJoiner
	// Against is how verify --against compares what the converter wrote
	// with its source, reading the source format independently of the
	// converter: the Comparer of the converter's convert/X/Xverify
	// package, which does not import the converter.
	Against dsverify.Comparer
}

// All lists the converters in help order.
var All = []Format{
	{Name: "WebDataset", Command: "convert-wds", Args: "SRC DST", OpenMany: wds.OpenSources, Flags: wds.Flags,
		Joiner: wds.Joiner, Against: wdsverify.Comparer,
		Summary: "convert WebDataset tar shards into packs and a samples.parquet table",
		Long: "SRC is a directory of shards, a tar, a brace pattern ('train-{000000..000099}.tar'), several\n" +
			"of them (a shell glob), - for standard input, or s3://BUCKET/PREFIX.",
		Examples: []string{
			"bpconvert convert-wds --dry-run shards/ ds/",
			"bpconvert convert-wds --yes 'shards/train-{000000..000099}.tar' ds/ --inline cls,json",
			"bpconvert convert-wds --yes --part 2/8 shards/ s3://bucket/ds",
		}},
	{Name: "Parquet", Command: "convert-parquet", Args: "SRC DST", Open: parquet.OpenSource, Flags: parquet.Flags,
		Joiner: parquet.Joiner, Against: parquetverify.Comparer,
		Summary: "move payload columns of parquet tables into packs, columns become references",
		Examples: []string{
			"bpconvert convert-parquet --dry-run hf/ ds/",
			"bpconvert convert-parquet --yes hf/ ds/",
			"bpconvert convert-parquet --yes part-00000.parquet ds/ --column jpg --field meta.thumb",
		}},
	{Name: "LeRobot", Command: "convert-lerobot", Args: "SRC DST", Open: lerobot.OpenSource, Flags: lerobot.Flags(linked.Engine()),
		Growth: convert.GrowsInFiles, Companion: lerobot.Companion(linked.Engine()),
		Joiner: lerobot.Joiner, Against: lerobotverify.Comparer,
		Summary: "convert a LeRobot v2.0/v2.1/v3.0 dataset (parquet, or v3.0 stored as Lance): videos per episode and frames into packs",
		Long: "The conversion runs in bpconvert-lerobot, the companion program built with libav (make build\n" +
			"puts it beside bpconvert). Without it, --dry-run still plans, from the dataset's metadata\n" +
			"(the camera files' keyframes not probed).",
		Examples: []string{
			"bpconvert convert-lerobot --dry-run pusht/ ds/",
			"bpconvert convert-lerobot --yes pusht/ ds/",
		}},
	{Name: "Lance", Command: "convert-lance", Args: "SRC DST", Open: lance.OpenSource, Flags: lance.Flags, Growth: convert.GrowsOwn,
		Joiner: lance.Joiner, Against: lanceverify.Comparer,
		Summary: "move payload columns of a Lance dataset into packs; the table stays Lance, its pages copied",
		Long: "SRC and DST are local directories or s3://BUCKET/PREFIX. A source in object storage is read\n" +
			"through ranged requests (manifest, file metadata, then the pages and blobs the run needs);\n" +
			"the summary says what was fetched (bytes_fetched, fetch_requests).",
		Examples: []string{
			"bpconvert convert-lance --yes images.lance ds/",
			"bpconvert convert-lance --yes --column image images.lance ds/",
			"bpconvert convert-lance --dry-run --dataset-version 3 images.lance ds/",
		}},
}

// ByCommand returns the converter that command runs.
func ByCommand(command string) (Format, bool) {
	for _, f := range All {
		if f.Command == command {
			return f, true
		}
	}
	return Format{}, false
}

// Joiners returns the joiner of the converter that command runs, in the
// form convert.FinalizeOptions takes; a command that is no converter has
// none, and its parts cannot be finalized.
func Joiners(command string) (func(rel string) convert.TableJoiner, bool) {
	f, ok := ByCommand(command)
	if !ok {
		return nil, false
	}
	return f.Joiner, true
}

// Comparers returns the converters' comparisons with a source, in the
// order of All, in the form dsverify.Options takes.
func Comparers() []dsverify.Comparer {
	out := make([]dsverify.Comparer, len(All))
	for i, f := range All {
		out[i] = f.Against
	}
	return out
}
