package parquet

import (
	"errors"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
)

// ErrInvalidInput is wrapped by every error that blames the source: a file
// that is not parquet or is truncated, a selected column that is not a
// payload, a Hugging Face path that escapes the dataset root or names no
// file, a table that cannot be decoded. It is convert.ErrInvalidInput.
var ErrInvalidInput = convert.ErrInvalidInput

// ErrNeedSelection is returned by Select when no column was chosen and the
// source does not declare its media columns unambiguously (no Hugging Face
// media features): the caller must choose with Columns or Fields.
var ErrNeedSelection = errors.New("no payload columns selected")

// InputError locates a problem with the source: File is the table's path
// relative to the source root (or a file name), Row the row within the
// table (or -1), Column the dotted column path. It is the converters' one
// input error type.
type InputError = convert.InputError

// inputErr builds an *InputError; row -1 means no row.
func inputErr(table string, row int64, column string, format string, a ...any) error {
	return &InputError{Source: "parquet", File: table, Row: row, Offset: -1, Column: column, Err: fmt.Errorf(format, a...)}
}
