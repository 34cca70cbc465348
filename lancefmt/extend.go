package lancefmt

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// ExtendPlan says how the next version of a table that Rewrite wrote
// follows a newer version of its source: which of the source's fragments
// are new (their data files are written), which the table holds unchanged
// (their entries are carried as they are, no byte of their data read),
// which got a new deletion file (it is copied and their entry points at
// it) and which the source dropped. See Dataset.PlanExtend.
type ExtendPlan struct {
	// FromVersion is the source version the table was written from; the
	// opened version is the one the extension follows.
	FromVersion uint64
	// TableVersion is the table's latest version; the extension writes
	// TableVersion+1.
	TableVersion uint64
	// New are the fragments of the opened version the table lacks, in
	// the source's order.
	New []Fragment
	// Kept are the fragments carried unchanged.
	Kept []Fragment
	// Deletions are carried fragments whose rows the source deleted since
	// FromVersion: their new deletion files are copied.
	Deletions []Fragment
	// Removed are the ids of FromVersion's fragments the opened version
	// no longer has (Lance drops a fragment whose every row is deleted,
	// and the fragments compaction rewrote).
	Removed []uint64

	table    *Manifest    // the table's latest manifest
	tableRaw *rawManifest // the same, raw
}

// Unchanged reports whether the extension would change nothing.
func (p *ExtendPlan) Unchanged() bool {
	return len(p.New) == 0 && len(p.Deletions) == 0 && len(p.Removed) == 0
}

// NewIDs returns the ids of the new fragments, in order.
func (p *ExtendPlan) NewIDs() []uint64 {
	ids := make([]uint64, len(p.New))
	for i, f := range p.New {
		ids[i] = f.ID
	}
	return ids
}

// FragmentChangedError says that a fragment the table holds was changed or
// dropped by the source since the version the table was written from, in a
// way an extension does not follow.
type FragmentChangedError struct {
	Dir         string // the source dataset
	Fragment    uint64 // the fragment id
	FromVersion uint64 // the version the table was written from
	Version     uint64 // the opened version
	Removed     bool   // the opened version lacks the fragment
	Reason      string
}

func (e *FragmentChangedError) Error() string {
	return fmt.Sprintf("lance: %s: fragment %d: %s between version %d and version %d", e.Dir, e.Fragment, e.Reason, e.FromVersion, e.Version)
}

// PlanExtend plans the next version of table, a dataset Rewrite wrote from
// version from of this dataset (and that earlier extensions may have
// followed up to from), so that it follows the opened version. table is
// the table's latest manifest file, whole. Only manifests are read.
//
// Fragments the opened version adds are new. A fragment of from whose
// entry is unchanged but for its deletion file is carried (with the new
// deletion file when it has one). A fragment whose data files changed
// (rewritten columns, data replacement) is refused with a
// *FragmentChangedError; so is a dropped fragment unless allowRemoved, when
// the next version drops it too. The schema must be the same.
func (d *Dataset) PlanExtend(from *Dataset, table []byte, allowRemoved bool) (*ExtendPlan, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("lance: %s: %s", d.dir, fmt.Sprintf(format, a...))
	}
	tm, err := parseManifestFile(table)
	if err != nil {
		return nil, fail("the converted table's manifest: %v", err)
	}
	traw, err := parseRawManifest(table, "of the converted table")
	if err != nil {
		return nil, fail("%v", err)
	}
	if err := sameSchema(from.manifest.Fields, d.manifest.Fields); err != nil {
		return nil, fail("the schema changed between version %d and version %d: %v", from.Version(), d.Version(), err)
	}
	if !sameIDs(tm.Fragments, from.manifest.Fragments) {
		return nil, fail("the converted table's fragments %v are not those of version %d (%v)", fragmentIDs(tm.Fragments), from.Version(), fragmentIDs(from.manifest.Fragments))
	}
	fromRaw, err := from.readRawManifest()
	if err != nil {
		return nil, fail("version %d: %v", from.Version(), err)
	}
	curRaw, err := d.readRawManifest()
	if err != nil {
		return nil, fail("%v", err)
	}
	p := &ExtendPlan{FromVersion: from.Version(), TableVersion: tm.Version, table: tm, tableRaw: traw}
	cur := map[uint64]bool{}
	for _, fr := range d.manifest.Fragments {
		cur[fr.ID] = true
	}
	changed := func(id uint64, removed bool, reason string) error {
		return &FragmentChangedError{Dir: d.dir, Fragment: id, FromVersion: from.Version(), Version: d.Version(), Removed: removed, Reason: reason}
	}
	old := map[uint64]bool{}
	for _, fr := range from.manifest.Fragments {
		old[fr.ID] = true
		if !cur[fr.ID] {
			if !allowRemoved {
				return nil, changed(fr.ID, true, "removed (its rows deleted, or rewritten by compaction)")
			}
			p.Removed = append(p.Removed, fr.ID)
		}
	}
	for _, fr := range d.manifest.Fragments {
		if !old[fr.ID] {
			p.New = append(p.New, fr)
			continue
		}
		a, b := withoutDeletion(fromRaw.frags[fr.ID]), withoutDeletion(curRaw.frags[fr.ID])
		if !bytes.Equal(a, b) {
			return nil, changed(fr.ID, false, "its data files or row lineage changed")
		}
		if deletionOf(fromRaw.frags[fr.ID]) == nil && deletionOf(curRaw.frags[fr.ID]) == nil ||
			bytes.Equal(deletionOf(fromRaw.frags[fr.ID]), deletionOf(curRaw.frags[fr.ID])) {
			p.Kept = append(p.Kept, fr)
			continue
		}
		if fr.Deletion == nil {
			return nil, changed(fr.ID, false, "its deletion file was removed")
		}
		p.Deletions = append(p.Deletions, fr)
	}
	return p, nil
}

