package lancefmt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// Replacement replaces one top-level column with a nullable utf8 column of
// the same name, field id and position.
type Replacement struct {
	// Column names the top-level column to replace.
	Column string
	// Values returns the new cell values of fragment frag, one per
	// PHYSICAL row (deleted rows included; callers give them null).
	// valid[i]==false means null.
	Values func(ctx context.Context, frag uint64, physicalRows uint64) (vals []string, valid []bool, err error)
}

// RewriteOptions tunes Dataset.Rewrite.
type RewriteOptions struct {
	// Replace lists the columns to replace.
	Replace []Replacement
	// SchemaMetadata holds keys added to (or replacing in) the schema
	// metadata.
	SchemaMetadata map[string]string
	// Seed, when not nil, makes the new data file names and the transaction
	// id derive from it (SHA-256 of the seed and what is named) instead of
	// random bytes, so that a rewrite repeated with the same seed writes
	// the same files byte for byte. Give a value that identifies the run.
	Seed []byte
	// Time is the new version's timestamp; the zero value means now. A
	// reproducible rewrite gives a time derived from its input.
	Time time.Time
	// WriterVersion is the version recorded in the manifest beside the
	// writer library "bpconvert": the version of the program that writes
	// (empty records "(devel)").
	WriterVersion string

	// Extend, when not nil, writes the next version of a table Rewrite
	// wrote, as PlanExtend planned it, instead of a new dataset: dstDir
	// receives only the files that version adds (the data files of the
	// new fragments, the deletion files of the carried ones that got new
	// ones, its manifest and transaction), at their paths relative to the
	// table's directory; the table's other files stay as they are.
	Extend *ExtendPlan

	// blobDescriptors rewrites blob v2 columns, by name, with 6-field
	// descriptors (test hook: see blobDescriptor).
	blobDescriptors map[string]blobDescriptorHook
}

// RewritePlan says, without writing anything, what Rewrite will do.
type RewritePlan struct {
	Dataset       string // source dataset directory
	SourceVersion uint64 // the opened version
	// DataVersion is the data storage version of the output ("2.0",
	// "2.1" or "2.2"): the source's, or "2.0" for a legacy (0.1) source.
	// Data files keep their own versions, which may differ from it and
	// from each other (Lance's mixed data file versions).
	DataVersion string
	Replace     []string       // replaced columns
	Fragments   []FragmentPlan // one per fragment, in order
	Indices     []IndexPlan    // every index of the source version
	// Tags are the source's tags: those naming the opened version are kept
	// (naming version 1), the others dropped.
	Tags []TagPlan
	// DroppedBlobFiles lists the sidecar blob files (data/<file>/*.blob,
	// relative to the dataset directory) that are not carried over.
	DroppedBlobFiles []string
	// StableRowIDs is true when the source uses stable row ids: the output
	// keeps each row's id (_rowid) and row version numbers as they are.
	StableRowIDs bool
	// SpilledLineage counts the fragments whose row lineage Lance spilled
	// to hidden data file columns; those columns are copied page for page.
	SpilledLineage int
}

// FragmentPlan says how one fragment is rewritten.
type FragmentPlan struct {
	ID           uint64   // fragment id, kept
	PhysicalRows uint64   // physical rows, kept
	Files        []string // source data files, relative to the data directory
	// FileVersion is the version of the fragment's new data files, the
	// versions of its source files ("2.0", "2.1", "2.2"; "2.1, 2.0" when
	// they differ: one new file is written per version), or "2.0" when the
	// fragment is transcoded.
	FileVersion string
	// Transcode is true when pages cannot be copied (legacy 0.1 files) and
	// the fragment is decoded with this package's reader and written as a
	// 2.0 file (primitive, boolean, binary and string types, fixed-size
	// lists of fixed-width items, lists and structs; dictionary columns and
	// packed structs are refused unless replaced).
	Transcode bool
	// DeletionFile is the deletion file copied as it is (relative to
	// _deletions), or "" when no row is deleted.
	DeletionFile string
}

// IndexPlan says what happens to one index of the source version.
type IndexPlan struct {
	Name    string   // index name
	UUID    string   // index directory under _indices
	Columns []string // indexed columns (field paths)
	// Carried is true when the index is copied unchanged (its columns are
	// kept and row addresses do not change).
	Carried bool
	// Reason says why an index is dropped; Hint how to rebuild it.
	Reason, Hint string
}

// RewriteResult describes a finished rewrite.
type RewriteResult struct {
	Dir         string // the destination directory
	Version     uint64 // the version written (1)
	Plan        *RewritePlan
	DataFiles   []string // new data files, relative to Dir/data, in fragment order
	CopiedBytes uint64   // page bytes copied from source data files
	Bytes       uint64   // total bytes of the new data files
}

// rawManifest holds the parts of the opened manifest a rewrite carries over
// byte for byte.
type rawManifest struct {
	fields        map[int32][]byte  // Field messages by id
	frags         map[uint64][]byte // DataFragment messages by id
	config        [][]byte          // map entries of field 16
	tableMeta     [][]byte          // map entries of field 19
	nextRowID     uint64
	maxFragmentID *uint64
	indices       []rawIndex
}

// rawIndex is one IndexMetadata message of the index section.
type rawIndex struct {
	raw    []byte
	uuid   string
	name   string
	fields []int32
}

// readRawManifest re-reads the opened manifest file for the fields a
// rewrite copies verbatim and for its index section.
func (d *Dataset) readRawManifest() (*rawManifest, error) {
	_, names, err := listVersions(d.ctx, d.st, d.dir)
	if err != nil {
		return nil, err
	}
	name, ok := names[d.manifest.Version]
	if !ok {
		return nil, fmt.Errorf("version %d: %w", d.manifest.Version, ErrVersionNotFound)
	}
	b, err := d.readFile(d.ctx, joinPath(d.dir, "_versions", name))
	if err != nil {
		return nil, err
	}
	return parseRawManifest(b, name)
}

