package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/stage"
)

// Dest is where a run's output goes, decided once (ParseDest) and passed
// down: a directory on this machine or a location in object storage. Every
// operation on a destination (checking it, reading its record and totals,
// starting the output, discarding a committed output, finding what a
// stopped run left) is a method, so no layer tells the two kinds apart by
// looking at a string again.
type Dest interface {
	// Location names the destination: an absolute path, or
	// s3://BUCKET/PREFIX without a trailing slash.
	Location() string
	// Remote reports whether the destination is in object storage, for
	// what only the user sees differently (a staging directory on this
	// machine, the summary's upload figures).
	Remote() bool
	// Parts returns where the parts of a split run are kept, beside the
	// destination (.NAME.bpconvert-parts).
	Parts() (Dest, error)
	// Part returns where part p is committed (see Parts).
	Part(p Part) (Dest, error)
	// Check returns an error unless the destination can take a new run's
	// output: absent or empty, or in object storage holding only the
	// shards of an interrupted run (which Begin resumes or refuses).
	Check(ctx context.Context) error
	// ReadRecord reads the record committed with the output; a missing
	// one gives an error matching fs.ErrNotExist.
	ReadRecord(ctx context.Context) (*Record, error)
	// Totals counts the members, payload bytes and shards of the packs
	// under MediaDir, reading each shard's central directory.
	Totals(ctx context.Context) (members, bytes int64, shards int, err error)
	// Discard removes a committed output so that a rerun can replace it,
	// in an order that a crash on the way leaves an incomplete run, never
	// a committed output with files missing.
	Discard(ctx context.Context) error
	// Kept says what a stopped run of record rec left for a rerun to
	// resume: the complete shards of its pack directory packDir
	// (OutputOptions.PackDir).
	Kept(ctx context.Context, packDir string, rec *Record) (Kept, error)

	// begin starts the output (see Begin).
	begin(ctx context.Context, o OutputOptions) (*Output, error)
	// readRecordRaw reads the committed record's bytes and, in object
	// storage, its ETag.
	readRecordRaw(ctx context.Context) (raw []byte, etag string, err error)
	// store opens the destination as a store, for reading a committed
	// output (stats: nil for none).
	store(ctx context.Context, stats *objstore.Stats) (objstore.Store, error)
	// recover finishes an append's commit that a stopped run began.
	recover(ctx context.Context) (bool, error)
	// finalize joins the parts (see Finalize).
	finalize(ctx context.Context, o FinalizeOptions) (FinalizeResult, error)
}

// ParseDest parses a destination as the user named it: s3://BUCKET/PREFIX
// for object storage, staged on local disk under staging (the system's
// temporary directory when ""; see StagingDir), or a local path, made
// absolute here, for which staging must be "" (a local destination is
// staged beside itself).
func ParseDest(dst, staging string) (Dest, error) {
	if objstore.IsRemote(dst) {
		return &bucketDest{loc: strings.TrimSuffix(dst, "/"), staging: staging}, nil
	}
	if staging != "" {
		return nil, &UsageError{Err: errors.New("--staging is for destinations in object storage (s3://); a local destination is staged beside itself")}
	}
	abs, err := filepath.Abs(dst)
	if err != nil {
		return nil, err
	}
	return localDest{dir: abs}, nil
}

// Kept is what a stopped run left for a rerun to resume (see Dest.Kept).
type Kept struct {
	// Pending is set when the destination holds the run's unfinished work:
	// in object storage its pending record (a rerun of the same conversion
	// resumes, a different one is refused), locally a staging directory
	// with complete shards.
	Pending bool
	// Shards counts the complete shards a rerun reuses: those numbered
	// without a gap from pack-0000, in the store or staged locally.
	Shards int
	// Staged counts those of Shards staged locally, not uploaded yet, in
	// Staging (for a local destination: all of them).
	Staged  int
	Staging string
	// After counts the shards in the store that follow a missing one; a
	// rerun writes them again (see remote.keepPrefix).
	After int
}

// localDest is a destination directory on this machine.
type localDest struct {
	dir string // absolute
}

var _ Dest = localDest{}

func (d localDest) Location() string { return d.dir }
func (d localDest) Remote() bool     { return false }