// sameSchema reports how two schemas differ, nil when they do not.
func sameSchema(a, b []*Field) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d fields, then %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.ID != y.ID || x.ParentID != y.ParentID || x.Name != y.Name || x.LogicalType != y.LogicalType ||
			x.Nullable != y.Nullable || x.ExtensionName != y.ExtensionName {
			return fmt.Errorf("field %q (id %d, %s) became %q (id %d, %s)", x.Name, x.ID, x.LogicalType, y.Name, y.ID, y.LogicalType)
		}
	}
	return nil
}

func sameIDs(a, b []Fragment) bool {
	return slices.Equal(fragmentIDs(a), fragmentIDs(b))
}

func fragmentIDs(frs []Fragment) []uint64 {
	ids := make([]uint64, len(frs))
	for i, f := range frs {
		ids[i] = f.ID
	}
	return ids
}

// withoutDeletion returns a DataFragment message without its deletion file
// field.
func withoutDeletion(msg []byte) []byte {
	out := pbuf(nil)
	_ = wire.Walk(msg, func(f wire.Field) error {
		if f.Num != fragmentDeletionFile {
			out = out.raw(f)
		}
		return nil
	})
	return out
}

// deletionOf returns the deletion file field of a DataFragment message, nil
// when it has none.
func deletionOf(msg []byte) []byte {
	var d []byte
	_ = wire.Walk(msg, func(f wire.Field) error {
		if f.Num == fragmentDeletionFile {
			d = f.B
		}
		return nil
	})
	return d
}

// withDeletion returns a DataFragment message of the table with its
// deletion file field replaced by del (placed where Lance places it,
// after the data files).
func withDeletion(msg, del []byte) []byte {
	out := pbuf(nil)
	done := false
	_ = wire.Walk(msg, func(f wire.Field) error {
		switch {
		case f.Num == fragmentDeletionFile:
			return nil
		case f.Num > fragmentFiles && !done:
			out = out.bytes(fragmentDeletionFile, del)
			done = true
		}
		out = out.raw(f)
		return nil
	})
	if !done {
		out = out.bytes(fragmentDeletionFile, del)
	}
	return out
}

