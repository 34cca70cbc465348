package convert

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/stage"
)

// JournalName is the object an append into object storage puts once every
// file of its commit is uploaded (the tables and manifest under
// AppendTemp): it names them and the record to commit, so that whoever
// finds it (the append itself, or a rerun after a stop) copies them into
// place and puts the record, only while the record is still the one the
// append extends.
const JournalName = ".bpconvert-commit.json"

// AppendTemp is the prefix under which an append into object storage
// uploads the tables and manifest of its commit before they are copied
// into place.
const AppendTemp = ".bpconvert-append/"

// journal is the content of JournalName.
type journal struct {
	Record   string   `json:"record"`
	BaseETag string   `json:"base_etag"`
	Files    []string `json:"files"`
}

// beginAppend starts an append to the committed output in object storage
// (o.Base): it claims the destination with its pending record (put only if
// absent; the pending record of a stopped run of the same append is
// resumed), checks that the record is still the one it planned on, and
// stages on local disk as a new run does, its new shards uploaded under
// their final names (nothing refers to them until the commit).
func (d *bucketDest) beginAppend(ctx context.Context, o OutputOptions) (*Output, error) {
	if o.Pack.Record == nil {
		return nil, &UsageError{Err: errStdinAppend}
	}
	rec := o.Pack.Record.Encode()
	stats := cmp.Or(o.Stats, &objstore.Stats{})
	st, err := d.open(ctx, stats)
	if err != nil {
		return nil, err
	}
	resume, err := d.claimAppend(ctx, st, rec, o)
	if err != nil {
		return nil, err
	}
	raw, etag, err := d.readRecordRaw(ctx)
	if err == nil {
		err = o.Base.sameBase(raw)
	}
	if err != nil {
		if !resume {
			st.Delete(context.WithoutCancel(ctx), PendingName) //nolint:errcheck // the claim is given up
		}
		return nil, err
	}
	if s3, ok := st.(interface {
		AbortUploads(context.Context, string) (int, error)
	}); ok {
		if _, err := s3.AbortUploads(ctx, ""); err != nil {
			return nil, err
		}
	}
	sg, err := stage.BeginWith(StagingDir(d.staging, d.loc), stage.Options{Record: rec, Resume: !o.Pack.Restart})
	if err != nil {
		return nil, err
	}
	r := newRemote(ctx, st, stats, sg, o)
	r.baseETag = etag
	out, err := d.appendWriter(ctx, r, sg, o, resume)
	if err != nil {
		sg.Abort()
		return nil, err
	}
	return r.attach(out)
}

