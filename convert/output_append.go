package convert

import (
	"context"
	"path/filepath"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/stage"
)

// beginAppend starts an append to the committed local output (o.Base):
// staged beside it under its lock, a commit a stopped append began is
// finished first, and the record must still be the one the append
// planned on. A stopped append of the same record is resumed from the
// complete shards it staged.
func (d localDest) beginAppend(ctx context.Context, o OutputOptions) (*Output, error) {
	if o.Pack.Record == nil {
		return nil, &UsageError{Err: errStdinAppend}
	}
	st, err := stage.BeginAppend(d.dir, stage.Options{Record: o.Pack.Record.Encode(), Resume: !o.Pack.Restart})
	if err != nil {
		return nil, err
	}
	raw, _, err := d.readRecordRaw(ctx)
	if err == nil {
		err = o.Base.sameBase(raw)
	}
	if err == nil && st.Resumed {
		err = clearForResume(st.Dir, o.packDir())
	}
	if err != nil {
		st.Abort()
		return nil, err
	}
	out, err := beginAppendWriter(ctx, d.dir, st, o, nil, nil)
	if err != nil {
		st.Abort()
		return nil, err
	}
	return out, nil
}

// beginAppendWriter opens the pack writer of an append staged in st: the
// committed shards (o.Base) come first, then those a stopped run of this
// append completed (resumed: staged here, or in object storage), and new
// shards are numbered after them.
func beginAppendWriter(ctx context.Context, final string, st *stage.Stage, o OutputOptions, resumed []packcore.StoredShard, publish func(packcore.ShardInfo) error) (*Output, error) {
	base, members, size, err := o.Base.storedShards(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, s := range base {
		names[s.Info.Name] = true
	}
	out, err := beginWriter(ctx, final, st, o, true, append(base, resumed...), publish, len(base))
	if err != nil {
		return nil, err
	}
	out.base, out.baseShards, out.baseMembers, out.baseBytes = o.Base, names, members, size
	return out, nil
}

// completeRecord adds this commit's extent to the run's record and writes
// it into the staging directory, to be committed with the output: the
// shards after those of the output it extends (all of them for a new
// output), their members and bytes, and how many source files it read.
func (o *Output) completeRecord() error {
	if o.rec == nil {
		return nil
	}
	rec := *o.rec
	first, sources := 0, len(rec.Sources)
	rec.Commits = nil
	if o.base != nil {
		// The committed output's commits, whether or not the record was
		// extended (Base.Extend): the next append counts its shards by them.
		first, sources = len(o.base.Shards), len(o.base.Diff.New)
		rec.Commits = o.base.commits()
	}
	rec.Commits = append(rec.Commits, CommitExtent{First: first, Shards: o.stats.Shards - first,
		Members: o.stats.Members, Bytes: o.stats.Bytes, Sources: sources})
	return atomicfile.WriteFile(filepath.Join(o.Dir, RecordName), rec.Encode(), 0o644)
}
