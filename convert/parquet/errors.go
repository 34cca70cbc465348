package parquet

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidInput is wrapped by every error that blames the source: a file
// that is not parquet or is truncated, a selected column that is not a
// payload, a Hugging Face path that escapes the dataset root or names no
// file, a table that cannot be decoded.
var ErrInvalidInput = errors.New("invalid input")

// ErrNeedSelection is returned by Select when no column was chosen and the
// source does not declare its media columns unambiguously (no Hugging Face
// media features): the caller must choose with Columns or Fields.
var ErrNeedSelection = errors.New("no payload columns selected")

// InputError locates a problem with the source: the table (relative to the
// source root), the row and the column, when known. It wraps
// ErrInvalidInput and its cause.
type InputError struct {
	// Table is the table's path relative to the source root, or a file name.
	Table string
	// Row is the row number within the table, or -1.
	Row int64
	// Column is the dotted column path, or "".
	Column string
	// Err is the cause.
	Err error
}

// Error renders the location and the cause:
// parquet: data/t.parquet: row 3: column "image": path "x.png" names no file.
func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString("parquet: ")
	if e.Table != "" {
		b.WriteString(e.Table)
		b.WriteString(": ")
	}
	if e.Row >= 0 {
		b.WriteString("row ")
		b.WriteString(strconv.FormatInt(e.Row, 10))
		b.WriteString(": ")
	}
	if e.Column != "" {
		b.WriteString("column ")
		b.WriteString(strconv.Quote(e.Column))
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns ErrInvalidInput and the cause, so errors.Is finds both.
func (e *InputError) Unwrap() []error { return []error{ErrInvalidInput, e.Err} }

// inputErr builds an *InputError; row -1 means no row.
func inputErr(table string, row int64, column string, format string, a ...any) error {
	return &InputError{Table: table, Row: row, Column: column, Err: fmt.Errorf(format, a...)}
}
