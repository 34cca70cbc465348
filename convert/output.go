package convert

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/stage"
)

// OutputOptions configure Begin.
type OutputOptions struct {
	// Pack are the user's pack settings.
	Pack PackOptions
	// GroupFill overrides packcore's placement-group fill threshold when
	// not zero (see packcore.WriterOptions.GroupFill).
	GroupFill float64
	// OnShard, when set, is called after each pack shard is complete, after
	// the milestone is reported.
	OnShard func(packcore.ShardInfo)
	// Progress receives a milestone per completed shard; nil for none.
	Progress progress.Counter
}

// Output is one run's output: a staging directory that becomes the
// destination on Commit, and the pack writer under its media directory.
// Abort (safe to defer) removes everything unless Commit succeeded.
type Output struct {
	// Final is the destination directory (absolute).
	Final string
	// Dir is the staging directory: write tables and other files under it,
	// at the paths they will have under Final.
	Dir string
	// Pack writes the packs; its references name MediaDir.
	Pack *packcore.Writer

	st     *stage.Stage
	stats  packcore.Stats
	closed bool
}

// Begin starts the output for destination dst, which must be absent or an
// empty directory.
func Begin(ctx context.Context, dst string, o OutputOptions) (*Output, error) {
	abs, err := filepath.Abs(dst)
	if err != nil {
		return nil, err
	}
	st, err := stage.Begin(abs)
	if err != nil {
		return nil, err
	}
	pc := progress.OrNop(o.Progress)
	w, err := packcore.Create(ctx, filepath.Join(st.Dir, MediaDir), packcore.WriterOptions{
		MaxPackBytes: o.Pack.MaxPackBytes,
		MaxMembers:   o.Pack.MaxMembers,
		NoManifest:   o.Pack.NoManifest,
		RefBase:      MediaDir,
		GroupFill:    o.GroupFill,
		NoLock:       true, // the staging directory is locked
		OnShard: func(s packcore.ShardInfo) {
			pc.Milestone(fmt.Sprintf("wrote %s/%s (%s)", MediaDir, s.Name, plan.CountText(int64(s.Members), "members")))
			if o.OnShard != nil {
				o.OnShard(s)
			}
		},
	})
	if err != nil {
		st.Abort()
		return nil, err
	}
	return &Output{Final: abs, Dir: st.Dir, Pack: w, st: st}, nil
}

// Path returns the staging path of rel, a slash-separated path relative to
// the destination.
func (o *Output) Path(rel string) string { return filepath.Join(o.Dir, filepath.FromSlash(rel)) }

// ClosePack completes the last shard and the manifest, so the packs can be
// read back before the tables are written. It is called by Commit when the
// converter has not.
func (o *Output) ClosePack() (packcore.Stats, error) {
	if o.closed {
		return o.stats, nil
	}
	st, err := o.Pack.Close()
	if err != nil {
		return packcore.Stats{}, err
	}
	o.stats, o.closed = st, true
	return st, nil
}

// Commit closes the packs and renames the staging directory into place.
func (o *Output) Commit() (packcore.Stats, error) {
	st, err := o.ClosePack()
	if err != nil {
		return st, err
	}
	return st, o.st.Commit()
}

// Abort discards everything written. It does nothing after Commit.
func (o *Output) Abort() {
	o.Pack.Abort()
	o.st.Abort()
}

// Summary returns a summary of the committed output: destination and pack
// figures filled in from the pack writer, the rest from s.
func (o *Output) Summary(s plan.Summary) plan.Summary {
	s.Dest = o.Final
	s.Blobs, s.Bytes, s.Shards = o.stats.Members, o.stats.Bytes, int64(o.stats.Shards)
	return s
}
