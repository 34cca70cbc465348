package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/stage"
)

// OutputOptions configure Begin.
type OutputOptions struct {
	// Pack are the user's pack settings.
	Pack PackOptions
	// Sources are the opened sources the run reads: Begin refuses a
	// destination that is one of them, lies inside one or holds one (see
	// CheckDisjoint).
	Sources []Source
	// GroupFill overrides packcore's placement-group fill threshold when
	// not zero (see packcore.WriterOptions.GroupFill).
	GroupFill float64
	// OnShard, when set, is called after each pack shard is complete, after
	// the milestone is reported.
	OnShard func(packcore.ShardInfo)
	// Progress receives a milestone per completed shard; nil for none.
	Progress progress.Counter
	// Stats, when set, counts the requests and bytes of object storage.
	Stats *objstore.Stats
	// PackDir is the pack directory, relative to the destination and
	// slash-separated: MediaDir when "", and "." for the destination
	// itself (bpconvert pack).
	PackDir string
	// RefBase is what references name the pack directory by: when "",
	// PackDir below Pack.RefBase (the dataset root as references name it),
	// or PackDir itself by default.
	RefBase string
	// Base, for an append, is the committed output to extend (see
	// Target.ReadBase): new shards are numbered after its shards, a key
	// it holds is refused, and Commit moves the staged files into it.
	Base *Base
}

// CheckDisjoint returns an error wrapping stage.ErrOverlap when dst is the
// source src, lies inside it or holds it: a local source and destination
// are compared with symlinks resolved (a file source by its directory; see
// stage.CheckDisjoint), a source and a destination in object storage by
// bucket and prefix; a local path and an s3:// location never overlap, and
// a source not opened (standard input) is no path. A source of Parts is
// checked part by part, its directories and prefixes only (a file named
// among several may have the output beside it); the error names a source
// as it was given.
func CheckDisjoint(src Source, dst Dest) error {
	if !src.Opened() || dst == nil {
		return nil
	}
	for _, p := range src.Parts {
		if p.File != "" {
			// a file among several: its own directory may hold the output
			continue
		}
		if err := CheckDisjoint(p, dst); err != nil {
			return err
		}
	}
	if src.Tree == nil {
		return nil
	}
	at, loc := src.Location(), dst.Location()
	switch r1, r2 := src.Remote(), dst.Remote(); {
	case r1 && r2:
		a, b := strings.TrimSuffix(at, "/")+"/", loc+"/"
		if strings.HasPrefix(a, b) || strings.HasPrefix(b, a) {
			return fmt.Errorf("%s and %s: %w", src, loc, stage.ErrOverlap)
		}
		return nil
	case r1 || r2:
		return nil
	}
	err := stage.CheckDisjoint(at, loc)
	if errors.Is(err, stage.ErrOverlap) && src.Name != "" {
		return fmt.Errorf("%s and %s: %w", src.Name, loc, stage.ErrOverlap)
	}
	return err
}

// packDir returns PackDir with its default.
func (o OutputOptions) packDir() string {
	if o.PackDir == "" {
		return MediaDir
	}
	return o.PackDir
}

// refBase returns RefBase with its default.
func (o OutputOptions) refBase() string {
	if o.RefBase == "" {
		return refDir(o.Pack.RefBase, o.packDir())
	}
	return o.RefBase
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

	// Resumed counts the members of reused shards (a rerun after a kill).
	Resumed int

	st        *stage.Stage
	remote    *remote // set when the destination is in object storage
	ctx       context.Context
	record    bool // the staging directory holds a record: a rerun can resume
	stats     packcore.Stats
	closed    bool
	committed bool            // a remote output was committed
	aborted   bool            // Abort ran
	resumed   map[string]bool // keys added or found again by this run
	// reused counts the members found again in reused shards, and their
	// bytes, which the writer's figures leave out.
	reused, reusedBytes int64
	// rec is the run's record, completed with this commit's extent when
	// the output is committed.
	rec *Record
	// base is the committed output an append extends, with its shards'
	// names and the members and bytes they hold.
	base                   *Base
	baseShards             map[string]bool
	baseMembers, baseBytes int64
}

