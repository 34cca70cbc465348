package convert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/stage"
)

// PendingName is the object a run into object storage puts first, holding
// its record: it says whose shards the destination holds until the run
// commits (RecordName, put last and only if absent) and then is removed.
const PendingName = ".bpconvert-pending.json"

// UploadsInFlight bounds the shards a run into object storage uploads at
// once; the writer waits for a free slot before it hands over the next.
const UploadsInFlight = 2

// StagedShards is the most shards of --max-pack-bytes that a run into
// object storage keeps on local disk at once: the one being written, the
// one being synced, the one being hashed and checked, and the uploads in
// flight.
const StagedShards = 3 + UploadsInFlight

// remote is the object-storage side of an Output: the destination store,
// the uploads of finished shards, and the commit.
type remote struct {
	store   objstore.Store
	ctx     context.Context
	media   string // local staging pack directory
	packDir string // the pack directory in the store, "" for its root

	stats    *objstore.Stats
	maxShard int64 // --max-pack-bytes

	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	sent int64 // shards uploaded by this run
	// found is set when commit found the record already committed, equal
	// to this run's (see ownCommit).
	found bool
	// baseETag, for an append, is the ETag of the record it extends.
	baseETag string
}

// StagingDir returns the local directory that stages a run into dst, an
// object-storage location: one directory per destination under root (the
// system's temporary directory when root is ""), so a rerun on the same
// machine finds the work a killed run staged.
func StagingDir(root, dst string) string {
	if root == "" {
		root = os.TempDir()
	}
	sum := sha256.Sum256([]byte(dst))
	return filepath.Join(root, "bpconvert-"+hex.EncodeToString(sum[:8]))
}

// remoteState is what a destination in object storage holds.
type remoteState struct {
	committed []byte // its RecordName, or nil
	pending   []byte // its PendingName, or nil
	others    int    // objects that are neither
	shards    []objstore.Info
}

func readRemoteState(ctx context.Context, st objstore.Store, packDir string) (remoteState, error) {
	var rs remoteState
	pfx := ""
	if packDir != "." {
		pfx = packDir + "/"
	}
	err := st.List(ctx, "", func(in objstore.Info) error {
		switch {
		case in.Name == RecordName:
			b, err := objstore.ReadAll(ctx, st, in.Name, 1<<24)
			if err != nil {
				return err
			}
			rs.committed = b
		case in.Name == PendingName:
			b, err := objstore.ReadAll(ctx, st, in.Name, 1<<24)
			if err != nil {
				return err
			}
			rs.pending = b
		case strings.HasPrefix(in.Name, pfx) && strings.HasSuffix(in.Name, ".zip") && !strings.Contains(in.Name[len(pfx):], "/"):
			rs.shards = append(rs.shards, in)
		default:
			rs.others++
		}
		return nil
	})
	return rs, err
}

