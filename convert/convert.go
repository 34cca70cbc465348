// Package convert states, once, the contract every source converter fills in
// and the output path they all share.
//
// A converter package (convert/wds, convert/parquet, convert/lerobot,
// convert/lance) has one shape: Options that embed this package's Options
// (the source arrives in them opened, as a Source, made by the converter
// package's OpenSource over srctree), NewJob(ctx, SRC, DST, Options)
// returning its *Job, which implements Job
// (Plan computes what will happen without writing anything, Run carries the
// plan out, each reporting progress to the counter it is given), and a
// Joiner for Finalize when its runs can be split into parts. Run writes through an Output (Begin): a staging directory beside the
// destination, a pack writer under DST/media configured from PackOptions,
// and a commit that renames the whole directory into place only when the run
// succeeded. Problems with the source are *InputError values (exit 3 in the
// CLI); selections the user must fix are *UsageError values (exit 2).
//
// It is not a registry or a CLI: cmd/bpconvert parses flags, builds a Job
// and drives the plan, prompt and run; this package knows no flags and
// prints nothing.
package convert

import (
	"context"
	"errors"
	"fmt"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// MediaDir is where every converter puts its packs, relative to the
// destination; tables reference them as zip://KEY::media/pack-NNNN.zip.
const MediaDir = "media"

// Job is one conversion of a source into a destination, built by a
// converter's NewJob. Every converter holds one contract:
//
//   - NewJob checks the options and reads the source's metadata at most (a
//     manifest, a listing); it writes nothing.
//   - Plan reads what the plan needs, the first time it is called, and
//     keeps it; a later call (a new selection) reuses what was read.
//   - Run carries out the last plan; called before any Plan it fails with
//     ErrNotPlanned, whatever the converter.
type Job interface {
	// Plan computes the plan for a selection of the plan's selectable
	// entries: nil selects what the options named (or the converter's
	// default), otherwise the entry names the user chose. It writes
	// nothing and may be called more than once (the source is read for the
	// first call only); Run carries out the last plan computed. prog
	// (which may be progress.Nop) receives the progress of reading the
	// source for the plan.
	Plan(ctx context.Context, selected []string, prog progress.Counter) (plan.Plan, error)
	// Run carries out the last plan, reporting progress to prog (which may
	// be progress.Nop), and returns what it did. On error or cancellation
	// nothing is left in the destination.
	Run(ctx context.Context, prog progress.Counter) (plan.Summary, error)
}

// ErrNotPlanned is the error of a Job's Run called before its Plan: Run
// carries out the plan that Plan computed, and there is none yet.
var ErrNotPlanned = errors.New("run called before the plan was made")

// Chooser is implemented by jobs that may need the user to choose payload
// entries: NeedChoice returns a *UsageError saying what to name when the
// options named none and the source declares no safe default, else nil.
// A terminal then gets a multi-select of the plan's selectable entries.
type Chooser interface {
	NeedChoice() error
}

// Options are the settings every converter takes; each converter's Options
// embed them.
type Options struct {
	// PackOptions shape the packs, the staging and the commit.
	PackOptions
	// ToolVersion is the version recorded in what the run writes (tables'
	// metadata, the run record).
	ToolVersion string
	// QuickPlan is set when no one confirms the plan (the CLI's --yes
	// without --dry-run): Plan then leaves out the figures that would take
	// a second full read of the source (compressed shards decompressed, a
	// binary column's every value sniffed), says so, and Run checks
	// everything as it writes.
	QuickPlan bool
	// Base is the committed output an append extends (see Target.ReadBase),
	// nil for a run that writes a new output.
	Base *Base
	// Source is the source the run converts, opened once by the caller
	// (srctree.OpenSource): the converter reads it only through it, and
	// its plan and summary say what reading it fetched from object storage
	// (Source.Fetched).
	Source Source
}

// DefaultMaxMembers is the converters' member cap per shard when the user
// names none. A reader that opens each reference on its own (fsspec's
// zip:// protocol, which Hugging Face datasets uses for string paths) lists
// the reference's whole shard per read: about 12 ms at 1,024 members on a
// 2-core machine, against 1.3 s at packcore's limit of 65,535 (docs/converters.md,
// "Reading references from Python at speed"). More members per shard only
// save central-directory bytes, so the converters take the small cap;
// --max-members raises it up to packcore.DefaultMaxMembers.
const DefaultMaxMembers = 1024

// PackOptions are the pack settings every converter takes and honours.
type PackOptions struct {
	// MaxPackBytes caps each shard (packcore's default when zero).
	MaxPackBytes int64
	// MaxMembers caps the members of each shard (DefaultMaxMembers when
	// zero).
	MaxMembers int
	// NoManifest skips pack.manifest.json and its SHA-256 digests.
	NoManifest bool
	// Record, when set, says what produced the output: it is committed with
	// it (RecordName), and a rerun after a kill with an equal record resumes
	// from the shards the killed run completed instead of starting over.
	Record *Record
	// Restart discards an interrupted run's staged work instead of
	// resuming it.
	Restart bool
	// Part, when set, makes the run one part of a split conversion: the
	// converter takes its share of the work (see Part.Range) and Begin
	// commits it beside the destination (Dest.Part) for Finalize to join.
	Part Part
	// RefBase is what references call the dataset root (see CheckRefBase,
	// which it has passed): "" for the default, relative to the root
	// (zip://KEY::media/pack-NNNN.zip), else an absolute path or a URL that
	// references put before media/pack-NNNN.zip.
	RefBase string
	// Append converts only what the destination's committed output does
	// not hold yet (see Base) and commits it as a new version of that
	// output; AllowRemoved keeps the rows of a source file the committed
	// output holds and that has since disappeared, where an append would
	// refuse.
	Append, AllowRemoved bool
}

// Members is the member cap the options name: MaxMembers, or
// DefaultMaxMembers when that is zero.
func (o PackOptions) Members() int {
	if o.MaxMembers <= 0 {
		return DefaultMaxMembers
	}
	return o.MaxMembers
}

// ShardNote is the plan note on the shard limits: what a shard holds at
// most and why the member cap matters to readers.
func (o PackOptions) ShardNote() string {
	b := o.MaxPackBytes
	if b <= 0 {
		b = packcore.DefaultMaxPackBytes
	}
	s := fmt.Sprintf("Shards hold at most %s and %s each.", plan.HumanBytes(b), plan.CountText(int64(o.Members()), "members"))
	if o.Members() > DefaultMaxMembers {
		return s + fmt.Sprintf(" A reader that opens each reference on its own (fsspec's zip://, as Hugging Face datasets does) lists the whole shard per read, which grows with the member count (about 12 ms at %s members, 1.3 s at 65,535 on a 2-core machine); keeping one zip file system per shard avoids it (examples/fsspec/packrefs.py).", plan.Thousands(int64(DefaultMaxMembers)))
	}
	return s + " A reader that opens each reference on its own (fsspec's zip://, as Hugging Face datasets does) lists the whole shard per read: the cap keeps that near 12 ms (1.3 s at 65,535 members); --max-members raises it for readers that keep one zip file system per shard."
}