// Begin starts the output for destination dst, which must be absent or
// an empty directory, or an s3:// location holding nothing or only the
// shards of an interrupted run of the same conversion. A part
// (o.Pack.Part) is staged and committed beside the destination (Dest.Part);
// the destination itself appears when Finalize joins the parts.
func Begin(ctx context.Context, dst Dest, o OutputOptions) (*Output, error) {
	for _, src := range o.Sources {
		if err := CheckDisjoint(src, dst); err != nil {
			return nil, err
		}
	}
	if !o.Pack.Part.Whole() {
		d, err := dst.Part(o.Pack.Part)
		if err != nil {
			return nil, err
		}
		dst = d
	}
	return dst.begin(ctx, o)
}

// begin starts an output staged beside the directory (stage.BeginWith).
func (d localDest) begin(ctx context.Context, o OutputOptions) (*Output, error) {
	if o.Base != nil {
		return d.beginAppend(ctx, o)
	}
	var rec []byte
	if o.Pack.Record != nil {
		rec = o.Pack.Record.Encode()
	}
	st, err := stage.BeginWith(d.dir, stage.Options{Record: rec, Resume: rec != nil && !o.Pack.Restart})
	if err != nil {
		return nil, err
	}
	if st.Resumed {
		// Only complete pack shards are reused (each verified in full by the
		// writer); tables and everything else are written again.
		if err := clearForResume(st.Dir, o.packDir()); err != nil {
			st.Abort()
			return nil, err
		}
	}
	out, err := beginWriter(ctx, d.dir, st, o, st.Resumed, nil, nil, 0)
	if err != nil {
		st.Abort()
		return nil, err
	}
	return out, nil
}