// begin starts an output in object storage: the output is staged on
// local disk (StagingDir), each finished shard is uploaded while the next
// is written and then removed from the staging directory, and Commit puts
// the tables, the manifest and, last and only if absent, the record. A run
// that finds an interrupted run's shards in the store (its pending record
// equal to this run's) resumes from them.
func (d *bucketDest) begin(ctx context.Context, o OutputOptions) (*Output, error) {
	if o.Base != nil {
		return d.beginAppend(ctx, o)
	}
	dst := d.loc
	stats := o.Stats
	if stats == nil {
		stats = &objstore.Stats{}
	}
	st, err := d.open(ctx, stats)
	if err != nil {
		return nil, err
	}
	var rec []byte
	if o.Pack.Record != nil {
		rec = o.Pack.Record.Encode()
	}
	rs, resume, err := claimRemote(ctx, st, dst, rec, o)
	if err != nil {
		return nil, err
	}
	if s3, ok := st.(interface {
		AbortUploads(context.Context, string) (int, error)
	}); ok {
		// Uploads a killed run left unfinished hold storage until aborted.
		if _, err := s3.AbortUploads(ctx, ""); err != nil {
			return nil, err
		}
	}
	if rs.pending == nil {
		marker := rec
		if marker == nil {
			marker = []byte("{}\n")
		}
		if err := st.Put(ctx, PendingName, bytes.NewReader(marker), int64(len(marker)), objstore.PutOptions{IfAbsent: true}); err != nil {
			if errors.Is(err, objstore.ErrExists) {
				return nil, fmt.Errorf("%s: %w", dst, stage.ErrBusy)
			}
			return nil, err
		}
	}
	local := StagingDir(d.staging, dst)
	sg, err := stage.BeginWith(local, stage.Options{Record: rec, Resume: rec != nil && !o.Pack.Restart})
	if err != nil {
		return nil, err
	}
	r := newRemote(ctx, st, stats, sg, o)
	if sg.Resumed {
		if err := clearForResume(sg.Dir, o.packDir()); err != nil {
			sg.Abort()
			return nil, err
		}
	}
	if resume || sg.Resumed {
		if rs.shards, err = r.keepPrefix(rs.shards, sg.Resumed); err != nil {
			sg.Abort()
			return nil, err
		}
	}
	var stored []packcore.StoredShard
	if resume {
		if stored, err = r.storedShards(rs.shards); err != nil {
			sg.Abort()
			return nil, err
		}
	}
	out, err := beginWriter(ctx, dst, sg, o, resume || sg.Resumed, stored, r.publish, 0)
	if err != nil {
		sg.Abort()
		return nil, err
	}
	return r.attach(out)
}

// attach makes r the object-storage side of out, and uploads the shards a
// killed run completed in the staging directory but did not upload.
func (r *remote) attach(out *Output) (*Output, error) {
	out.remote = r
	for _, s := range out.Pack.Completed() {
		if _, err := os.Stat(filepath.Join(r.media, s.Name)); err == nil {
			if err := r.publish(s); err != nil {
				out.Abort()
				return nil, err
			}
		}
	}
	return out, nil
}

// newRemote is the object-storage side of an output into st staged in sg.
func newRemote(ctx context.Context, st objstore.Store, stats *objstore.Stats, sg *stage.Stage, o OutputOptions) *remote {
	maxShard := o.Pack.MaxPackBytes
	if maxShard <= 0 {
		maxShard = packcore.DefaultMaxPackBytes
	}
	r := &remote{store: st, ctx: ctx, stats: stats, maxShard: maxShard, media: filepath.Join(sg.Dir, filepath.FromSlash(o.packDir())), sem: make(chan struct{}, UploadsInFlight)}
	if o.packDir() != "." {
		r.packDir = o.packDir()
	}
	return r
}

// differentPending is the refusal of a run into dst, which holds the
// pending record and shards of an interrupted run of another conversion:
// what it holds, which run left it and how that run differs from this one.
func differentPending(dst string, rs remoteState, rec *Record) error {
	what := "an interrupted run of another conversion"
	var diff []string
	if old, err := decodeRecord(rs.pending, dst+"/"+PendingName); err == nil && old.Command != "" {
		what = "an interrupted " + old.Command + " run"
		if rec != nil {
			diff = rec.Diff(old)
		}
	}
	tail := ""
	if len(diff) > 0 {
		tail = "; this run differs: " + strings.Join(diff, "; ")
	}
	return &UsageError{Err: fmt.Errorf("%s: %w: it holds %s of %s (%s)%s", dst, ErrDifferentRun, plan.CountText(int64(len(rs.shards)), "complete shards"), what, PendingName, tail),
		Hint: "rerun that run's command to finish it, rerun this one with --restart to discard what it left, or choose another destination"}
}

// clearRemote removes every object under an interrupted run's destination.
func clearRemote(ctx context.Context, st objstore.Store) error {
	var names []string
	if err := st.List(ctx, "", func(in objstore.Info) error {
		names = append(names, in.Name)
		return nil
	}); err != nil {
		return err
	}
	for _, n := range names {
		if n == PendingName {
			continue // last, so a failure here leaves the run recognisable
		}
		if err := st.Delete(ctx, n); err != nil {
			return err
		}
	}
	return st.Delete(ctx, PendingName)
}