// appendWriter opens the writer of an append into object storage: the
// shards after the committed ones that a stopped run of the same append
// uploaded or staged are reused (those without a gap), any others
// discarded.
func (d *bucketDest) appendWriter(ctx context.Context, r *remote, sg *stage.Stage, o OutputOptions, resume bool) (*Output, error) {
	if sg.Resumed {
		if err := clearForResume(sg.Dir, o.packDir()); err != nil {
			return nil, err
		}
	}
	rs, err := readRemoteState(ctx, r.store, o.packDir())
	if err != nil {
		return nil, err
	}
	base := len(o.Base.Shards)
	var extra []objstore.Info
	for _, in := range rs.shards {
		if i, ok := shardIndex(path.Base(in.Name)); ok && i >= base {
			extra = append(extra, in)
		}
	}
	if !resume {
		for _, in := range extra {
			if err := r.store.Delete(ctx, in.Name); err != nil {
				return nil, err
			}
		}
		extra = nil
	}
	if resume || sg.Resumed {
		kept, err := r.keepPrefix(rs.shards, sg.Resumed)
		if err != nil {
			return nil, err
		}
		extra = extra[:0]
		for _, in := range kept {
			if i, ok := shardIndex(path.Base(in.Name)); ok && i >= base {
				extra = append(extra, in)
			}
		}
	}
	stored, err := r.storedShards(extra)
	if err != nil {
		return nil, err
	}
	out, err := beginAppendWriter(ctx, d.loc, sg, o, stored, r.publish)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// claimAppend puts the append's pending record, only if absent; it
// reports whether the destination held this same append's, left by a
// stopped run (resume). Another run's pending record is refused, or with
// --restart discarded with the shards it uploaded after the committed
// ones.
func (d *bucketDest) claimAppend(ctx context.Context, st objstore.Store, rec []byte, o OutputOptions) (bool, error) {
	pending, err := objstore.ReadAll(ctx, st, PendingName, maxRecord)
	switch {
	case err == nil && bytes.Equal(pending, rec) && !o.Pack.Restart:
		return true, nil
	case err == nil && !o.Pack.Restart:
		return false, errAppendBusy(d.loc, pending)
	case err == nil:
		if err := d.discardAppend(ctx, st, o); err != nil {
			return false, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if err := st.Put(ctx, PendingName, bytes.NewReader(rec), int64(len(rec)), objstore.PutOptions{IfAbsent: true}); err != nil {
		if errors.Is(err, objstore.ErrExists) {
			b, _ := objstore.ReadAll(ctx, st, PendingName, maxRecord)
			return false, errAppendBusy(d.loc, b)
		}
		return false, err
	}
	return false, nil
}

// discardAppend removes what a stopped append left: the shards after the
// committed ones, its uploads under AppendTemp, its journal and, last, its
// pending record.
func (d *bucketDest) discardAppend(ctx context.Context, st objstore.Store, o OutputOptions) error {
	base := len(o.Base.Shards)
	var names []string
	err := st.List(ctx, "", func(in objstore.Info) error {
		rest := in.Name
		if o.packDir() != "." {
			rest = strings.TrimPrefix(in.Name, o.packDir()+"/")
		}
		if i, ok := shardIndex(rest); (ok && i >= base && rest != in.Name) || (ok && i >= base && o.packDir() == ".") || strings.HasPrefix(in.Name, AppendTemp) || in.Name == JournalName {
			names = append(names, in.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := st.Delete(ctx, n); err != nil {
			return err
		}
	}
	return st.Delete(ctx, PendingName)
}

// commitAppend commits an append: the staged tables and manifest are
// uploaded under AppendTemp, the journal is put, and rollForward copies
// them into place and puts the record.
func (r *remote) commitAppend(stageDir string, rec []byte) error {
	if err := r.wait(); err != nil {
		return err
	}
	files, err := r.stagedFiles(stageDir)
	if err != nil {
		return err
	}
	for _, rel := range files {
		if err := objstore.PutFile(r.ctx, r.store, AppendTemp+rel, filepath.Join(stageDir, filepath.FromSlash(rel))); err != nil {
			return err
		}
	}
	j := journal{Record: string(rec), BaseETag: r.baseETag, Files: files}
	b, _ := json.MarshalIndent(j, "", " ")
	if err := r.store.Put(r.ctx, JournalName, bytes.NewReader(b), int64(len(b)), objstore.PutOptions{IfAbsent: true}); err != nil {
		if !errors.Is(err, objstore.ErrExists) {
			return err
		}
		old, err := readJournal(r.ctx, r.store)
		if err != nil {
			return err
		}
		if old.Record != j.Record {
			return &RetryError{Err: fmt.Errorf("%s: %w: another append is committing", r.store.Location(), ErrBaseMoved),
				Hint: "rerun the same command: it appends to the output as it is now"}
		}
	}
	return r.rollForward(j)
}

// stagedFiles lists what an output staged besides its shards and record
// (tables, manifest, any other file), temporary files left out.
func (r *remote) stagedFiles(stageDir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(stageDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(stageDir, p)
		rel = filepath.ToSlash(rel)
		if rel == RecordName || IsTemp(rel) || (path.Dir(rel) == cmp.Or(r.packDir, ".") && strings.HasSuffix(rel, ".zip")) {
			return nil
		}
		files = append(files, rel)
		return nil
	})
	// A Lance version manifest is copied after the data files it names.
	slices.SortStableFunc(files, func(a, b string) int {
		switch va, vb := stage.MakesVisible(a), stage.MakesVisible(b); {
		case va == vb:
			return 0
		case va:
			return 1
		}
		return -1
	})
	return files, err
}

// readJournal reads the journal of an append's commit.
func readJournal(ctx context.Context, st objstore.Store) (journal, error) {
	var j journal
	b, err := objstore.ReadAll(ctx, st, JournalName, maxRecord)
	if err != nil {
		return j, err
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return j, fmt.Errorf("%s/%s: %w", st.Location(), JournalName, err)
	}
	return j, nil
}

// rollForward finishes the commit a journal describes: each file copied
// from AppendTemp into place (one already copied, its upload removed, is
// skipped), then the record put only while its ETag is still the one the
// append extends (or found to be this commit's already), then the
// uploads, the journal and the pending record removed. A record another
// commit replaced meanwhile fails the append (a rerun appends anew).
func (r *remote) rollForward(j journal) error {
	for _, rel := range j.Files {
		if err := r.store.Copy(r.ctx, AppendTemp+rel, rel); err != nil && !errors.Is(err, objstore.ErrNotExist) {
			return err
		}
	}
	rec := []byte(j.Record)
	err := r.store.Put(r.ctx, RecordName, bytes.NewReader(rec), int64(len(rec)), objstore.PutOptions{IfMatch: j.BaseETag})
	if err != nil {
		own, oerr := ownCommit(r.ctx, r.store, rec)
		if oerr != nil || !own {
			if errors.Is(err, objstore.ErrChanged) {
				r.cleanAppend(j)
				return &RetryError{Err: fmt.Errorf("%s: %w", r.store.Location(), ErrBaseMoved), Hint: "rerun the same command: it appends to the output as it is now"}
			}
			return err
		}
		r.found = true
	}
	if err := r.cleanAppend(j); err != nil {
		return err
	}
	return r.store.Delete(r.ctx, PendingName)
}

// cleanAppend removes a commit's uploads under AppendTemp and its journal.
func (r *remote) cleanAppend(j journal) error {
	for _, rel := range j.Files {
		if err := r.store.Delete(r.ctx, AppendTemp+rel); err != nil {
			return err
		}
	}
	return r.store.Delete(r.ctx, JournalName)
}

// recover finishes an append's commit that a stopped run began (its
// journal is in the store).
func (d *bucketDest) recover(ctx context.Context) (bool, error) {
	st, err := d.open(ctx, nil)
	if err != nil {
		return false, err
	}
	j, err := readJournal(ctx, st)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r := &remote{store: st, ctx: ctx}
	if err := r.rollForward(j); err != nil {
		var re *RetryError
		if errors.As(err, &re) {
			return true, nil // another commit won; what the journal named is gone
		}
		return false, err
	}
	return true, nil
}
