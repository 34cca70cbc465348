package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bpconvert/bpconvert/internal/filelock"
	"github.com/bpconvert/bpconvert/internal/workpool"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
)

// CopiesInFlight bounds the server-side shard copies Finalize runs at once
// for a destination in object storage.
const CopiesInFlight = 4

// remoteParts is the store that holds a destination in object storage and
// its parts side by side (the destination's parent prefix), with the names
// of both in it.
type remoteParts struct {
	root     objstore.Store
	dst      string // the destination's name in root
	parts    string // the parts' prefix in root
	dstLoc   string // the destination as the user named it
	partsLoc string // the parts' location, s3://…
}

func openRemoteParts(ctx context.Context, d *bucketDest, stats *objstore.Stats) (*remoteParts, error) {
	dst := d.loc
	parts, err := d.Parts()
	if err != nil {
		return nil, err
	}
	partsLoc := parts.Location()
	bucket, prefix, err := objstore.ParseS3(dst)
	if err != nil {
		return nil, err
	}
	dir, base := path.Split(prefix)
	root, err := objstore.Open(ctx, "s3://"+bucket+"/"+strings.TrimSuffix(dir, "/"), objstore.Options{Stats: stats})
	if err != nil {
		return nil, err
	}
	return &remoteParts{root: root, dst: base, parts: "." + base + PartsSuffix, dstLoc: strings.TrimSuffix(dst, "/"), partsLoc: partsLoc}, nil
}

// partObjects lists the objects of every part, by part name, their names
// relative to the part.
func (r *remoteParts) partObjects(ctx context.Context) (map[string][]objstore.Info, error) {
	out := map[string][]objstore.Info{}
	err := r.root.List(ctx, r.parts+"/", func(in objstore.Info) error {
		name, rel, ok := strings.Cut(strings.TrimPrefix(in.Name, r.parts+"/"), "/")
		if _, isPart := ParsePartName(name); ok && isPart {
			in.Name = rel
			out[name] = append(out[name], in)
		}
		return nil
	})
	return out, err
}