// extendFragments returns, in the source's order, the DataFragment
// messages of the next version: a carried fragment's entry from the table
// (with its new deletion file), a new fragment's from write.
func (p *ExtendPlan) extendFragments(frs []Fragment, write func(fr *Fragment) ([]byte, error), deletion func(fr *Fragment) ([]byte, error)) (all, added, updated [][]byte, err error) {
	state := map[uint64]int{} // 1 new, 2 kept, 3 new deletion file
	for _, f := range p.New {
		state[f.ID] = 1
	}
	for _, f := range p.Kept {
		state[f.ID] = 2
	}
	for _, f := range p.Deletions {
		state[f.ID] = 3
	}
	for i := range frs {
		fr := &frs[i]
		var msg []byte
		switch state[fr.ID] {
		case 1:
			if msg, err = write(fr); err != nil {
				return nil, nil, nil, err
			}
			added = append(added, msg)
		case 2:
			msg = p.tableRaw.frags[fr.ID]
		case 3:
			del, err := deletion(fr)
			if err != nil {
				return nil, nil, nil, err
			}
			msg = withDeletion(p.tableRaw.frags[fr.ID], del)
			updated = append(updated, msg)
		default:
			return nil, nil, nil, fmt.Errorf("fragment %d is not in the extension's plan", fr.ID)
		}
		if msg == nil {
			return nil, nil, nil, fmt.Errorf("%w: fragment %d is not in the converted table", errCorrupt, fr.ID)
		}
		all = append(all, msg)
	}
	return all, added, updated, nil
}

// extend writes the next version of the table (see RewriteOptions.Extend).
func (rw *rewriter) extend(res *RewriteResult) (*RewriteResult, error) {
	d, p := rw.d, rw.ext
	res.Version = p.TableVersion + 1
	write := func(fr *Fragment) ([]byte, error) {
		if err := rw.ctx.Err(); err != nil {
			return nil, err
		}
		msg, names, err := rw.fragment(fr, res)
		res.DataFiles = append(res.DataFiles, names...)
		return msg, err
	}
	deletion := func(fr *Fragment) ([]byte, error) {
		dm, err := rw.copyDeletion(fr)
		if err != nil {
			return nil, fmt.Errorf("lance: %s: fragment %d: %s: %w", d.dir, fr.ID, deletionFileName(fr), err)
		}
		return dm, nil
	}
	frags, added, updated, err := p.extendFragments(d.manifest.Fragments, write, deletion)
	if err != nil {
		return nil, err
	}
	if len(updated) == 0 && len(p.Removed) == 0 {
		op := pbuf(nil)
		for _, f := range added {
			op = op.bytes(1, f)
		}
		rw.extOp = pbuf(nil).bytes(100, op)
	} else {
		op := pbuf(nil).packed(1, p.Removed)
		for _, f := range updated {
			op = op.bytes(2, f)
		}
		for _, f := range added {
			op = op.bytes(3, f)
		}
		rw.extOp = pbuf(nil).bytes(108, op)
	}
	var indices [][]byte
	for _, ix := range p.tableRaw.indices {
		indices = append(indices, ix.raw)
	}
	deletions := slices.ContainsFunc(d.manifest.Fragments, func(f Fragment) bool { return f.Deletion != nil })
	if err := rw.commit(frags, indices, deletions); err != nil {
		return nil, fmt.Errorf("lance: %s: %w", d.dir, err)
	}
	if err := syncDirs(rw.dst); err != nil {
		return nil, fmt.Errorf("lance: %s: destination: %w", d.dir, err)
	}
	return res, nil
}

// LatestManifest returns, of the names of the files in a dataset's
// _versions directory, the latest version's manifest and that version;
// ok is false when no name is a committed manifest.
func LatestManifest(names []string) (name string, version uint64, ok bool) {
	for _, n := range names {
		if v, is := manifestVersionFromName(n); is && (!ok || v > version) {
			name, version, ok = n, v, true
		}
	}
	return name, version, ok
}

// ParseManifestFile decodes a whole manifest file.
func ParseManifestFile(b []byte) (*Manifest, error) {
	return parseManifestFile(b)
}

// NumRows returns the rows of the version, deleted rows excluded.
func (m *Manifest) NumRows() uint64 {
	var n uint64
	for _, f := range m.Fragments {
		n += f.PhysicalRows
		if f.Deletion != nil {
			n -= min(f.Deletion.NumDeleted, f.PhysicalRows)
		}
	}
	return n
}