func (d localDest) Parts() (Dest, error) { return localDest{dir: partsDir(d.dir)}, nil }

func (d localDest) Part(p Part) (Dest, error) { return localDest{dir: partDir(d.dir, p)}, nil }

func (d localDest) Check(context.Context) error { return stage.CheckDest(d.dir) }

func (d localDest) ReadRecord(context.Context) (*Record, error) { return readRecord(d.dir) }

func (d localDest) readRecordRaw(context.Context) ([]byte, string, error) {
	p := filepath.Join(d.dir, RecordName)
	b, err := srcfile.ReadFile(p, maxRecord)
	if err != nil {
		return nil, "", srcfile.Named("read", p, err)
	}
	return b, "", nil
}

func (d localDest) store(context.Context, *objstore.Stats) (objstore.Store, error) {
	return objstore.NewLocal(d.dir)
}

func (d localDest) recover(context.Context) (bool, error) { return stage.FinishAppend(d.dir) }

func (d localDest) Totals(context.Context) (members, bytes int64, shards int, err error) {
	return totals(d.dir)
}

// Discard renames the output to its staging name first, so that a crash
// while removing it leaves what a rerun sees as an interrupted run.
func (d localDest) Discard(context.Context) error {
	staging := stage.Path(d.dir)
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	if err := os.Rename(d.dir, staging); err != nil {
		return err
	}
	return os.RemoveAll(staging)
}

// Kept counts the complete shards in the staging directory beside dir.
func (d localDest) Kept(_ context.Context, packDir string, _ *Record) (Kept, error) {
	if packDir == "" {
		packDir = MediaDir
	}
	staging := stage.Path(d.dir)
	shards, err := packcore.ListShards(filepath.Join(staging, filepath.FromSlash(packDir)))
	if err != nil || len(shards) == 0 {
		return Kept{}, nil
	}
	return Kept{Pending: true, Shards: len(shards), Staged: len(shards), Staging: staging}, nil
}

// bucketDest is a destination in object storage: s3://BUCKET/PREFIX.
type bucketDest struct {
	loc     string // without a trailing slash
	staging string // the root of local staging (--staging), "" for the default
}

var _ Dest = (*bucketDest)(nil)

func (d *bucketDest) Location() string { return d.loc }
func (d *bucketDest) Remote() bool     { return true }

// Parts: s3://BUCKET/PREFIX/NAME keeps its parts under the prefix
// PREFIX/.NAME.bpconvert-parts beside it. A bucket's root has nothing
// beside it, so it takes no parts.
func (d *bucketDest) Parts() (Dest, error) {
	bucket, prefix, err := objstore.ParseS3(d.loc)
	if err != nil {
		return nil, err
	}
	if prefix == "" {
		return nil, &UsageError{Err: fmt.Errorf("%s: --part needs a destination under a prefix, which its parts are kept beside", d.loc),
			Hint: fmt.Sprintf("convert into s3://%s/NAME", bucket)}
	}
	dir, base := path.Split(prefix)
	return &bucketDest{loc: "s3://" + bucket + "/" + objstore.Join(dir, "."+base+PartsSuffix), staging: d.staging}, nil
}

func (d *bucketDest) Part(p Part) (Dest, error) {
	parts, err := d.Parts()
	if err != nil {
		return nil, err
	}
	return &bucketDest{loc: parts.Location() + "/" + PartName(p), staging: d.staging}, nil
}

// open opens the destination's store, its requests counted in stats (nil
// for none).
func (d *bucketDest) open(ctx context.Context, stats *objstore.Stats) (objstore.Store, error) {
	return objstore.Open(ctx, d.loc, objstore.Options{Stats: stats})
}

func (d *bucketDest) Check(ctx context.Context) error {
	st, err := d.open(ctx, nil)
	if err != nil {
		return err
	}
	rs, err := readRemoteState(ctx, st, MediaDir)
	if err != nil {
		return err
	}
	switch {
	case rs.committed != nil:
		return fmt.Errorf("%s: %w and holds a committed conversion", d.loc, stage.ErrExists)
	case rs.pending == nil && (rs.others > 0 || len(rs.shards) > 0):
		return fmt.Errorf("%s: %w and is not empty", d.loc, stage.ErrExists)
	}
	return nil
}