// finalize joins the parts of a destination in object storage, which were
// committed beside it (Dest.Parts). Each part's shards are
// copied into the destination's pack directory under their new numbers by
// server-side copies, so no payload byte passes through this machine and
// the parts stay whole until the joined output is committed; the tables
// (and the manifests) are fetched, joined here and put; the record goes up
// last, only if absent, and the parts are removed after it. A pending
// record put first makes a killed Finalize resumable and keeps any other
// run out.
func (d *bucketDest) finalize(ctx context.Context, o FinalizeOptions) (FinalizeResult, error) {
	var res FinalizeResult
	rp, err := openRemoteParts(ctx, d, o.Stats)
	if err != nil {
		return res, err
	}
	objects, err := rp.partObjects(ctx)
	if err != nil {
		return res, err
	}
	dstStore, err := objstore.Open(ctx, rp.dstLoc, objstore.Options{Stats: o.Stats})
	if err != nil {
		return res, err
	}
	if len(objects) == 0 {
		if rec, rerr := readStoreRecord(ctx, dstStore, RecordName); rerr == nil {
			res.AlreadyDone, res.Command = true, rec.Command
			return res, nil
		}
		return res, &UsageError{Err: fmt.Errorf("finalize: %s: no parts to join (%s holds none)", rp.dstLoc, rp.partsLoc),
			Hint: "run the conversion with --part I/N for every I from 1 to N first"}
	}
	l := newPartListing()
	for name, objs := range objects {
		p, _ := ParsePartName(name)
		var mod time.Time
		committed := false
		for _, in := range objs {
			committed = committed || in.Name == RecordName
			if in.ModTime.After(mod) {
				mod = in.ModTime
			}
		}
		loc := ""
		if committed {
			loc = rp.partsLoc + "/" + name
		}
		l.note(p, loc, mod)
	}
	rm := func(n int) []string {
		return []string{fmt.Sprintf("aws s3 rm --recursive %s/ --exclude '*' --include 'part-*-of-%04d/*'", rp.partsLoc, n)}
	}
	partLocs, recs, err := l.check(ctx, rp.partsLoc, func(loc string) (*Record, error) {
		return readStoreRecord(ctx, rp.root, objstore.Join(rp.parts, path.Base(loc), RecordName))
	}, rm)
	if err != nil {
		return res, err
	}
	joined := recs[0].Whole()
	res.Command, res.Parts = joined.Command, len(partLocs)
	pending := joined.Encode()
	rs, err := readRemoteState(ctx, dstStore, MediaDir)
	if err != nil {
		return res, err
	}
	if rs.committed != nil {
		old, err := decodeRecord(rs.committed, rp.dstLoc)
		if err != nil {
			return res, err
		}
		if diff := joined.Diff(old); len(diff) > 0 {
			return res, &UsageError{Err: fmt.Errorf("finalize: %s: %w: %s", rp.dstLoc, ErrDifferentRun, strings.Join(diff, "; ")),
				Hint: "finalize into the destination the parts were converted for"}
		}
		// Committed, but stopped before the parts were removed.
		res.AlreadyDone = true
		return res, rp.removeParts(ctx)
	}
	switch {
	case rs.pending == nil && (rs.others > 0 || len(rs.shards) > 0):
		return res, &UsageError{Err: fmt.Errorf("finalize: %s exists and is not empty", rp.dstLoc),
			Hint: "finalize into the destination the parts were converted for, with nothing else in it"}
	case rs.pending != nil && !bytes.Equal(rs.pending, pending):
		return res, &UsageError{Err: fmt.Errorf("finalize: %s: %w: it holds the shards of an interrupted run of another conversion", rp.dstLoc, ErrDifferentRun),
			Hint: "remove what the destination holds, then finalize again"}
	}
	joiners, ok := o.Joiners(joined.Command)
	if !ok {
		return res, &UsageError{Err: fmt.Errorf("finalize: %s: the parts were written by %s, which cannot be finalized", rp.dstLoc, joined.Command)}
	}
	if rs.pending == nil {
		if err := dstStore.Put(ctx, PendingName, bytes.NewReader(pending), int64(len(pending)), objstore.PutOptions{IfAbsent: true}); err != nil {
			return res, err
		}
	}
	tmp, release, err := filelock.MkdirTemp(o.Staging, joinDirPrefix)
	if err != nil {
		return res, fmt.Errorf("finalize: %w", err)
	}
	defer release()
	out := filepath.Join(tmp, "out")
	names := make([]string, len(partLocs))
	for i, loc := range partLocs {
		names[i] = path.Base(loc)
	}
	ps := bucketParts{rp: rp, names: names, objects: objects, tmp: tmp}
	if err := joinParts(ctx, ps, len(partLocs), out, joiners, joined.Options[RefBaseOption], &res); err != nil {
		return res, err
	}
	var files []string
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		return res, err
	}
	for _, rel := range files {
		if err := objstore.PutFile(ctx, dstStore, rel, filepath.Join(out, filepath.FromSlash(rel))); err != nil {
			return res, fmt.Errorf("finalize: %w", err)
		}
	}
	joined.Parts = res.Extents
	rec := joined.Encode()
	if err := dstStore.Put(ctx, RecordName, bytes.NewReader(rec), int64(len(rec)), objstore.PutOptions{IfAbsent: true}); err != nil {
		if !errors.Is(err, objstore.ErrExists) {
			return res, err
		}
		if own, oerr := ownCommit(ctx, dstStore, rec); oerr != nil || !own {
			return res, fmt.Errorf("finalize: %s: another run committed this destination first: %w", rp.dstLoc, err)
		}
		// This run's commit, whose answer was lost.
		res.AlreadyDone = true
	}
	if err := dstStore.Delete(ctx, PendingName); err != nil {
		return res, err
	}
	if err := rp.removeParts(ctx); err != nil {
		return res, fmt.Errorf("finalize: %s joined, but removing its parts failed: %w", rp.dstLoc, err)
	}
	return res, nil
}

// bucketParts are parts committed in a bucket beside the destination
// (remoteParts): their shards are copied server-side into the
// destination's pack directory, their other files fetched under tmp.
type bucketParts struct {
	rp      *remoteParts
	names   []string                   // the parts' names under rp.parts, in part order
	objects map[string][]objstore.Info // each part's objects, by part name
	tmp     string
}

func (p bucketParts) location(pi int) string { return p.rp.partsLoc + "/" + p.names[pi] }

func (p bucketParts) shards(ctx context.Context, pi int) ([]partShard, error) {
	infos, err := packcore.ListShardsIn(ctx, p.rp.root, objstore.Join(p.rp.parts, p.names[pi], MediaDir))
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", p.location(pi), MediaDir, err)
	}
	out := make([]partShard, len(infos))
	for i, in := range infos {
		name := path.Base(in.Name)
		keys, n, err := storeShardKeys(ctx, p.rp.root, in)
		if err != nil {
			return nil, fmt.Errorf("%s/%s/%s: %w", p.location(pi), MediaDir, name, err)
		}
		out[i] = partShard{name: name, keys: keys, bytes: n, id: in.Name}
	}
	return out, nil
}

