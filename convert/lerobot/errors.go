package lerobot

import "errors"

// ErrInvalidInput is matched (errors.Is) by every error that blames the
// dataset: missing or malformed metadata, unsupported versions or templates,
// missing camera files, inconsistent episode intervals, unreadable tables.
// The CLI maps it to exit code 3.
var ErrInvalidInput = errors.New("invalid input")

// ErrNothingToConvert is returned when the options skip every media feature.
var ErrNothingToConvert = errors.New("lerobot: every media feature is skipped; there is nothing to convert")

// inputError is a problem with the dataset; it matches ErrInvalidInput and
// its cause.
type inputError struct{ err error }

func (e *inputError) Error() string   { return "lerobot: " + e.err.Error() }
func (e *inputError) Unwrap() []error { return []error{ErrInvalidInput, e.err} }

// invalid wraps err as an input error.
func invalid(err error) error { return &inputError{err: err} }
