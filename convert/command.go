package convert

import (
	"context"
	"io"
)

// Request is one run of a converter as a command line asks for it: where
// the output goes, the settings every converter takes (Options.Source is
// the source the converter's opener opened, zero for standard input) and
// the standard input a converter that reads a stream reads.
type Request struct {
	// Dest is the destination, parsed once and checked (Target.Check).
	Dest Dest
	// Options are the settings every converter takes, with the run's
	// record, the base of an append and the opened source.
	Options Options
	// Stdin is the command's standard input.
	Stdin io.Reader
}

// JobFlags is what a converter's own flags give the command that runs it,
// once the command line is parsed (the function that declared them
// returned it). Errors are worded for the user: a bad flag value is a
// *UsageError, a source that is not what the converter reads an
// *InputError.
type JobFlags struct {
	// Check, when set, refuses flag values that cannot be, given the
	// settings every converter takes, before the source is opened.
	Check func(o PackOptions) error
	// Make makes the job for a request.
	Make func(ctx context.Context, r Request) (Job, error)
}

// Growth says how a converter's --append tells what is new in its
// sources.
type Growth int

const (
	// GrowsByFiles: new source files are what is new; a file the output
	// holds that changed is refused (Base.Sources), one that disappeared
	// too unless --allow-removed (WebDataset shards, Parquet tables).
	GrowsByFiles Growth = iota
	// GrowsInFiles: the dataset grows inside its files as well as by new
	// ones; the files added or changed are handed to the converter, which
	// compares its own units inside them (Base.Grown; LeRobot's
	// episodes). --allow-removed does not apply.
	GrowsInFiles
	// GrowsOwn: the converter sorts what is new itself, in its own units,
	// from the source's metadata (Lance fragments): the files are not
	// compared.
	GrowsOwn
)