// claimRemote reads what the destination st (named dst) holds and says
// whether this run, of record rec, may write there: into an empty
// destination, or one holding an interrupted run's shards that it resumes
// (resume) or, with --restart or without a record, clears first.
func claimRemote(ctx context.Context, st objstore.Store, dst string, rec []byte, o OutputOptions) (rs remoteState, resume bool, err error) {
	rs, err = readRemoteState(ctx, st, o.packDir())
	if err != nil {
		return rs, false, err
	}
	switch {
	case rs.committed != nil:
		return rs, false, fmt.Errorf("%s: %w and holds a committed conversion", dst, stage.ErrExists)
	case rs.pending == nil && (rs.others > 0 || len(rs.shards) > 0):
		return rs, false, fmt.Errorf("%s: %w and is not empty", dst, stage.ErrExists)
	case rs.pending != nil && (o.Pack.Restart || rec == nil):
		return remoteState{}, false, clearRemote(ctx, st)
	case rs.pending != nil && !bytes.Equal(rs.pending, rec):
		return rs, false, differentPending(dst, rs, o.Pack.Record)
	}
	return rs, rs.pending != nil, nil
}

// keepPrefix returns the shards of stored (the store's, of an interrupted
// run) that a rerun can reuse, and discards the others from the store and
// from the local staging directory (staged: it was kept for the rerun).
//
// Shards are uploaded UploadsInFlight at once and a staging directory may be
// lost (another machine, or SIGINT removed it), so a stopped run can leave
// pack-0000 and pack-0002 complete and pack-0001 nowhere. The writer's
// placement of members is a function of what came before, so only a
// contiguous run of complete shards from pack-0000 (in the store or staged
// here) is the start of an uninterrupted run's output: those are reused, and
// every shard after the first missing number is discarded and written again
// under its own number. A rerun thus ends with the shard names, tables,
// manifest and record of an uninterrupted run, whatever the staging, at the
// cost of uploading again the shards that passed a slow one.
func (r *remote) keepPrefix(stored []objstore.Info, staged bool) ([]objstore.Info, error) {
	have := map[int]bool{}
	for _, in := range stored {
		if i, ok := shardIndex(path.Base(in.Name)); ok {
			have[i] = true
		}
	}
	var local []string
	if staged {
		names, err := packcore.ListShards(r.media)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, n := range names {
			if i, ok := shardIndex(n); ok {
				have[i] = true
				local = append(local, n)
			}
		}
	}
	next := contiguous(have)
	var keep []objstore.Info
	for _, in := range stored {
		if i, ok := shardIndex(path.Base(in.Name)); ok && i >= next {
			if err := r.store.Delete(r.ctx, in.Name); err != nil {
				return nil, fmt.Errorf("%s/%s: discarding a shard after missing %s: %w", r.store.Location(), in.Name, shardName(next), err)
			}
			continue
		}
		keep = append(keep, in)
	}
	for _, n := range local {
		if i, _ := shardIndex(n); i >= next {
			if err := os.Remove(filepath.Join(r.media, n)); err != nil {
				return nil, err
			}
		}
	}
	return keep, nil
}

// contiguous returns the number of shards from 0 that have holds without a
// gap: the first number missing.
func contiguous(have map[int]bool) int {
	n := 0
	for have[n] {
		n++
	}
	return n
}

