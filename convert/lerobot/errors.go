package lerobot

import (
	"errors"

	"github.com/bpconvert/bpconvert/convert"
)

// ErrNothingToConvert is matched (errors.Is) by the *convert.UsageError
// Inspect returns when the options skip every media feature of the dataset.
var ErrNothingToConvert = errors.New("lerobot: every media feature is skipped; there is nothing to convert")

// nothingToConvert is the refusal of options that skip every media feature.
func nothingToConvert() error {
	return &convert.UsageError{Err: ErrNothingToConvert, Hint: "drop --images skip or --video skip"}
}

// invalid blames the dataset: a *convert.InputError (exit 3 in the CLI) of
// file, a slash-separated path relative to the dataset root, or "" when no
// one file is at fault.
func invalid(file string, err error) error { return convert.Invalid("lerobot", file, err) }
