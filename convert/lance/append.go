package lance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/plan"
)

// committedFiles reads the files of the committed output an append
// extends (convert.Base).
type committedFiles interface {
	List(ctx context.Context, relDir string) ([]string, error)
	ReadFile(ctx context.Context, rel string, max int64) ([]byte, error)
}

// maxManifest bounds a committed table's manifest read whole.
const maxManifest = 1 << 28

// appendState is what an append knows of the committed output: the next
// version of its table, and where the new rows' keys start.
type appendState struct {
	ext *lancefmt.ExtendPlan // nil when the source has no newer version
	// rec is the committed table's record.
	rec Record
	// nextRow is the row number the first new row's key gets: the rows
	// the committed output numbered (see Record.NextRow).
	nextRow uint64
	// What the new version adds, carries and changes.
	newRows, keptRows, deletedRows uint64
	newBytes, keptBytes            int64
}

// committedTable reads the latest manifest of the committed output's table
// and the record in its schema metadata.
func committedTable(ctx context.Context, base committedFiles) ([]byte, *lancefmt.Manifest, Record, error) {
	var rec Record
	dir := TableDir + "/_versions"
	names, err := base.List(ctx, dir)
	if err != nil {
		return nil, nil, rec, fmt.Errorf("lance: the committed output's %s: %w", dir, err)
	}
	for i, n := range names {
		names[i] = path.Base(n)
	}
	name, _, ok := lancefmt.LatestManifest(names)
	if !ok {
		return nil, nil, rec, fmt.Errorf("lance: the committed output has no table under %s", dir)
	}
	b, err := base.ReadFile(ctx, dir+"/"+name, maxManifest)
	if err != nil {
		return nil, nil, rec, fmt.Errorf("lance: the committed output's %s/%s: %w", dir, name, err)
	}
	m, err := lancefmt.ParseManifestFile(b)
	if err != nil {
		return nil, nil, rec, fmt.Errorf("lance: the committed output's %s/%s: %w", dir, name, err)
	}
	if err := json.Unmarshal(m.SchemaMetadata[MetaKey], &rec); err != nil || rec.SourceFormat != "lance" {
		return nil, nil, rec, fmt.Errorf("lance: the committed output's table %s has no %q record of a Lance conversion", TableDir, MetaKey)
	}
	return b, m, rec, nil
}

// checkOptions refuses an append whose selection or --external differs
// from the committed output's (a usage error).
func (j *Job) checkOptions() error {
	rec, names := j.app.rec, j.selNames()
	if !slices.Equal(rec.Extracted, names) || rec.External != j.opts.External {
		return &convert.UsageError{
			Err: fmt.Errorf("lance: --append: the committed output extracted %q with --external %s; this run extracts %q with --external %s",
				rec.Extracted, rec.External, names, j.opts.External),
			Hint: "an append takes the options of the conversion it extends"}
	}
	return nil
}

// planAppend plans an append to the committed output base: which
// fragments of the source version are new, which the output holds. Only
// manifests are read.
func (j *Job) planAppend(ctx context.Context, base committedFiles) (*appendState, error) {
	table, tm, rec, err := committedTable(ctx, base)
	if err != nil {
		return nil, err
	}
	st := &appendState{rec: rec, nextRow: rec.NextRow}
	if st.nextRow == 0 {
		// A first conversion numbered every row of its version.
		st.nextRow = tm.NumRows()
	}
	if v := j.ds.Version(); v < rec.SourceVersion {
		return nil, convert.Invalid("lance", j.src, fmt.Errorf("version %d is older than version %d, which the committed output holds", v, rec.SourceVersion))
	}
	from := j.ds
	if j.ds.Version() != rec.SourceVersion {
		from, err = openDataset(ctx, j.opts.Source, lancefmt.OpenOptions{Version: rec.SourceVersion})
	}
	if err != nil {
		if storeFailed(err) {
			return nil, err
		}
		ie := j.located(err)
		if errors.Is(err, lancefmt.ErrVersionNotFound) {
			ie.Err = fmt.Errorf("lance: %s: version %d, which the committed output was converted from, is no longer in the dataset (cleaned up), so what changed since cannot be told", j.src, rec.SourceVersion)
			ie.Hint = "convert the whole version again with --restart instead of --append"
		}
		return nil, ie
	}
	ext, err := j.ds.PlanExtend(from, table, j.opts.AllowRemoved)
	var fe *lancefmt.FragmentChangedError
	switch {
	case errors.As(err, &fe):
		ie := convert.Invalid("", "", err)
		ie.Hint = "convert the whole version again with --restart instead of --append"
		if fe.Removed {
			ie.Hint = "pass --allow-removed to drop the fragment from the output too (its members stay in the packs), or convert the whole version again with --restart"
		}
		return nil, ie
	case err != nil:
		return nil, j.located(err)
	}
	st.ext = ext
	for _, f := range ext.New {
		st.newRows += liveRows(f)
		st.newBytes += fragmentBytes(f)
	}
	for _, f := range append(slices.Clone(ext.Kept), ext.Deletions...) {
		st.keptRows += liveRows(f)
		st.keptBytes += fragmentBytes(f)
	}
	old := map[uint64]lancefmt.Fragment{}
	for _, f := range from.Fragments() {
		old[f.ID] = f
	}
	for _, f := range ext.Deletions {
		st.deletedRows += liveRows(old[f.ID]) - liveRows(f)
	}
	for _, id := range ext.Removed {
		st.deletedRows += liveRows(old[id])
	}
	return st, nil
}