// parseRawManifest decodes the manifest file b (named name) for the fields
// a rewrite copies verbatim and for its index section.
func parseRawManifest(b []byte, name string) (*rawManifest, error) {
	if len(b) < manifestFooterBytes || string(b[len(b)-4:]) != "LANC" {
		return nil, fmt.Errorf("%w: manifest %s lacks the LANC magic", errCorrupt, name)
	}
	framed := func(pos uint64) ([]byte, error) {
		body := uint64(len(b) - manifestFooterBytes)
		if pos > body || body-pos < 4 {
			return nil, fmt.Errorf("%w: manifest section at %d outside the file", errCorrupt, pos)
		}
		n := uint64(binary.LittleEndian.Uint32(b[pos:]))
		if n > body-pos-4 {
			return nil, fmt.Errorf("%w: manifest section of %d bytes exceeds the file", errCorrupt, n)
		}
		return b[pos+4 : pos+4+n], nil
	}
	msg, err := framed(binary.LittleEndian.Uint64(b[len(b)-manifestFooterBytes:]))
	if err != nil {
		return nil, err
	}
	rm := &rawManifest{fields: map[int32][]byte{}, frags: map[uint64][]byte{}}
	var indexPos *uint64
	err = wire.Walk(msg, func(f wire.Field) error {
		switch f.Num {
		case manifestFields:
			fl, err := parseField(f.B)
			if err != nil {
				return err
			}
			rm.fields[fl.ID] = f.B
		case manifestFragments:
			fr, err := parseFragment(f.B)
			if err != nil {
				return err
			}
			rm.frags[fr.ID] = f.B
		case manifestIndexSection:
			v := f.U
			indexPos = &v
		case manifestMaxFragmentID:
			v := f.U
			rm.maxFragmentID = &v
		case manifestNextRowID:
			rm.nextRowID = f.U
		case manifestConfig:
			rm.config = append(rm.config, f.B)
		case manifestTableMetadata:
			rm.tableMeta = append(rm.tableMeta, f.B)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", name, err)
	}
	if indexPos != nil {
		sec, err := framed(*indexPos)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: index section: %w", name, err)
		}
		err = wire.Walk(sec, func(f wire.Field) error {
			if f.Num != indexSectionIndices {
				return nil
			}
			ix := rawIndex{raw: f.B}
			var ids []uint64
			err := wire.Walk(f.B, func(g wire.Field) error {
				var err error
				switch g.Num {
				case indexUUID:
					err = wire.Walk(g.B, func(h wire.Field) error {
						if h.Num == uuidBytes && len(h.B) == 16 {
							u := hex.EncodeToString(h.B)
							ix.uuid = u[:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:]
						}
						return nil
					})
				case indexFields:
					ids, err = wire.PackedUints(ids, g)
				case indexName:
					ix.name = string(g.B)
				}
				return err
			})
			if err != nil {
				return err
			}
			for _, v := range ids {
				ix.fields = append(ix.fields, wire.Int32(v))
			}
			rm.indices = append(rm.indices, ix)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("manifest %s: index section: %w", name, err)
		}
	}
	return rm, nil
}

// fileVersionName names the version of a data file as the manifest
// records it.
func fileVersionName(major, minor uint32) (string, error) {
	switch {
	case major == 0 && minor < 3:
		return "0.1", nil
	case major == 0 && minor == 3, major == 2 && minor == 0:
		return "2.0", nil
	case major == 2 && (minor == 1 || minor == 2):
		return fmt.Sprintf("2.%d", minor), nil
	case major == 2 && minor == 3:
		return "", fmt.Errorf("file version 2.3 is not supported (it is unstable; 2.0, 2.1 and 2.2 are)")
	}
	return "", fmt.Errorf("file version %d.%d is not supported", major, minor)
}

// fieldPath names field f by its path from the top level.
func (d *Dataset) fieldPath(id int32) string {
	byID := map[int32]*Field{}
	for _, f := range d.manifest.Fields {
		byID[f.ID] = f
	}
	f := byID[id]
	if f == nil {
		return fmt.Sprintf("field %d", id)
	}
	parts := []string{f.Name}
	for f.ParentID >= 0 && byID[f.ParentID] != nil {
		f = byID[f.ParentID]
		parts = append([]string{f.Name}, parts...)
	}
	return strings.Join(parts, ".")
}

// PlanRewrite says, without writing anything, what Rewrite will do when the
// top-level columns named by replace are replaced: per fragment the files,
// whether pages are copied or the fragment must be transcoded, the indices
// carried over or dropped (with the reason and a hint how to rebuild them),
// the sidecar blob files not carried and the output data file version. It
// fails when the rewrite cannot be done.
func (d *Dataset) PlanRewrite(replace []string) (*RewritePlan, error) {
	return d.planRewrite(replace, nil, nil)
}

// PlanRewriteFragments is PlanRewrite for the fragments with the given ids
// only (the new fragments of an extension, see PlanExtend): the others are
// neither checked nor listed in the plan.
func (d *Dataset) PlanRewriteFragments(replace []string, ids []uint64) (*RewritePlan, error) {
	only := map[uint64]bool{}
	for _, id := range ids {
		only[id] = true
	}
	return d.planRewrite(replace, nil, only)
}

// planRewrite is PlanRewrite; the blob columns named in hooked are
// rewritten by a test hook instead of being refused.
// When only is not nil, the fragments not in it are left out.
func (d *Dataset) planRewrite(replace []string, hooked map[string]blobDescriptorHook, only map[uint64]bool) (*RewritePlan, error) {
	m := d.manifest
	plan := &RewritePlan{Dataset: d.dir, SourceVersion: m.Version, Replace: append([]string(nil), replace...),
		StableRowIDs: m.ReaderFeatureFlags&flagStableRowIDs != 0}
	replaced, err := d.replacedFields(replace, hooked)
	if err != nil {
		return nil, err
	}
	for _, fr := range m.Fragments {
		if only != nil && !only[fr.ID] {
			continue
		}
		fp, err := d.planFragment(plan, fr)
		if err != nil {
			return nil, err
		}
		if plan.DataVersion == "" {
			plan.DataVersion = strings.Split(fp.FileVersion, ", ")[0]
		}
		plan.Fragments = append(plan.Fragments, fp)
	}
	if err := d.planDataVersion(plan, replaced); err != nil {
		return nil, err
	}
	if err := d.planIndices(plan, replaced); err != nil {
		return nil, err
	}
	tags, err := d.Tags()
	if err != nil {
		return nil, err
	}
	plan.Tags = planTags(tags, d.manifest.Version)
	return plan, nil
}

// planFail is a rewrite planning error about the dataset as a whole.
func (d *Dataset) planFail(format string, a ...any) error {
	return fmt.Errorf("lance: %s: version %d: %s", d.dir, d.manifest.Version, fmt.Sprintf(format, a...))
}

// replacedFields checks the columns named for replacement: top-level,
// each once, and every blob column among them (or hooked).
func (d *Dataset) replacedFields(replace []string, hooked map[string]blobDescriptorHook) (map[string]*Field, error) {
	replaced := map[string]*Field{}
	for _, name := range replace {
		f := d.schema.Field(name)
		if f == nil {
			return nil, d.planFail("no top-level column %q to replace", name)
		}
		if replaced[name] != nil {
			return nil, d.planFail("column %q is replaced twice", name)
		}
		replaced[name] = f
	}
	for _, f := range d.schema.Fields {
		if f.IsBlob() && replaced[f.Name] == nil && hooked[f.Name] == nil {
			return nil, d.planFail("blob column %q must be replaced: its payloads live at absolute offsets of the data files or in sidecar files, which a page copy does not carry", f.Name)
		}
	}
	return replaced, nil
}

// planFragment plans one fragment: its files, the version each is copied
// at (legacy ones transcoded), its deletion file; sidecar blob files it
// drops are added to plan.
func (d *Dataset) planFragment(plan *RewritePlan, fr Fragment) (FragmentPlan, error) {
	fp := FragmentPlan{ID: fr.ID, PhysicalRows: fr.PhysicalRows}
	if slices.ContainsFunc(fr.Files, func(df DataFile) bool { return slices.ContainsFunc(df.Fields, isLineageField) }) {
		plan.SpilledLineage++
	}
	for _, df := range fr.Files {
		fp.Files = append(fp.Files, df.Path)
		if err := d.planDataFile(plan, &fp, df); err != nil {
			return fp, fmt.Errorf("lance: %s: fragment %d: %s: %w", d.dir, fr.ID, df.Path, err)
		}
	}
	if fp.FileVersion == "" {
		fp.FileVersion = d.manifest.DataVersion
		if fp.FileVersion == "0.1" {
			fp.FileVersion = "2.0"
		}
	}
	if fr.Deletion != nil {
		fp.DeletionFile = deletionFileName(&fr)
	}
	return fp, nil
}

// planDataFile adds one data file of a fragment to its plan.
func (d *Dataset) planDataFile(plan *RewritePlan, fp *FragmentPlan, df DataFile) error {
	if df.BaseID != nil {
		// Base paths are resolved when reading; the output holds
		// everything under its own root.
		if _, err := d.basePath(df.BaseID, "data"); err != nil {
			return err
		}
	}
	v, err := fileVersionName(df.Major, df.Minor)
	if err != nil {
		return err
	}
	if v == "0.1" {
		// Legacy pages cannot be copied: the fragment is decoded and
		// written as a 2.0 file.
		if fp.FileVersion != "" && !fp.Transcode {
			return fmt.Errorf("legacy (0.1) file mixed with %s in one fragment", fp.FileVersion)
		}
		fp.Transcode, fp.FileVersion = true, "2.0"
		return nil
	}
	if fp.Transcode {
		return fmt.Errorf("file version %s mixed with legacy (0.1) files in one fragment", v)
	}
	// Files of different versions (Lance's mixed data file versions) are
	// each copied at their own version.
	if fp.FileVersion == "" {
		fp.FileVersion = v
	} else if !slices.Contains(strings.Split(fp.FileVersion, ", "), v) {
		fp.FileVersion += ", " + v
	}
	// Sidecar blob files of blob v2 columns.
	dir, err := d.dataFilePath(&df)
	if err == nil {
		side := strings.TrimSuffix(dir, ".lance")
		d.listFiles(d.ctx, side, func(e FileInfo) error { //nolint:errcheck // no sidecar directory: nothing dropped
			if !strings.Contains(e.Name, "/") && strings.HasSuffix(e.Name, ".blob") {
				rel, ok := relPath(d.dir, joinPath(side, e.Name))
				if !ok {
					rel = joinPath(side, e.Name)
				}
				plan.DroppedBlobFiles = append(plan.DroppedBlobFiles, rel)
			}
			return nil
		})
	}
	return nil
}

// planDataVersion settles the version new files are written at and
// checks that the kept columns of transcoded legacy fragments fit it.
func (d *Dataset) planDataVersion(plan *RewritePlan, replaced map[string]*Field) error {
	if v := d.manifest.DataVersion; v == "2.0" || v == "2.1" || v == "2.2" {
		plan.DataVersion = v // the version Lance writes new files at, kept
	} else if plan.DataVersion == "" {
		plan.DataVersion = d.manifest.DataVersion
	}
	if plan.DataVersion == "0.1" || plan.DataVersion == "" {
		return d.planFail("legacy (0.1) datasets without data files cannot be rewritten")
	}
	if slices.ContainsFunc(plan.Fragments, func(fp FragmentPlan) bool { return fp.Transcode }) {
		for _, f := range d.schema.Fields {
			if replaced[f.Name] != nil {
				continue
			}
			if err := check20(f); err != nil {
				return d.planFail("column %q: %v (legacy fragments are transcoded; replace the column or convert the dataset with Lance first)", f.Name, err)
			}
		}
	}
	if plan.DataVersion != "2.0" && plan.DataVersion != "2.1" && plan.DataVersion != "2.2" {
		return d.planFail("data storage version %q is not supported", plan.DataVersion)
	}
	return nil
}

// planIndices says of each index whether the rewrite carries it: not when
// it indexes a replaced column or its directory is missing.
func (d *Dataset) planIndices(plan *RewritePlan, replaced map[string]*Field) error {
	rm, err := d.readRawManifest()
	if err != nil {
		return fmt.Errorf("lance: %s: %w", d.dir, err)
	}
	for _, ix := range rm.indices {
		ip := IndexPlan{Name: ix.name, UUID: ix.uuid, Carried: true}
		for _, id := range ix.fields {
			ip.Columns = append(ip.Columns, d.fieldPath(id))
			for name, f := range replaced {
				if fieldContains(f, id) {
					ip.Carried = false
					ip.Reason = fmt.Sprintf("it indexes the replaced column %q", name)
					ip.Hint = fmt.Sprintf("rebuild it on the new table, e.g. table.createIndex(%q) in LanceDB, if an index on the reference strings is wanted", name)
				}
			}
		}
		if ip.Carried && !d.hasFiles(joinPath(d.dir, "_indices", ix.uuid)) {
			ip.Carried = false
			ip.Reason = "its directory _indices/" + ix.uuid + " is missing"
			ip.Hint = fmt.Sprintf("rebuild it with createIndex on %s", strings.Join(ip.Columns, ", "))
		}
		plan.Indices = append(plan.Indices, ip)
	}
	return nil
}

// deletionFileName names the deletion file of a fragment.
func deletionFileName(fr *Fragment) string {
	ext := "arrow"
	if fr.Deletion.Bitmap {
		ext = "bin"
	}
	return fmt.Sprintf("%d-%d-%d.%s", fr.ID, fr.Deletion.ReadVersion, fr.Deletion.ID, ext)
}

// idBytes fills b with random bytes or, with a seed, with the first bytes
// of SHA-256(seed, NUL, label).
func idBytes(seed []byte, label string, b []byte) error {
	if seed == nil {
		_, err := rand.Read(b)
		return err
	}
	h := sha256.New()
	h.Write(seed)
	h.Write([]byte{0})
	h.Write([]byte(label))
	copy(b, h.Sum(nil))
	return nil
}

// randomFileStem returns a data file name stem in Lance's style: 24 binary
// digits then 26 hex digits of a 128-bit id (random, or derived from seed
// and label; see RewriteOptions.Seed).
func randomFileStem(seed []byte, label string) (string, error) {
	var b [16]byte
	if err := idBytes(seed, label, b[:]); err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, c := range b[:3] {
		fmt.Fprintf(&sb, "%08b", c)
	}
	sb.WriteString(hex.EncodeToString(b[3:]))
	return sb.String(), nil
}

// randomUUID returns a version 4 UUID string (random, or derived from seed
// and label; see RewriteOptions.Seed).
func randomUUID(seed []byte, label string) (string, error) {
	var b [16]byte
	if err := idBytes(seed, label, b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	u := hex.EncodeToString(b[:])
	return u[:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:], nil
}

// Rewrite writes a new Lance dataset into dstDir (which must not exist or be
// empty; the caller stages and renames it): one version (1) whose fragments
// keep their ids, physical rows and deletion files, whose kept columns are
// page-copied and whose replaced columns hold the given strings. See
// PlanRewrite for what is carried over.
func (d *Dataset) Rewrite(ctx context.Context, dstDir string, opts RewriteOptions) (*RewriteResult, error) {
	var names []string
	byName := map[string]*Replacement{}
	for i := range opts.Replace {
		r := &opts.Replace[i]
		if r.Values == nil {
			return nil, fmt.Errorf("lance: %s: replacement of %q has no Values function", d.dir, r.Column)
		}
		names = append(names, r.Column)
		byName[r.Column] = r
	}
	var only map[uint64]bool
	if opts.Extend != nil {
		only = map[uint64]bool{}
		for _, f := range opts.Extend.New {
			only[f.ID] = true
		}
	}
	plan, err := d.planRewrite(names, opts.blobDescriptors, only)
	if err != nil {
		return nil, err
	}
	rm, err := d.readRawManifest()
	if err != nil {
		return nil, fmt.Errorf("lance: %s: %w", d.dir, err)
	}
	if err := prepareDir(dstDir); err != nil {
		return nil, fmt.Errorf("lance: %s: destination: %w", d.dir, err)
	}
	for _, sub := range []string{"data", "_versions", "_transactions", "_deletions", "_indices"} {
		if err := os.MkdirAll(filepath.Join(dstDir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("lance: %s: destination: %w", d.dir, err)
		}
	}
	rw := &rewriter{d: d, ctx: ctx, dst: dstDir, byName: byName, rm: rm, plan: plan, hooks: map[int32]blobDescriptorHook{}, versions: map[string]bool{}, tags: plan.Tags, seed: opts.Seed, time: opts.Time,
		writerVersion: opts.WriterVersion, ext: opts.Extend}
	if rw.writerVersion == "" {
		rw.writerVersion = "(devel)"
	}
	for name, h := range opts.blobDescriptors {
		f := d.schema.Field(name)
		if f == nil || f.BlobVersion() != 2 {
			return nil, fmt.Errorf("lance: %s: %q is not a blob v2 column", d.dir, name)
		}
		rw.hooks[f.ID] = h
	}
	if err := rw.buildSchema(opts.SchemaMetadata); err != nil {
		return nil, fmt.Errorf("lance: %s: %w", d.dir, err)
	}
	res := &RewriteResult{Dir: dstDir, Version: 1, Plan: plan}
	if opts.Extend != nil {
		return rw.extend(res)
	}
	var frags [][]byte
	var deletions bool
	for i := range d.manifest.Fragments {
		fr := &d.manifest.Fragments[i]
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		msg, names, err := rw.fragment(fr, res)
		if err != nil {
			return nil, err
		}
		frags = append(frags, msg)
		res.DataFiles = append(res.DataFiles, names...)
		deletions = deletions || fr.Deletion != nil
	}
	var indices [][]byte
	for k, ip := range plan.Indices {
		if !ip.Carried {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		src := joinPath(d.dir, "_indices", ip.UUID)
		if err := copyTree(ctx, d.st, src, filepath.Join(dstDir, "_indices", ip.UUID)); err != nil {
			return nil, fmt.Errorf("lance: %s: index %q: %w", d.dir, ip.Name, err)
		}
		indices = append(indices, rewriteIndexMeta(rm.indices[k].raw))
	}
	if err := rw.commit(frags, indices, deletions); err != nil {
		return nil, fmt.Errorf("lance: %s: %w", d.dir, err)
	}
	if err := syncDirs(dstDir); err != nil {
		return nil, fmt.Errorf("lance: %s: destination: %w", d.dir, err)
	}
	return res, nil
}

// syncDirs syncs the directories of a written dataset.
func syncDirs(dstDir string) error {
	for _, sub := range []string{"data", "_versions", "_transactions", "_deletions", "_indices", "."} {
		if err := syncDir(filepath.Join(dstDir, sub)); err != nil {
			return err
		}
	}
	return nil
}

// prepareDir creates dir or checks that it is empty.
func prepareDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty", dir)
	}
	return nil
}

// rewriter holds the state of one Rewrite.
type rewriter struct {
	d      *Dataset
	ctx    context.Context
	dst    string
	byName map[string]*Replacement
	rm     *rawManifest
	plan   *RewritePlan
	// fields are the output schema's Field messages in order; order their
	// ids; top the top-level field owning each id; replacedIDs the ids of
	// the replaced top-level fields.
	fields      [][]byte
	order       []int32
	top         map[int32]int32
	replacedIDs map[int32]*Replacement
	schemaMeta  map[string][]byte
	hooks       map[int32]blobDescriptorHook // test hook, by top-level field id
	// writerVersion is recorded in the manifest with writerLibrary.
	writerVersion string
	versions      map[string]bool // file versions of the new data files
	tags          []TagPlan       // RewritePlan.Tags
	spilled       bool            // some fragment's row lineage is spilled to columns
	seed          []byte          // RewriteOptions.Seed
	time          time.Time       // RewriteOptions.Time
	ext           *ExtendPlan     // RewriteOptions.Extend
	// extOp is the transaction operation of an extension (Append, or
	// Update when carried fragments changed).
	extOp []byte
}

// buildSchema builds the output schema: kept fields byte for byte, each
// replaced field as a nullable utf8 field without blob metadata or
// children.
func (rw *rewriter) buildSchema(extra map[string]string) error {
	rw.top = map[int32]int32{}
	rw.replacedIDs = map[int32]*Replacement{}
	rw.schemaMeta = map[string][]byte{}
	keptBlob := false
	for _, f := range rw.d.schema.Fields {
		keptBlob = keptBlob || (f.IsBlob() && rw.byName[f.Name] == nil)
	}
	for k, v := range rw.d.manifest.SchemaMetadata {
		if k == managedBlobsKey && !keptBlob {
			continue // the output stores no blob, managed or not
		}
		rw.schemaMeta[k] = v
	}
	for k, v := range extra {
		rw.schemaMeta[k] = []byte(v)
	}
	var walkF func(f *Field, top int32)
	walkF = func(f *Field, top int32) {
		rw.top[f.ID] = top
		for _, c := range f.Children {
			walkF(c, top)
		}
	}
	for _, f := range rw.d.schema.Fields {
		walkF(f, f.ID)
		if r := rw.byName[f.Name]; r != nil {
			rw.replacedIDs[f.ID] = r
		}
	}
	for _, f := range rw.d.manifest.Fields {
		top, ok := rw.top[f.ID]
		if !ok {
			return fmt.Errorf("%w: field %d is not in the schema tree", errCorrupt, f.ID)
		}
		if r := rw.replacedIDs[top]; r != nil {
			if f.ID != top {
				continue // children of a replaced field are dropped
			}
			rw.fields = append(rw.fields, utf8FieldMessage(f))
			rw.order = append(rw.order, f.ID)
			continue
		}
		raw, ok := rw.rm.fields[f.ID]
		if !ok {
			return fmt.Errorf("%w: field %d missing from the raw manifest", errCorrupt, f.ID)
		}
		rw.fields = append(rw.fields, raw)
		rw.order = append(rw.order, f.ID)
	}
	return nil
}

// utf8FieldMessage builds the Field message of a replaced column: same
// name and id, top level, nullable utf8, field metadata without the blob
// markers.
func utf8FieldMessage(f *Field) []byte {
	md := map[string][]byte{}
	for k, v := range f.Metadata {
		switch k {
		case "lance-encoding:blob":
			continue
		case "ARROW:extension:name", "ARROW:extension:metadata":
			if f.BlobVersion() == 2 || f.ExtensionName != "" {
				continue
			}
		}
		md[k] = v
	}
	b := pbuf(nil).str(2, f.Name).int32v(3, f.ID).int32v(4, -1).str(5, "string").varint(6, 1).varint(7, 2)
	return b.mapEntries(10, md)
}

// fragment writes the new data file of fragment fr, copies its deletion
// file and returns its DataFragment message and the data file name.
func (rw *rewriter) fragment(fr *Fragment, res *RewriteResult) ([]byte, []string, error) {
	d := rw.d
	where := func(file string, err error) error {
		return fmt.Errorf("lance: %s: fragment %d: %s: %w", d.dir, fr.ID, file, err)
	}
	srcs := make([]*srcFile, len(fr.Files))
	defer func() {
		for _, s := range srcs {
			if s != nil {
				s.close()
			}
		}
	}()
	var fp *FragmentPlan
	for i := range rw.plan.Fragments {
		if rw.plan.Fragments[i].ID == fr.ID {
			fp = &rw.plan.Fragments[i]
		}
	}
	if fp == nil {
		return nil, nil, where("", fmt.Errorf("fragment is not in the plan"))
	}
	// One new data file per file version of the fragment's source files
	// (one, unless Lance mixed versions in the fragment), in the order of
	// their first source file. fileGroup maps a source file to its group.
	var groups []outVersion
	fileGroup := make([]int, len(fr.Files))
	for i := range fr.Files {
		if fp.Transcode {
			groups = []outVersion{{0, 3, 2, 0}}
			break
		}
		df := &fr.Files[i]
		p, err := d.dataFilePath(df)
		if err != nil {
			return nil, nil, where(df.Path, err)
		}
		s, err := openSrcFile(rw.ctx, d, p, df.Path)
		if err != nil {
			return nil, nil, where(df.Path, err)
		}
		srcs[i] = s
		fv, _ := fileVersionName(uint32(s.major), uint32(s.minor))
		mv, _ := fileVersionName(df.Major, df.Minor)
		if fv != mv {
			return nil, nil, where(df.Path, fmt.Errorf("%w: footer says file version %d.%d, the manifest %d.%d", errCorrupt, s.major, s.minor, df.Major, df.Minor))
		}
		if s.numGlobal > 1 {
			return nil, nil, where(df.Path, fmt.Errorf("data files with %d global buffers are not supported", s.numGlobal))
		}
		ov := outVersion{s.major, s.minor, df.Major, df.Minor}
		fileGroup[i] = -1
		for g := range groups {
			if groups[g].name() == ov.name() {
				fileGroup[i] = g
			}
		}
		if fileGroup[i] < 0 {
			fileGroup[i] = len(groups)
			groups = append(groups, ov)
		}
	}
	if len(groups) == 0 {
		switch rw.plan.DataVersion {
		case "2.0":
			groups = []outVersion{{0, 3, 2, 0}}
		case "2.1":
			groups = []outVersion{{2, 1, 2, 1}}
		default:
			groups = []outVersion{{2, 2, 2, 2}}
		}
	}
	// The group of each output field: that of the source file storing it
	// (a replaced or re-described column stays with the file that held
	// it), else the first.
	groupOf := func(id int32) int {
		for i := range fr.Files {
			for _, fid := range fr.Files[i].Fields {
				if fid == id && !fp.Transcode {
					return fileGroup[i]
				}
			}
		}
		return 0
	}
	var decoded map[int32]arrow.Array
	if fp.Transcode {
		var err error
		if decoded, err = rw.d.readFragmentPhysical(rw.ctx, fr, rw.keptTop(fr)); err != nil {
			return nil, nil, where(fr.Files[0].Path, err)
		}
		defer func() {
			for _, a := range decoded {
				a.Release()
			}
		}()
	}
	lin, err := lineageColumns(fr, fp.Transcode)
	if err != nil {
		return nil, nil, where(fr.Files[0].Path, err)
	}
	used := make([]bool, len(groups))
	for _, id := range rw.order {
		used[groupOf(rw.top[id])] = true
	}
	linGroup := -1
	if len(lin) > 0 {
		linGroup = fileGroup[lin[0].file]
		used[linGroup] = true
	}
	used[0] = used[0] || !slices.Contains(used, true) // a fragment keeps a file
	msg := pbuf(nil).varint(1, fr.ID)
	var names []string
	for g, ov := range groups {
		if !used[g] {
			continue
		}
		label := ""
		if g > 0 {
			label = " at " + ov.name()
		}
		var gl []lineageColumn
		if g == linGroup {
			gl = lin
		}
		dfMsg, name, err := rw.fragmentFile(fr, fp, srcs, ov, label, func(id int32) bool { return groupOf(rw.top[id]) == g }, gl, decoded, res)
		if err != nil {
			return nil, nil, err
		}
		msg = msg.bytes(2, dfMsg)
		names = append(names, name)
	}
	if fr.Deletion != nil {
		dm, err := rw.copyDeletion(fr)
		if err != nil {
			return nil, nil, where(deletionFileName(fr), err)
		}
		msg = msg.bytes(3, dm)
	}
	msg = msg.varint(4, fr.PhysicalRows)
	msg, err = rw.lineageFields(fr, msg, lin)
	if err != nil {
		return nil, nil, where(strings.Join(names, ", "), err)
	}
	return msg, names, nil
}

// copyDeletion copies fragment fr's deletion file and returns its
// DeletionFile message.
func (rw *rewriter) copyDeletion(fr *Fragment) (pbuf, error) {
	del := fr.Deletion
	base, err := rw.d.basePath(del.BaseID, "_deletions")
	if err != nil {
		return nil, err
	}
	dn := deletionFileName(fr)
	if err := copyFile(rw.ctx, rw.d.st, joinPath(base, dn), filepath.Join(rw.dst, "_deletions", dn)); err != nil {
		return nil, err
	}
	dm := pbuf(nil)
	if del.Bitmap {
		dm = dm.varint(1, 1)
	}
	return dm.varint(2, del.ReadVersion).varint(3, del.ID).varint(4, del.NumDeleted), nil
}

// lineageFields appends fragment fr's row lineage fields to its
// DataFragment message msg. lin are the lineage columns copied into its
// data files.
func (rw *rewriter) lineageFields(fr *Fragment, msg pbuf, lin []lineageColumn) (pbuf, error) {
	// Row id and row version sequences stored inline are carried as they
	// are, and so are the markers of sequences spilled to data file
	// columns, whose columns were copied; external ones would name files
	// that are not copied.
	spilled := false
	err := wire.Walk(rw.rm.frags[fr.ID], func(f wire.Field) error {
		switch f.Num {
		case fragmentInlineRowIDs, fragmentInlineUpdatedAt, fragmentInlineCreatedAt:
			msg = msg.raw(f)
		case fragmentSpilledRowIDs, fragmentSpilledUpdatedAt, fragmentSpilledCreatedAt:
			msg = msg.raw(f)
			spilled = true
		case 6, 8, 10, 11:
			return fmt.Errorf("fragment field %d (external row id or version sequences, overlays) is not supported", f.Num)
		}
		return nil
	})
	if err == nil && spilled && len(lin) == 0 {
		err = fmt.Errorf("%w: the fragment's row lineage is spilled to data file columns, but no data file holds them", errCorrupt)
	}
	if err != nil {
		return nil, err
	}
	rw.spilled = rw.spilled || spilled
	return msg, nil
}

// Fields of DataFragment holding a fragment's row lineage: the sequences
// stored inline, and the (empty) markers of sequences spilled to data file
// columns.
const (
	fragmentInlineRowIDs     = 5
	fragmentInlineUpdatedAt  = 7
	fragmentInlineCreatedAt  = 9
	fragmentSpilledRowIDs    = 12
	fragmentSpilledUpdatedAt = 13
	fragmentSpilledCreatedAt = 14
)

// Field ids of the hidden data file columns that hold spilled row lineage:
// _rowid, _row_created_at_version and _row_last_updated_at_version.
const (
	lineageRowID     = -3
	lineageCreatedAt = -4
	lineageUpdatedAt = -5
)

// isLineageField tells whether id is one of the hidden row lineage columns.
func isLineageField(id int32) bool {
	return id == lineageRowID || id == lineageCreatedAt || id == lineageUpdatedAt
}

// lineageColumn is one hidden row lineage column of a fragment: its field
// id, the fragment's data file holding it and its column there.
type lineageColumn struct {
	id       int32
	file, ci int
}

// lineageColumns lists the row lineage columns of fr's data files. Lance
// spills lineage only to v2 files, so a transcoded (legacy) fragment has
// none; every column must lie in one file, as Lance writes them.
func lineageColumns(fr *Fragment, transcode bool) ([]lineageColumn, error) {
	var out []lineageColumn
	for i := range fr.Files {
		df := &fr.Files[i]
		for k, id := range df.Fields {
			if !isLineageField(id) || k >= len(df.ColumnIndices) || df.ColumnIndices[k] < 0 {
				continue
			}
			if transcode {
				return nil, fmt.Errorf("%w: row lineage columns in a legacy (0.1) fragment", errCorrupt)
			}
			for _, c := range out {
				if c.id == id {
					return nil, fmt.Errorf("%w: row lineage field %d stored twice", errCorrupt, id)
				}
			}
			if len(out) > 0 && out[0].file != i {
				return nil, fmt.Errorf("row lineage columns spread over several data files are not supported")
			}
			out = append(out, lineageColumn{id: id, file: i, ci: int(df.ColumnIndices[k])})
		}
	}
	return out, nil
}

// outVersion is the version of a new data file: the footer's and the
// manifest's numbers.
type outVersion struct {
	major, minor     uint16
	dfMajor, dfMinor uint32
}

func (v outVersion) name() string {
	n, _ := fileVersionName(v.dfMajor, v.dfMinor)
	return n
}

// fragmentFile writes one new data file of fragment fr at version ov, with
// the output fields that in selects, and returns its DataFile message and
// name. label tells the file's seeded name apart from the fragment's other
// files.
func (rw *rewriter) fragmentFile(fr *Fragment, fp *FragmentPlan, srcs []*srcFile, ov outVersion, label string, in func(id int32) bool, lin []lineageColumn, decoded map[int32]arrow.Array, res *RewriteResult) ([]byte, string, error) {
	d := rw.d
	where := func(file string, err error) error {
		return fmt.Errorf("lance: %s: fragment %d: %s: %w", d.dir, fr.ID, file, err)
	}
	major, minor := ov.major, ov.minor
	stem, err := randomFileStem(rw.seed, fmt.Sprintf("data file of fragment %d", fr.ID)+label)
	if err != nil {
		return nil, "", where("", err)
	}
	name := stem + ".lance"
	out := filepath.Join(rw.dst, "data", name)
	w, err := createFileWriter(out)
	if err != nil {
		return nil, "", where(name, err)
	}
	ok := false
	defer func() {
		if !ok {
			w.abort()
		}
	}()
	var outFields, outCols []uint64
	inFile := map[int32]bool{}
	for _, id := range rw.order {
		if err := rw.ctx.Err(); err != nil {
			return nil, "", err
		}
		if !in(id) {
			continue
		}
		if r := rw.replacedIDs[id]; r != nil {
			vals, valid, err := r.Values(rw.ctx, fr.ID, fr.PhysicalRows)
			if err != nil {
				return nil, "", where(name, fmt.Errorf("values of %q: %w", r.Column, err))
			}
			if uint64(len(vals)) != fr.PhysicalRows || uint64(len(valid)) != fr.PhysicalRows {
				return nil, "", where(name, fmt.Errorf("values of %q: %d values and %d validity flags for %d physical rows", r.Column, len(vals), len(valid), fr.PhysicalRows))
			}
			emit, done := w.pageWriter()
			if major == 0 {
				err = encodeUTF8Pages20(vals, valid, emit)
			} else {
				err = encodeUTF8Pages21(vals, valid, minor >= 2, emit)
			}
			if err != nil {
				return nil, "", where(name, fmt.Errorf("column %q: %w", r.Column, err))
			}
			done()
			outFields = append(outFields, uint64(int64(id)))
			outCols = append(outCols, uint64(len(w.cols)-1))
			inFile[rw.top[id]] = true
			continue
		}
		if h := rw.hooks[rw.top[id]]; h != nil {
			if id != rw.top[id] {
				continue
			}
			rows, side, err := h(fr.ID)
			if err == nil && uint64(len(rows)) != fr.PhysicalRows {
				err = fmt.Errorf("%d descriptors for %d rows", len(rows), fr.PhysicalRows)
			}
			if err == nil {
				err = w.writeBlobDescriptors(rows)
			}
			if err == nil && side != "" {
				err = copyTree(rw.ctx, LocalStorage{}, side, filepath.Join(rw.dst, "data", stem))
			}
			if err != nil {
				return nil, "", where(name, err)
			}
			outFields = append(outFields, uint64(int64(id)))
			outCols = append(outCols, uint64(len(w.cols)-1))
			inFile[id] = true
			continue
		}
		if fp.Transcode {
			a := decoded[id]
			if a == nil {
				continue // a child (written with its parent) or a field without data
			}
			if err := w.writeField20(rw.d.fieldByID(id), a, &outFields, &outCols); err != nil {
				return nil, "", where(name, err)
			}
			inFile[id] = true
			continue
		}
		src, ci := -1, -1
		for i := range fr.Files {
			df := &fr.Files[i]
			for k, fid := range df.Fields {
				if fid == id && df.ColumnIndices[k] >= 0 && src < 0 {
					src, ci = i, int(df.ColumnIndices[k])
				}
			}
		}
		if src < 0 {
			continue
		}
		if ci >= len(srcs[src].cols) {
			return nil, "", where(fr.Files[src].Path, fmt.Errorf("%w: column index %d of %d", errCorrupt, ci, len(srcs[src].cols)))
		}
		if err := w.copyColumn(rw.ctx, srcs[src], ci); err != nil {
			return nil, "", where(fr.Files[src].Path, err)
		}
		outFields = append(outFields, uint64(int64(id)))
		outCols = append(outCols, uint64(len(w.cols)-1))
		inFile[rw.top[id]] = true
	}
	// The file's own schema: the output fields of the top-level fields it
	// stores, then the row lineage fields as the source file declares them.
	schema := pbuf(nil)
	for k, id := range rw.order {
		if inFile[rw.top[id]] {
			schema = schema.bytes(1, rw.fields[k])
		}
	}
	linFields, err := rw.copyLineage(w, srcs, fr, lin, &outFields, &outCols)
	if err != nil {
		return nil, "", where(name, err)
	}
	for _, f := range linFields {
		schema = schema.bytes(1, f)
	}
	schema = schema.mapEntries(5, rw.schemaMeta)
	desc := pbuf(nil).bytes(1, schema).varint(2, fr.PhysicalRows)
	size, err := w.finish(desc, major, minor)
	if err != nil {
		return nil, "", where(name, err)
	}
	ok = true
	res.CopiedBytes += w.copied
	res.Bytes += size
	rw.versions[ov.name()] = true
	dfMsg := pbuf(nil).str(1, name).packed(2, outFields).packed(3, outCols).varint(4, uint64(ov.dfMajor)).varint(5, uint64(ov.dfMinor)).varint(6, size)
	return dfMsg, name, nil
}

// copyLineage copies the row lineage columns lin of fragment fr page for
// page into w, appending their field ids and columns, and returns their
// Field messages for the file's schema.
func (rw *rewriter) copyLineage(w *fileWriter, srcs []*srcFile, fr *Fragment, lin []lineageColumn, outFields, outCols *[]uint64) ([][]byte, error) {
	var fields [][]byte
	for _, c := range lin {
		src := srcs[c.file]
		if c.ci >= len(src.cols) {
			return nil, fmt.Errorf("%s: %w: column index %d of %d", fr.Files[c.file].Path, errCorrupt, c.ci, len(src.cols))
		}
		if err := w.copyColumn(rw.ctx, src, c.ci); err != nil {
			return nil, fmt.Errorf("%s: row lineage field %d: %w", fr.Files[c.file].Path, c.id, err)
		}
		*outFields = append(*outFields, uint64(int64(c.id)))
		*outCols = append(*outCols, uint64(len(w.cols)-1))
		fields = append(fields, lineageFieldMessage(c.id))
	}
	return fields, nil
}

// lineageFieldMessage is the Field message of a row lineage column in a
// data file's own schema: a top-level non-null uint64 leaf under its name
// and hidden field id, as Lance writes it when compacting.
func lineageFieldMessage(id int32) []byte {
	name := map[int32]string{lineageRowID: "_rowid", lineageCreatedAt: "_row_created_at_version", lineageUpdatedAt: "_row_last_updated_at_version"}[id]
	return pbuf(nil).str(fieldName, name).int32v(fieldID, id).int32v(fieldParentID, -1).str(fieldLogicalType, "uint64").varint(7, 1)
}

// rewriteIndexMeta sets the dataset version of an IndexMetadata message to
// 1, the only version of the new dataset, keeping every other field.
func rewriteIndexMeta(raw []byte) []byte {
	out := pbuf(nil)
	_ = wire.Walk(raw, func(f wire.Field) error {
		if f.Num == indexDatasetVersion {
			out = out.varint(indexDatasetVersion, 1)
		} else {
			out = out.raw(f)
		}
		return nil
	})
	return out
}

// managedBlobsKey is the schema metadata key with which Lance 14 asks for
// managed blob storage.
const managedBlobsKey = "lance.blob.managed"

// writerLibrary is the writer recorded in manifests, with
// RewriteOptions.WriterVersion.
const writerLibrary = "bpconvert"

// commit writes the transaction file and the manifest of version 1.
func (rw *rewriter) commit(frags, indices [][]byte, deletions bool) error {
	version, readVersion := uint64(1), uint64(0)
	if rw.ext != nil {
		readVersion = rw.ext.TableVersion
		version = readVersion + 1
	}
	uuid, err := randomUUID(rw.seed, fmt.Sprintf("transaction of version %d", version))
	if version == 1 {
		uuid, err = randomUUID(rw.seed, "transaction")
	}
	if err != nil {
		return err
	}
	txnName := fmt.Sprintf("%d-%s.txn", readVersion, uuid)
	txn := pbuf(nil).varint(1, readVersion).str(2, uuid)
	if rw.ext != nil {
		txn = append(txn, rw.extOp...)
	} else {
		over := pbuf(nil)
		for _, f := range frags {
			over = over.bytes(1, f)
		}
		for _, f := range rw.fields {
			over = over.bytes(2, f)
		}
		over = over.mapEntries(3, rw.schemaMeta)
		txn = txn.bytes(102, over)
	}
	if err := writeFileSync(filepath.Join(rw.dst, "_transactions", txnName), txn); err != nil {
		return err
	}
	var file []byte
	var indexPos *uint64
	if len(indices) > 0 {
		sec := pbuf(nil)
		for _, ix := range indices {
			sec = sec.bytes(1, ix)
		}
		v := uint64(len(file))
		indexPos = &v
		file = binary.LittleEndian.AppendUint32(file, uint32(len(sec)))
		file = append(file, sec...)
	}
	var flags uint64
	if deletions {
		flags |= flagDeletionFiles
	}
	if rw.d.manifest.ReaderFeatureFlags&flagStableRowIDs != 0 {
		flags |= flagStableRowIDs
	}
	if len(rw.versions) > 1 {
		flags |= flagMixedFileVersions
	}
	if rw.spilled {
		flags |= flagSpilledRowLineage
	}
	if rw.ext != nil {
		// The carried fragments keep what they need.
		flags |= rw.ext.table.ReaderFeatureFlags & (flagMixedFileVersions | flagSpilledRowLineage | flagDeletionFiles)
	}
	// Table configuration concerns writers only (Lance sets the bit in
	// the writer flags alone).
	writerFlags := flags
	if len(rw.rm.config) > 0 {
		writerFlags |= flagTableConfig
	}
	var maxID uint64
	for _, fr := range rw.d.manifest.Fragments {
		maxID = max(maxID, fr.ID)
	}
	if rw.rm.maxFragmentID != nil {
		maxID = max(maxID, *rw.rm.maxFragmentID)
	}
	if rw.ext != nil && rw.ext.tableRaw.maxFragmentID != nil {
		maxID = max(maxID, *rw.ext.tableRaw.maxFragmentID)
	}
	now := rw.time
	if now.IsZero() {
		now = time.Now()
	}
	m := pbuf(nil)
	for _, f := range rw.fields {
		m = m.bytes(1, f)
	}
	for _, f := range frags {
		m = m.bytes(2, f)
	}
	m = m.varint(3, version).mapEntries(5, rw.schemaMeta)
	if indexPos != nil {
		m = m.varint(6, *indexPos)
	}
	m = m.bytes(7, pbuf(nil).varint(1, uint64(now.Unix())).varint(2, uint64(now.Nanosecond())))
	m = m.varint(9, flags).varint(10, writerFlags)
	if len(frags) > 0 || rw.rm.maxFragmentID != nil || rw.ext != nil && rw.ext.tableRaw.maxFragmentID != nil {
		m = m.varint(11, maxID)
	}
	m = m.str(12, txnName)
	m = m.bytes(13, pbuf(nil).str(1, writerLibrary).str(2, rw.writerVersion))
	if flags&flagStableRowIDs != 0 {
		m = m.varint(14, rw.rm.nextRowID)
	}
	m = m.bytes(15, pbuf(nil).str(1, "lance").str(2, rw.plan.DataVersion))
	for _, e := range rw.rm.config {
		m = m.bytes(16, e)
	}
	for _, e := range rw.rm.tableMeta {
		m = m.bytes(19, e)
	}
	pos := uint64(len(file))
	file = binary.LittleEndian.AppendUint32(file, uint32(len(m)))
	file = append(file, m...)
	file = binary.LittleEndian.AppendUint64(file, pos)
	file = binary.LittleEndian.AppendUint16(file, 0)
	file = binary.LittleEndian.AppendUint16(file, 2)
	file = append(file, "LANC"...)
	name := fmt.Sprintf("%020d.manifest", ^uint64(0)-version)
	if err := writeFileSync(filepath.Join(rw.dst, "_versions", name), file); err != nil {
		return err
	}
	if rw.ext != nil {
		return nil // the table's tags stay as they are
	}
	return rw.writeTags(len(file))
}

// writeFileSync creates path with data and syncs it.
func writeFileSync(path string, data []byte) error {
	return atomicfile.WriteNew(path, bytes.NewReader(data))
}

// copyFile copies the file at the location src of st to the new file dst
// and syncs it, reading it front to back.
func copyFile(ctx context.Context, st Storage, src, dst string) error {
	in, err := st.Open(ctx, src)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.WriteNew(dst, io.NewSectionReader(in, 0, in.Size()))
}

// copyTree copies every file below the directory src of st to dst (which
// is created, as are its subdirectories).
func copyTree(ctx context.Context, st Storage, src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return st.List(ctx, src, func(e FileInfo) error {
		target := filepath.Join(dst, filepath.FromSlash(e.Name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return copyFile(ctx, st, joinPath(src, e.Name), target)
	})
}

// hasFiles reports whether a file lies below the directory loc.
func (d *Dataset) hasFiles(loc string) bool {
	found := errors.New("found")
	return errors.Is(d.listFiles(d.ctx, loc, func(FileInfo) error { return found }), found)
}

// syncDir syncs a directory so that the entries created in it persist.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
