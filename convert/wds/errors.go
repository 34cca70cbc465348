package wds

import (
	"errors"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
)

// ErrInvalidInput is wrapped by every error that blames the shards: a
// duplicate key, an unsafe or unusable member name, a link that cannot be
// converted, a device or FIFO member, a truncated or corrupt shard, a sample
// split by WebDataset's grouping rule, a missing shard. It is
// convert.ErrInvalidInput, which the CLI maps to exit code 3.
var ErrInvalidInput = convert.ErrInvalidInput

// ErrNoShards is returned when a source directory holds no file named like
// a tar shard. It is a wrong argument rather than bad data.
var ErrNoShards = errors.New("no tar shards")

// Hints attached to input errors, for the CLI's "hint:" line.
const (
	// HintShardPrefix is the hint for keys that repeat across shards.
	HintShardPrefix = "WebDataset keys are often unique only within a shard: rerun with --shard-prefix to prefix every key with its shard's name"
	// HintSortTar is the hint for a sample whose members are not adjacent.
	HintSortTar = "WebDataset groups only adjacent members into a sample: rewrite the shard sorted by name (tar --sort=name), or use --no-table to convert the members without a samples table"
	// HintTruncated is the hint for a shard that ends early.
	HintTruncated = "the shard is incomplete (an interrupted download or an unclosed writer): fetch or write it again"
)

// InputError locates a problem in the shards: File is the shard's path as
// listed from the source ("-" for stdin), Member the tar member's name as
// recorded, Offset the byte offset in the shard's uncompressed tar stream of
// the member's first header block or of the point where reading failed (-1
// when it does not apply). It is the converters' one input error type.
type InputError = convert.InputError

// Hint returns the hint attached to err, or "".
func Hint(err error) string { return convert.Hint(err) }

// inputErr builds an *InputError with a formatted reason.
func inputErr(shard, member string, off int64, format string, a ...any) *InputError {
	return &InputError{Source: "wds", Row: -1, File: shard, Member: member, Offset: off, Err: fmt.Errorf(format, a...)}
}
