package convert

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// Target is the destination side of one run: where its output goes, which
// part of a split run it is (the zero Part for an undivided run), what it
// records (nil when its sources cannot be identified, such as standard
// input) and whether the user asked to restart. Its methods are the
// destination's policy, decided before anything is planned or written:
// whether the run may go there (Check), whether it is done already (Done),
// what a real run would do (Next) and what a stopped run left (Kept).
type Target struct {
	Dest    Dest
	Part    Part
	Record  *Record
	Restart bool
	// Append is set for a run that appends to a committed output (see
	// Base); Done then says already_done when nothing is new.
	Append bool
	// Base is the committed output the append extends, once read (Base).
	Base *Base
}

// newDestHint is the hint of a refusal of a destination that holds the
// finished output of a different run.
const newDestHint = "choose a new destination directory, or remove this one to convert again"

// Check returns an error unless the run may write to its destination:
// disjoint from src (see CheckDisjoint; a zero Source for none), and absent or empty,
// or holding a finished run's output, which Done then compares with this
// run. A part in object storage is checked where it is committed, beside
// the destination, which it does not touch.
func (t Target) Check(ctx context.Context, src Source) error {
	if err := CheckDisjoint(src, t.Dest); err != nil {
		return err
	}
	check := t.Dest
	if !t.Part.Whole() && t.Dest.Remote() {
		d, err := t.Dest.Part(t.Part)
		if err != nil {
			return err
		}
		check = d
	}
	if _, err := check.ReadRecord(ctx); err == nil {
		return nil
	}
	return check.Check(ctx)
}

// Done reports whether the destination holds this run's finished output:
// nil when it holds none; a summary with status already_done (and the
// totals of what the destination holds for this run) when that run had the
// same command, options and sources; a *UsageError naming the differences
// otherwise. A part is done when its own output is committed, or when the
// parts have been joined into the destination already; a part whose
// committed output differs is discarded under Restart, to be converted
// again. format names the summary's format.
func (t Target) Done(ctx context.Context, format string) (*plan.Summary, error) {
	if t.Base != nil {
		if len(t.Base.Diff.New) > 0 {
			return nil, nil
		}
		return totalsDone(ctx, t.Dest, format)
	}
	if t.Part.Whole() {
		return doneAt(ctx, t.Dest, t.Record, format, newDestHint)
	}
	if t.Record != nil {
		sum, err := doneAt(ctx, t.Dest, t.Record.Whole(), format, newDestHint)
		if sum != nil {
			if old, rerr := t.Dest.ReadRecord(ctx); rerr == nil {
				sum.Blobs, sum.Bytes, sum.Shards = 0, 0, 0
				for _, x := range old.Parts {
					if x.Part == t.Part.String() {
						sum.Blobs, sum.Bytes, sum.Shards = x.Members, x.Bytes, int64(x.Shards)
					}
				}
			}
		}
		if sum != nil || err != nil {
			return sum, err
		}
	}
	part, err := t.Dest.Part(t.Part)
	if err != nil {
		return nil, err
	}
	if t.Restart && t.Record != nil {
		if old, err := part.ReadRecord(ctx); err == nil && len(t.Record.Diff(old)) > 0 {
			// Made from other sources or options: its output is replaced.
			return nil, part.Discard(ctx)
		}
	}
	return doneAt(ctx, part, t.Record, format, fmt.Sprintf("its sources or options changed since part %s ran: add --restart to convert the part again (its old output is replaced)", t.Part))
}

// doneAt compares the record committed in d (if any) with rec; hint is the
// refusal's hint when they differ.
func doneAt(ctx context.Context, d Dest, rec *Record, format, hint string) (*plan.Summary, error) {
	old, err := d.ReadRecord(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, d.Check(ctx)
	}
	if diff := rec.Diff(old); len(diff) > 0 {
		return nil, &UsageError{Err: fmt.Errorf("%s: %w: %s", d.Location(), ErrDifferentRun, strings.Join(diff, "; ")), Hint: hint}
	}
	return totalsDone(ctx, d, format)
}

// totalsDone is the already_done summary of the output d holds, with its totals.
func totalsDone(ctx context.Context, d Dest, format string) (*plan.Summary, error) {
	sum := plan.Summary{Status: plan.StatusAlreadyDone, Format: format, Dest: d.Location()}
	members, bytes, shards, err := d.Totals(ctx)
	if err != nil {
		return nil, err
	}
	sum.Blobs, sum.Bytes, sum.Shards = members, bytes, int64(shards)
	return &sum, nil
}

// Next says, for a dry run, what a real run would do with the destination
// as it is: "" when it would just write; a sentence when it would find the
// run done, or resume from the complete shards an interrupted run staged
// beside a local destination; a sentence and the refusal (for the dry run
// to exit as the real run would) when it would refuse. It reads and changes
// nothing. A part says nothing.
func (t Target) Next(ctx context.Context) (string, error) {
	if !t.Part.Whole() {
		return "", nil
	}
	if t.Base != nil {
		if len(t.Base.Diff.New) == 0 {
			return fmt.Sprintf("A real run would do nothing: %s holds every source already (already done, exit 0).", t.Dest.Location()), nil
		}
		return "", nil
	}
	done, err := doneAt(ctx, t.Dest, t.Record, "", newDestHint)
	var ue *UsageError
	switch {
	case done != nil:
		return fmt.Sprintf("A real run would do nothing: %s holds this conversion's finished output (already done, exit 0).", t.Dest.Location()), nil
	case errors.As(err, &ue):
		return fmt.Sprintf("A real run would refuse (exit 2): %s; %s.", ue.Err, ue.Hint), err
	case err != nil:
		return "", err
	}
	if t.Dest.Remote() {
		return "", nil
	}
	staging := stage.Path(t.Dest.Location())
	if shards, err := packcore.ListShards(filepath.Join(staging, MediaDir)); err == nil && len(shards) > 0 {
		return fmt.Sprintf("A real run would resume: %s staged in %s by an interrupted run are reused when that run was this same conversion (--restart discards them).",
			plan.CountText(int64(len(shards)), "complete shards"), staging), nil
	}
	return "", nil
}

// Kept says what the stopped run left for a rerun to resume, where its
// output (or its part's) was going; packDir is its pack directory ("" for
// MediaDir).
func (t Target) Kept(ctx context.Context, packDir string) (Kept, error) {
	d := t.Dest
	if !t.Part.Whole() {
		p, err := d.Part(t.Part)
		if err != nil {
			return Kept{}, err
		}
		d = p
	}
	return d.Kept(ctx, packDir, t.Record)
}