func (d *bucketDest) store(ctx context.Context, stats *objstore.Stats) (objstore.Store, error) {
	return d.open(ctx, stats)
}

// readRecordRaw reads the record and its ETag, again should the record be
// replaced between the two (a bounded number of times).
func (d *bucketDest) readRecordRaw(ctx context.Context) ([]byte, string, error) {
	st, err := d.open(ctx, nil)
	if err != nil {
		return nil, "", err
	}
	for range 5 {
		in, err := st.Stat(ctx, RecordName)
		if err != nil {
			return nil, "", err
		}
		b, err := objstore.ReadAll(ctx, st, RecordName, maxRecord)
		if err != nil {
			return nil, "", err
		}
		again, err := st.Stat(ctx, RecordName)
		if err != nil {
			return nil, "", err
		}
		if again.ETag == in.ETag {
			return b, in.ETag, nil
		}
	}
	return nil, "", &RetryError{Err: fmt.Errorf("%s/%s keeps changing while it is read", d.loc, RecordName), Hint: "rerun when the runs writing it have finished"}
}

func (d *bucketDest) ReadRecord(ctx context.Context) (*Record, error) {
	st, err := d.open(ctx, nil)
	if err != nil {
		return nil, err
	}
	b, err := objstore.ReadAll(ctx, st, RecordName, maxRecord)
	if err != nil {
		return nil, err
	}
	return decodeRecord(b, d.loc+"/"+RecordName)
}

// Totals reads each shard's central directory with ranged reads.
func (d *bucketDest) Totals(ctx context.Context) (members, bytes int64, shards int, err error) {
	st, err := d.open(ctx, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	rs, err := readRemoteState(ctx, st, MediaDir)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, in := range rs.shards {
		obj, err := st.Open(ctx, in.Name)
		if err != nil {
			return 0, 0, 0, err
		}
		dir, err := packcore.ReadDirectory(obj, obj.Size())
		obj.Close()
		if err != nil {
			return 0, 0, 0, fmt.Errorf("%s/%s: %w", d.loc, in.Name, err)
		}
		for _, e := range dir.Entries {
			members++
			bytes += e.Size
		}
		shards++
	}
	return members, bytes, shards, nil
}

// Discard puts the pending record up first and removes the record next.
func (d *bucketDest) Discard(ctx context.Context) error {
	st, err := d.open(ctx, nil)
	if err != nil {
		return err
	}
	rec, err := objstore.ReadAll(ctx, st, RecordName, maxRecord)
	if err != nil {
		return err
	}
	if err := st.Put(ctx, PendingName, bytes.NewReader(rec), int64(len(rec)), objstore.PutOptions{}); err != nil {
		return err
	}
	if err := st.Delete(ctx, RecordName); err != nil {
		return err
	}
	return clearRemote(ctx, st)
}

// Kept: a destination whose pending record is not rec's holds nothing of
// the run.
func (d *bucketDest) Kept(ctx context.Context, packDir string, rec *Record) (Kept, error) {
	if packDir == "" {
		packDir = MediaDir
	}
	var k Kept
	if rec == nil {
		return k, nil
	}
	st, err := d.open(ctx, nil)
	if err != nil {
		return k, err
	}
	rs, err := readRemoteState(ctx, st, packDir)
	if err != nil || rs.committed != nil || !bytes.Equal(rs.pending, rec.Encode()) {
		return k, err
	}
	k.Pending = true
	have := map[int]bool{}
	for _, in := range rs.shards {
		if i, ok := shardIndex(path.Base(in.Name)); ok {
			have[i] = true
		}
	}
	staging := stage.Path(StagingDir(d.staging, d.loc))
	staged := map[int]bool{}
	if names, err := packcore.ListShards(filepath.Join(staging, filepath.FromSlash(packDir))); err == nil {
		for _, n := range names {
			if i, ok := shardIndex(n); ok && !have[i] {
				staged[i], have[i] = true, true
			}
		}
	}
	k.Shards = contiguous(have)
	for i := range have {
		switch {
		case i < k.Shards && staged[i]:
			k.Staged++
		case i > k.Shards && !staged[i]:
			k.After++
		}
	}
	if k.Staged > 0 {
		k.Staging = staging
	}
	return k, nil
}
