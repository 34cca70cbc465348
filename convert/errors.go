package convert

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalidInput is matched (errors.Is) by every error that blames the
// source: malformed, truncated or unsupported data, a duplicate or unsafe
// name, a missing file the source refers to. The CLI maps it to exit 3.
var ErrInvalidInput = errors.New("invalid input")

// ErrKeepStaged, matched (errors.Is) by the cause of a run's cancelled
// context, asks the run to keep its complete staged shards for a retry to
// resume, as after a kill, instead of removing them (see Output.Abort).
// The CLI gives it to SIGTERM, which schedulers send to a task they will
// run again.
var ErrKeepStaged = errors.New("keep the staged work for a retry")

// InputError locates a problem with a source: the file (shard, table,
// metadata file or data file, as the user would find it), the member, row,
// column and byte offset where they apply, the reason and, where one helps,
// a hint. It matches ErrInvalidInput and its cause.
type InputError struct {
	// Source is the converter's name, the message's first word ("wds").
	Source string
	// File is the file at fault, relative to the source where possible.
	File string
	// Member is the archive member's name, or "".
	Member string
	// Offset is a byte offset in File (for tars: in the uncompressed
	// stream), or -1.
	Offset int64
	// Row is a row number in File, or -1.
	Row int64
	// Column is the column or field, or "".
	Column string
	// Err is the reason.
	Err error
	// Hint suggests what to do about it, or is "".
	Hint string
}

// Invalid returns an *InputError of source with no location but file (which
// may be ""); callers set the other fields they know.
func Invalid(source, file string, err error) *InputError {
	return &InputError{Source: source, File: file, Offset: -1, Row: -1, Err: err}
}

// Error renders the location and the reason, for example
// `wds: shards/000003.tar: member "0012.jpg" at offset 1536: unexpected EOF`
// or `parquet: data/t.parquet: row 3: column "image": path names no file`.
// Long names are cut so a hostile name cannot flood the terminal.
func (e *InputError) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	if e.File != "" {
		b.WriteString(Cut(e.File))
		b.WriteString(": ")
	}
	if e.Member != "" {
		b.WriteString("member ")
		b.WriteString(strconv.Quote(Cut(e.Member)))
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
	if e.Row >= 0 {
		b.WriteString("row ")
		b.WriteString(strconv.FormatInt(e.Row, 10))
		b.WriteString(": ")
	}
	if e.Column != "" {
		b.WriteString("column ")
		b.WriteString(strconv.Quote(Cut(e.Column)))
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	}
	return strings.TrimSuffix(b.String(), ": ")
}

// Unwrap returns ErrInvalidInput and the cause, so errors.Is finds both.
func (e *InputError) Unwrap() []error { return []error{ErrInvalidInput, e.Err} }

// UsageError is a request the converter refuses as given: no payload
// chosen where one must be, an unknown column, options that contradict each
// other. The CLI maps it to exit 2 and prints the hint.
type UsageError struct {
	Err  error
	Hint string
}

// Error returns the reason.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the reason.
func (e *UsageError) Unwrap() error { return e.Err }

// Hint returns the hint of the first *InputError or *UsageError in err's
// chain, or "".
func Hint(err error) string {
	var ie *InputError
	if errors.As(err, &ie) && ie.Hint != "" {
		return ie.Hint
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return ue.Hint
	}
	var re *RetryError
	if errors.As(err, &re) {
		return re.Hint
	}
	return ""
}

// RetryError is a failure that a rerun can get past (exit 1), such as
// another run holding or changing the destination, with a hint saying so.
type RetryError struct {
	Err  error
	Hint string
}

func (e *RetryError) Error() string { return e.Err.Error() }
func (e *RetryError) Unwrap() error { return e.Err }

// maxName is the longest name an error message shows whole.
const maxName = 256

// Cut shortens s for a message: names longer than 256 bytes keep their
// start and end around the number of bytes left out.
func Cut(s string) string {
	if len(s) <= maxName {
		return s
	}
	head, tail := s[:maxName/2], s[len(s)-maxName/4:]
	return strings.ToValidUTF8(head, "") + "…(" + strconv.Itoa(len(s)-len(head)-len(tail)) + " bytes)…" + strings.ToValidUTF8(tail, "")
}
