package wds

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidInput is wrapped by every error that blames the shards: a
// duplicate key, an unsafe or unusable member name, a link that cannot be
// converted, a device or FIFO member, a truncated or corrupt shard, a sample
// split by WebDataset's grouping rule, a missing shard. The CLI maps it to
// exit code 3.
var ErrInvalidInput = errors.New("invalid input")

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

// InputError locates a problem in the shards: which shard, which member,
// where in the shard's uncompressed tar stream, and why. It wraps
// ErrInvalidInput and its cause (such as packcore.ErrDuplicateKey), so
// errors.Is finds both.
type InputError struct {
	// Shard is the shard's path as listed from the source ("-" for stdin).
	Shard string
	// Member is the tar member's name as recorded in the tar, or "".
	Member string
	// Offset is the byte offset, in the uncompressed tar stream, of the
	// member's first header block, or of the point where reading failed;
	// -1 when it does not apply.
	Offset int64
	// Err is the reason.
	Err error
	// Hint suggests what to do about it, or is "".
	Hint string
}

// Error formats the error as
// `wds: shards/000003.tar: member "0012.jpg" at offset 1536: reason`.
func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString("wds: ")
	if e.Shard != "" {
		b.WriteString(e.Shard)
		b.WriteString(": ")
	}
	if e.Member != "" {
		b.WriteString("member ")
		b.WriteString(strconv.Quote(e.Member))
		if e.Offset >= 0 {
			b.WriteString(" at offset ")
			b.WriteString(strconv.FormatInt(e.Offset, 10))
		}
		b.WriteString(": ")
	} else if e.Offset >= 0 {
		b.WriteString("at offset ")
		b.WriteString(strconv.FormatInt(e.Offset, 10))
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns ErrInvalidInput and the cause.
func (e *InputError) Unwrap() []error { return []error{ErrInvalidInput, e.Err} }

// Hint returns the hint of the first *InputError in err's chain, or "".
func Hint(err error) string {
	var ie *InputError
	if errors.As(err, &ie) {
		return ie.Hint
	}
	return ""
}

// inputErr builds an *InputError with a formatted reason.
func inputErr(shard, member string, off int64, format string, a ...any) *InputError {
	return &InputError{Shard: shard, Member: member, Offset: off, Err: fmt.Errorf(format, a...)}
}