// shardIndex returns the number of a shard named by the writer's default
// prefix (pack-0001.zip is 1).
func shardIndex(name string) (int, bool) {
	num, ok := strings.CutPrefix(name, packcore.DefaultPrefix+"-")
	if !ok {
		return 0, false
	}
	num, ok = strings.CutSuffix(num, ".zip")
	if !ok || len(num) < 4 {
		return 0, false
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 || strings.TrimLeft(num, "0123456789") != "" {
		return 0, false
	}
	return i, true
}

// shardName is the name of shard i (the writer's default prefix).
func shardName(i int) string { return fmt.Sprintf("%s-%04d.zip", packcore.DefaultPrefix, i) }

// storedShards reads the central directory of each shard an interrupted
// run uploaded. A shard that a local staging directory also holds (it was
// uploaded just before the kill) is removed locally: the store's copy is
// complete, since a put is whole or nothing.
func (r *remote) storedShards(infos []objstore.Info) ([]packcore.StoredShard, error) {
	var out []packcore.StoredShard
	for _, in := range infos {
		name := path.Base(in.Name)
		if strings.HasPrefix(name, ".") {
			continue
		}
		full, err := r.store.Stat(r.ctx, in.Name)
		if err != nil {
			return nil, err
		}
		obj, err := r.store.Open(r.ctx, in.Name)
		if err != nil {
			return nil, err
		}
		dir, err := packcore.ReadDirectory(obj, obj.Size())
		obj.Close()
		if err != nil {
			return nil, fmt.Errorf("%s/%s: resuming: %w", r.store.Location(), in.Name, err)
		}
		if err := os.Remove(filepath.Join(r.media, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		out = append(out, packcore.StoredShard{Info: packcore.ShardInfo{Name: name, Bytes: full.Size, SHA256: full.SHA256}, Dir: dir})
	}
	return out, nil
}

// publish uploads a finished shard in the background, at most
// UploadsInFlight at once, and removes its staged file once the store holds
// it whole.
func (r *remote) publish(s packcore.ShardInfo) error {
	if err := r.failed(); err != nil {
		return err
	}
	select {
	case r.sem <- struct{}{}:
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() { <-r.sem }()
		if err := r.upload(s); err != nil {
			r.mu.Lock()
			if r.err == nil {
				r.err = err
			}
			r.mu.Unlock()
		}
	}()
	return nil
}

func (r *remote) upload(s packcore.ShardInfo) error {
	path := filepath.Join(r.media, s.Name)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := r.store.Put(r.ctx, objstore.Join(r.packDir, s.Name), f, s.Bytes, objstore.PutOptions{SHA256: s.SHA256}); err != nil {
		return err
	}
	r.mu.Lock()
	r.sent++
	r.mu.Unlock()
	return os.Remove(path)
}

func (r *remote) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// wait waits for the uploads in flight and returns the first failure.
func (r *remote) wait() error {
	r.wg.Wait()
	return r.failed()
}

// commit uploads everything staged but the shards (tables, manifest, any
// other file) and temporary files (IsTemp: a killed run's half-written
// manifest is no part of the output), then the record, only if no other
// run committed first (or this run did, its answer lost: ownCommit), and
// removes the pending record.
func (r *remote) commit(stageDir string, rec []byte) error {
	if err := r.wait(); err != nil {
		return err
	}
	files, err := r.stagedFiles(stageDir)
	if err != nil {
		return err
	}
	for _, rel := range files {
		if err := objstore.PutFile(r.ctx, r.store, rel, filepath.Join(stageDir, filepath.FromSlash(rel))); err != nil {
			return err
		}
	}
	if rec == nil {
		rec = []byte("{}\n")
	}
	if err := r.store.Put(r.ctx, RecordName, bytes.NewReader(rec), int64(len(rec)), objstore.PutOptions{IfAbsent: true}); err != nil {
		if !errors.Is(err, objstore.ErrExists) {
			return err
		}
		if own, oerr := ownCommit(r.ctx, r.store, rec); oerr != nil || !own {
			return fmt.Errorf("%s: another run committed this destination first: %w", r.store.Location(), stage.ErrExists)
		}
		r.found = true
	}
	return r.store.Delete(r.ctx, PendingName)
}

// ownCommit reports whether the record st holds is rec, byte for byte: the
// conditional put of a record whose answer was lost (the store committed
// it, the retry finds it there) is this run's own commit, or that of a run
// of the same conversion, which wrote the same objects.
func ownCommit(ctx context.Context, st objstore.Store, rec []byte) (bool, error) {
	b, err := objstore.ReadAll(ctx, st, RecordName, maxRecord)
	if err != nil {
		return false, err
	}
	return bytes.Equal(b, rec), nil
}