func (p bucketParts) manifest(ctx context.Context, pi int) (*packcore.Manifest, error) {
	return packcore.ReadManifestIn(ctx, p.rp.root, objstore.Join(p.rp.parts, p.names[pi], MediaDir))
}

func (p bucketParts) place(ctx context.Context, moves []shardMove) error {
	return p.rp.copyAll(ctx, len(moves), func(i int) (string, string) {
		return moves[i].shard.id, objstore.Join(p.rp.dst, MediaDir, moves[i].newName)
	})
}

func (p bucketParts) files(ctx context.Context, pi int) (string, error) {
	name := p.names[pi]
	dir := filepath.Join(p.tmp, name)
	for _, in := range p.objects[name] {
		if in.Name == RecordName || in.Name == PendingName || strings.HasPrefix(in.Name, MediaDir+"/") {
			continue
		}
		if err := fetchFile(ctx, p.rp.root, objstore.Join(p.rp.parts, name, in.Name), filepath.Join(dir, filepath.FromSlash(in.Name))); err != nil {
			return "", err
		}
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// copyAll runs n server-side copies, CopiesInFlight at once, skipping a
// copy whose target already holds the source's size and digest (a
// Finalize that was stopped and is run again).
func (rp *remoteParts) copyAll(ctx context.Context, n int, job func(int) (from, to string)) error {
	err := workpool.Run(ctx, n, CopiesInFlight, func(ctx context.Context, i int) error {
		from, to := job(i)
		if err := rp.copyOne(ctx, from, to); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ctx.Err()
}

func (rp *remoteParts) copyOne(ctx context.Context, from, to string) error {
	src, err := rp.root.Stat(ctx, from)
	if err != nil {
		return err
	}
	if got, err := rp.root.Stat(ctx, to); err == nil && got.Size == src.Size && got.SHA256 != "" && got.SHA256 == src.SHA256 {
		return nil
	}
	return rp.root.Copy(ctx, from, to)
}

// removeParts deletes every object of the parts, the records last, so a
// removal cut short leaves parts that read as incomplete.
func (rp *remoteParts) removeParts(ctx context.Context) error {
	var names, records []string
	if err := rp.root.List(ctx, rp.parts+"/", func(in objstore.Info) error {
		if path.Base(in.Name) == RecordName {
			records = append(records, in.Name)
		} else {
			names = append(names, in.Name)
		}
		return nil
	}); err != nil {
		return err
	}
	for _, n := range append(slices.Clip(names), records...) {
		if err := rp.root.Delete(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// readStoreRecord reads and decodes a run record from a store.
func readStoreRecord(ctx context.Context, st objstore.Store, name string) (*Record, error) {
	b, err := objstore.ReadAll(ctx, st, name, 1<<24)
	if err != nil {
		return nil, err
	}
	return decodeRecord(b, st.Location()+"/"+name)
}

// storeShardKeys returns a stored shard's member names and payload bytes,
// from its central directory.
func storeShardKeys(ctx context.Context, st objstore.Store, in objstore.Info) ([]string, int64, error) {
	obj, err := objstore.OpenListed(ctx, st, in)
	if err != nil {
		return nil, 0, err
	}
	defer obj.Close()
	d, err := packcore.ReadDirectory(obj, obj.Size())
	if err != nil {
		return nil, 0, err
	}
	keys := make([]string, len(d.Entries))
	var n int64
	for i, e := range d.Entries {
		keys[i] = e.Name
		n += e.Size
	}
	return keys, n, nil
}

// fetchFile copies an object to a new local file.
func fetchFile(ctx context.Context, st objstore.Store, name, dst string) error {
	obj, err := st.Open(ctx, name)
	if err != nil {
		return err
	}
	defer obj.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	r := objstore.NewSeqReader(ctx, obj, objstore.SeqOptions{})
	defer r.Close()
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("%s/%s: %w", st.Location(), name, err)
	}
	return f.Close()
}

// joinDirPrefix starts the name of the local directories in which runs of
// Finalize into object storage join their tables; a run killed before its
// clean-up leaves one, which a later run removes (filelock.MkdirTemp).
const joinDirPrefix = "bpconvert-finalize-"