// beginWriter opens the pack writer of an output staged in st.
// The first base of stored are the committed shards an append extends,
// not counted as resumed.
func beginWriter(ctx context.Context, final string, st *stage.Stage, o OutputOptions, resume bool, stored []packcore.StoredShard, publish func(packcore.ShardInfo) error, base int) (*Output, error) {
	pc := progress.OrNop(o.Progress)
	w, err := packcore.Create(ctx, filepath.Join(st.Dir, filepath.FromSlash(o.packDir())), packcore.WriterOptions{
		MaxPackBytes: o.Pack.MaxPackBytes,
		MaxMembers:   o.Pack.Members(),
		NoManifest:   o.Pack.NoManifest,
		RefBase:      o.refBase(),
		GroupFill:    o.GroupFill,
		NoLock:       true, // the staging directory is locked
		Resume:       resume,
		Stored:       stored,
		Publish:      publish,
		OnShard: func(s packcore.ShardInfo) {
			pc.Milestone(fmt.Sprintf("wrote %s (%s)", path.Join(o.packDir(), s.Name), plan.CountText(int64(s.Members), "members")))
			if o.OnShard != nil {
				o.OnShard(s)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	out := &Output{Final: final, Dir: st.Dir, Pack: w, st: st, ctx: ctx, record: o.Pack.Record != nil, resumed: map[string]bool{}, rec: o.Pack.Record}
	if resume && len(w.Completed()) > base {
		for _, s := range w.Completed()[base:] {
			out.stats.Shards++
			out.Resumed += s.Members
		}
		pc.Milestone(fmt.Sprintf("resuming an interrupted run: %s verified, %s reused",
			plan.CountText(int64(out.stats.Shards), "complete shards"), plan.CountText(int64(out.Resumed), "members")))
		out.stats = packcore.Stats{}
	}
	return out, nil
}

// clearForResume removes everything from a resumed staging directory but
// the run record and the pack directory (packDir, slash-separated; "."
// keeps the shards of a pack directory that is the destination itself),
// and the temporary files a killed run left in the pack directory (such as
// a manifest cut short while it was written).
func clearForResume(dir, packDir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	top, _, _ := strings.Cut(packDir, "/")
	for _, e := range ents {
		if e.Name() == RecordName || e.Name() == top || (packDir == "." && strings.HasSuffix(e.Name(), ".zip")) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	media := filepath.Join(dir, filepath.FromSlash(packDir))
	ents, err = os.ReadDir(media)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		if IsTemp(e.Name()) {
			if err := os.RemoveAll(filepath.Join(media, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// IsTemp reports whether rel, a slash-separated path in a staging
// directory, names a temporary file: a hidden name ending in ".tmp", as
// files written under a temporary name and renamed into place have until
// they are complete. A temporary file is never part of an output.
func IsTemp(rel string) bool {
	base := path.Base(rel)
	return strings.HasPrefix(base, ".") && strings.HasSuffix(base, ".tmp")
}

// Add writes one member (see packcore.Writer.Add). When the run resumes an
// interrupted one, a member that a reused shard already holds is not written
// again: its reference is returned and r is not read.
func (o *Output) Add(key string, r io.Reader, size int64, group string) (string, error) {
	if ref, done, err := o.reuse(key, size, group); done || err != nil {
		return ref, err
	}
	return o.Pack.Add(key, r, size, group)
}

// AddFile is Add for the regular file at path (see packcore.Writer.AddFile).
func (o *Output) AddFile(key, path, group string) (string, error) {
	if o.Resumed > 0 {
		st, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		if ref, done, err := o.reuse(key, st.Size(), group); done || err != nil {
			return ref, err
		}
	}
	return o.Pack.AddFile(key, path, group)
}

// AddBytes is Add for a payload in memory (see packcore.Writer.AddBytes:
// b is written without being copied, and not retained).
func (o *Output) AddBytes(key string, b []byte, group string) (string, error) {
	if ref, done, err := o.reuse(key, int64(len(b)), group); done || err != nil {
		return ref, err
	}
	return o.Pack.AddBytes(key, b, group)
}

// reuse returns the reference of a member a resumed run finds in a staged
// shard (done), or says that the member must be written.
func (o *Output) reuse(key string, size int64, group string) (ref string, done bool, err error) {
	if o.Resumed > 0 && !o.resumed[key] {
		if ref, sz, ok := o.Pack.Lookup(key); ok && !o.inBase(ref) {
			if sz != size {
				return "", false, fmt.Errorf("resuming: member %q has %d bytes in the staged shard, the source now gives %d", key, sz, size)
			}
			o.resumed[key] = true
			o.reused, o.reusedBytes = o.reused+1, o.reusedBytes+size
			o.Pack.Replay(key, size, group) // later placement as in an uninterrupted run
			return ref, true, nil
		}
	}
	if o.Resumed > 0 {
		o.resumed[key] = true
	}
	return "", false, nil
}

// inBase reports whether ref names a member of a committed shard an
// append extends.
func (o *Output) inBase(ref string) bool {
	if len(o.baseShards) == 0 {
		return false
	}
	_, shard, err := packcore.ParseRef(ref)
	return err == nil && o.baseShards[path.Base(shard)]
}

// EndShard completes the open pack shard (see packcore.Writer.EndShard).
func (o *Output) EndShard() error { return o.Pack.EndShard() }

// Lookup returns the reference and size of a member this run added (or
// found again in a reused shard), like packcore.Writer.Lookup.
func (o *Output) Lookup(key string) (ref string, size int64, ok bool) {
	if o.Resumed > 0 && !o.resumed[key] {
		return "", 0, false
	}
	ref, size, ok = o.Pack.Lookup(key)
	if ok && o.inBase(ref) {
		return "", 0, false
	}
	return ref, size, ok
}

// Path returns the staging path of rel, a slash-separated path relative to
// the destination.
func (o *Output) Path(rel string) string { return filepath.Join(o.Dir, filepath.FromSlash(rel)) }

// ClosePack completes the last shard and the manifest, so the packs can be
// read back before the tables are written. It is called by Commit when the
// converter has not. The figures count every member of the output, those
// of shards reused from an interrupted run included.
func (o *Output) ClosePack() (packcore.Stats, error) {
	if o.closed {
		return o.stats, nil
	}
	st, err := o.Pack.Close()
	if err != nil {
		return packcore.Stats{}, err
	}
	st.Members, st.Bytes = st.Members+o.reused, st.Bytes+o.reusedBytes
	o.stats, o.closed = st, true
	return st, nil
}

// Commit closes the packs and renames the staging directory into place, or,
// for a destination in object storage, uploads what is staged and the
// record last, then removes the staging directory.
func (o *Output) Commit() (packcore.Stats, error) {
	st, err := o.ClosePack()
	if err != nil {
		return st, err
	}
	if err := o.completeRecord(); err != nil {
		return st, err
	}
	if o.remote == nil {
		if o.base != nil {
			return st, o.st.CommitAppend()
		}
		return st, o.st.Commit()
	}
	rec, _ := os.ReadFile(filepath.Join(o.Dir, RecordName))
	commit := o.remote.commit
	if o.base != nil {
		commit = o.remote.commitAppend
	}
	if err := commit(o.Dir, rec); err != nil {
		return st, err
	}
	o.st.Abort() // the staged copy is in the store now
	o.committed = true
	return st, nil
}

// Abort discards everything written, or, when the run's context was
// cancelled with a cause that matches ErrKeepStaged and complete shards
// are staged, keeps those for a retry to resume. It does nothing after
// Commit, or when called again. For a destination in object storage the
// uploads in flight are abandoned; the shards already uploaded stay for a
// rerun to resume from.
func (o *Output) Abort() {
	if o.committed || o.aborted {
		return
	}
	o.aborted = true
	o.Pack.Abort()
	if o.remote != nil {
		o.remote.wait() //nolint:errcheck // aborting anyway
	}
	if o.record && errors.Is(context.Cause(o.ctx), ErrKeepStaged) && len(o.Pack.Completed()) > 0 {
		o.st.Leave()
		return
	}
	o.st.Abort()
}

// Summary returns a summary of the committed output: destination and pack
// figures filled in from the pack writer, the rest from s; its status is
// already_done when the commit into object storage found the same record
// committed (its answer lost, its retry refused).
func (o *Output) Summary(s plan.Summary) plan.Summary {
	s.Dest = o.Final
	if o.remote != nil && o.remote.found {
		// The commit's answer was lost and its retry found it done.
		s.Status = plan.StatusAlreadyDone
	}
	s.Blobs, s.Bytes, s.Shards = o.stats.Members+o.baseMembers, o.stats.Bytes+o.baseBytes, int64(o.stats.Shards)
	if b := o.base; b != nil {
		s.Appended = &plan.Appended{Sources: len(b.Diff.New), Skipped: len(b.Diff.Kept), Removed: len(b.Diff.Removed),
			Blobs: o.stats.Members, Bytes: o.stats.Bytes, Shards: int64(o.stats.Shards - len(b.Shards))}
	}
	s.Warnings = append(s.Warnings, GroupWarnings(o.stats.GroupsSplit)...)
	if r := o.remote; r != nil {
		s.Upload = &plan.Upload{Requests: r.stats.Requests(), Bytes: r.stats.BytesWritten(),
			PartBytes: objstore.DefaultPartSize, PartsInFlight: UploadsInFlight * objstore.DefaultConcurrency,
			StagingBound: StagedShards * r.maxShard}
	}
	return s
}

// GroupWarnings is the summary's warning for n placement groups cut across
// shards (none for zero).
func GroupWarnings(n int) []string {
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s (what belongs together, such as a row's payloads or a sample's members) cut across shards: a group larger than half a shard and more than twice any group before it does not fit one; --max-pack-bytes or --max-members higher keeps them whole",
		plan.CountText(int64(n), "placement groups"))}
}

// Packer adds members to a run's packs. *Output satisfies it (skipping the
// members of reused shards when a run resumes), and so does
// *packcore.Writer.
type Packer interface {
	Add(key string, r io.Reader, size int64, group string) (string, error)
	// AddBytes adds a payload held in memory without copying it.
	AddBytes(key string, b []byte, group string) (string, error)
	Lookup(key string) (ref string, size int64, ok bool)
	EndShard() error
}

var (
	_ Packer = (*Output)(nil)
	_ Packer = (*packcore.Writer)(nil)
)