// liveRows returns a fragment's rows, deleted ones excluded.
func liveRows(f lancefmt.Fragment) uint64 {
	n := f.PhysicalRows
	if f.Deletion != nil {
		n -= min(f.Deletion.NumDeleted, n)
	}
	return n
}

// fragmentBytes returns the size of a fragment's data files (0 where the
// manifest does not record it).
func fragmentBytes(f lancefmt.Fragment) int64 {
	var n int64
	for _, df := range f.Files {
		n += int64(df.SizeBytes)
	}
	return n
}

// newIDs returns the new fragments' ids (none, not nil, when nothing is
// new).
func (st *appendState) newIDs() []uint64 {
	return append([]uint64{}, st.ext.NewIDs()...)
}

// fragmentDiff is the append's diff in fragments, as convert.Base counts
// sources, each named by its id and sized by its data files: New are the
// fragments whose entry in the table this append writes (the new ones,
// those with new deletion files, those the source dropped, which the new
// version drops), Kept those it carries as they are. The plan says what
// happens to each.
func (st *appendState) fragmentDiff(src string) convert.SourceDiff {
	name := func(id uint64, size int64) convert.SourceFile {
		return convert.SourceFile{Path: fmt.Sprintf("%s#fragment=%d", src, id), Size: size}
	}
	var d convert.SourceDiff
	for _, f := range append(slices.Clone(st.ext.New), st.ext.Deletions...) {
		d.New = append(d.New, name(f.ID, fragmentBytes(f)))
	}
	for _, id := range st.ext.Removed {
		d.New = append(d.New, name(id, 0))
	}
	for _, f := range st.ext.Kept {
		d.Kept = append(d.Kept, name(f.ID, fragmentBytes(f)))
	}
	return d
}

// scope returns the fragments a scan of the run covers: nil for every
// fragment, or, in an append, the new ones (by id, and in order).
func (j *Job) scope() (map[uint64]bool, []uint64) {
	if j.app == nil {
		return nil, nil
	}
	ids := j.app.newIDs()
	keep := map[uint64]bool{}
	for _, id := range ids {
		keep[id] = true
	}
	return keep, ids
}

// scanRows returns the rows the run scans: the version's, or, in an
// append, the new fragments'.
func (j *Job) scanRows() uint64 {
	if j.app == nil {
		return j.ds.NumRows()
	}
	return j.app.newRows
}

// unchanged reports whether the source has nothing the output lacks.
func (st *appendState) unchanged() bool {
	return st.ext.Unchanged()
}

// describe says what the append adds, carries and changes, for the plan.
func (st *appendState) describe(ds *lancefmt.Dataset) (plan.Counts, []string) {
	counts := plan.Counts{
		{Name: "new fragments", N: int64(len(st.newIDs()))},
		{Name: "new rows", N: int64(st.newRows)},
	}
	var notes []string
	e := st.ext
	if e.Unchanged() {
		notes = append(notes, fmt.Sprintf("The committed output holds every fragment of version %d: nothing to append.", ds.Version()))
		return counts, notes
	}
	counts = append(counts, plan.Count{Name: "fragments already converted", N: int64(len(e.Kept) + len(e.Deletions))},
		plan.Count{Name: "rows already converted", N: int64(st.keptRows)})
	notes = append(notes, fmt.Sprintf("The output's table holds the source's version %d (as its own version %d); this append writes its version %d, holding the source's version %d: the new fragments' payloads are packed into new shards and their data files written; the converted fragments are carried unread.",
		e.FromVersion, e.TableVersion, e.TableVersion+1, ds.Version()))
	if len(e.Deletions) > 0 || len(e.Removed) > 0 {
		notes = append(notes, fmt.Sprintf("%s deleted in the source since version %d: %s get the source's new deletion files and %s are dropped, as Lance did; their members stay in the packs, unreferenced.",
			plan.CountText(int64(st.deletedRows), "rows"), e.FromVersion, plan.CountText(int64(len(e.Deletions)), "converted fragments"), plan.CountText(int64(len(e.Removed)), "fragments")))
	}
	return counts, notes
}

// appendNotes adds to an append's plan what it adds, carries and changes.
func (j *Job) appendNotes(p *plan.Plan) {
	counts, notes := j.app.describe(j.ds)
	p.Source.Counts = append(p.Source.Counts, counts...)
	p.Notes = append(p.Notes, notes...)
	p.Notes = append(p.Notes, "The table's indices and tags stay as they are: an index covers the fragments it was built on (Lance scans the new ones without it).")
	st := j.app
	p.Append = &plan.AppendPlan{Unit: "fragments", New: len(st.ext.New), NewBytes: st.newBytes,
		Skipped: len(st.ext.Kept) + len(st.ext.Deletions), SkippedBytes: st.keptBytes}
	if b := j.opts.Base; b != nil {
		p.Append.BaseShards = len(b.Shards)
	}
}
