// Package dsverify checks a converted dataset as a whole: its blob packs
// (every shard, CRC and manifest, as packcore.Verify does), every table the
// converters write (samples.parquet, rewritten parquet tables, LeRobot
// tables and video_index.json, Lance datasets) and every zip:// reference
// they hold: that it parses, names a shard that exists under the dataset
// root and a member that shard holds. With a source to compare against, it
// also proves that every payload of the source equals the member that holds
// it, byte for byte, so that the source may be deleted.
//
// The comparison with a source is each converter's: a Comparer in a
// package of the converter's directory (convert/wds/wdsverify,
// convert/parquet/parquetverify, convert/lerobot/lerobotverify,
// convert/lance/lanceverify) that reads the source format independently of
// the converter, and receives a Check, whose exported methods are what the
// comparisons share (check.go): the dataset and the source, opened once;
// the tables' bpconvert records and strings; pack sets; the report; and the
// readers that compare a source's payloads with members (tar shards,
// parquet and Arrow columns, Lance columns). This package compares on its
// own the datasets no converter of this module wrote: packs alone (bpconvert
// pack, blobpack 0.2.0) and blobpack 0.2.0's parquet and Lance outputs.
//
// It is not a repair tool and writes nothing; it reads every shard once and
// every table's string columns once (a comparison may read a table again:
// WebDataset's reads the samples table's keys and inline cells).
package dsverify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/srctree"
)

// Problem is one thing wrong with a dataset. Table, Row and Column locate
// it when it is about a table cell (Row is -1 otherwise).
type Problem struct {
	Table  string `json:"table,omitempty"`
	Row    int64  `json:"row"`
	Column string `json:"column,omitempty"`
	Ref    string `json:"ref,omitempty"`
	Reason string `json:"reason"`
}

// String renders a problem on one line: table, row, column, reference,
// reason.
func (p Problem) String() string {
	var b strings.Builder
	if p.Table != "" {
		b.WriteString(p.Table)
		if p.Row >= 0 {
			fmt.Fprintf(&b, ": row %d", p.Row)
		}
		if p.Column != "" {
			fmt.Fprintf(&b, ": column %s", p.Column)
		}
		b.WriteString(": ")
	}
	if p.Ref != "" {
		fmt.Fprintf(&b, "%s: ", p.Ref)
	}
	b.WriteString(p.Reason)
	return b.String()
}

// Pack is the check of one pack directory.
type Pack struct {
	// Dir is the pack directory relative to the dataset root ("." for the
	// root itself).
	Dir string `json:"dir"`
	*packcore.VerifyReport
}

// Table is one table read for references.
type Table struct {
	// Path is the table relative to the dataset root.
	Path string `json:"path"`
	// Format is parquet, lance or json.
	Format string `json:"format"`
	Rows   int64  `json:"rows"`
	// Refs counts the references found (and checked).
	Refs int64 `json:"refs"`
}

// Against is the outcome of a comparison with the source.
type Against struct {
	Source string `json:"source"`
	// Format is the source format recognised: webdataset, parquet, lance
	// or lerobot.
	Format string `json:"format"`
	// Payloads counts the source payloads compared, Bytes their size.
	Payloads int64 `json:"payloads"`
	Bytes    int64 `json:"bytes"`
	// Inline counts payloads compared with a table cell instead of a member.
	Inline int64 `json:"inline"`
	// KeptURIs counts the external blobs --external keep left as their URI
	// in the table, compared with the source's URI instead of a member.
	KeptURIs int64 `json:"kept_uris"`
	// FetchedURIs counts the remote media values convert-parquet
	// --fetch-remote packed: their members are read back whole, not
	// compared with the remote files.
	FetchedURIs int64 `json:"fetched_uris,omitempty"`
	// Mismatches counts payloads that differ or are missing.
	Mismatches int64 `json:"mismatches"`
	// NotCompared counts blobs that have no byte-identical counterpart in
	// the source: LeRobot episode containers cut from a camera file.
	NotCompared int64 `json:"not_compared"`
	// Notes say what the comparison had to assume (a dataset converted
	// by blobpack records no source version, for example).
	Notes []string `json:"notes,omitempty"`
}

// Report lists what was checked and every problem found.
type Report struct {
	Root    string   `json:"root"`
	Packs   []Pack   `json:"packs"`
	Tables  []Table  `json:"tables"`
	Shards  int      `json:"shards"`
	Members int      `json:"members"`
	Bytes   int64    `json:"bytes"`
	Refs    int64    `json:"refs"`
	Against *Against `json:"against,omitempty"`
	// RefBases lists, sorted, what references that name their shards by
	// an absolute path or a URL (written with --ref-base) call the dataset
	// root; each such reference was resolved against Root, by the pack
	// directory and shard its path ends with.
	RefBases []string `json:"ref_bases,omitempty"`
	// Problems lists every problem, packs' first.
	Problems []Problem `json:"problems"`
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Options tunes Verify.
type Options struct {
	// Against is a source to compare every payload with ("" compares
	// nothing): the WebDataset shards (a file, directory or brace pattern),
	// the parquet, Lance or LeRobot dataset the destination was converted
	// from.
	Against string
	// MaxProblems bounds the problems listed (0 means 10,000); the counts
	// keep counting.
	MaxProblems int
	// Stats, when set, counts the requests and bytes that reading an
	// s3:// dataset or source took.
	Stats *objstore.Stats
	// Comparers are the converters' comparisons with a source that
	// Against tries (the CLI passes each converter's, from convert/formats);
	// a dataset none of them claims is compared only if packs alone were
	// made from the source or blobpack 0.2.0 converted it.
	Comparers []Comparer
}

// ErrNothingToVerify is returned for a directory that holds neither packs
// nor tables.
var ErrNothingToVerify = errors.New("no pack shards and no tables")

// ErrTableNotDataset is returned for a root that is one table of a dataset
// (a parquet, Arrow or JSON table file, or a Lance dataset's directory):
// its references name shards relative to the dataset that holds it, so
// verify is given that dataset instead.
var ErrTableNotDataset = errors.New("a table, not a dataset")

// refuseTable returns the ErrTableNotDataset error for root, naming the
// directory that holds it.
func refuseTable(root, parent string) error {
	return fmt.Errorf("%s is %w: its references name shards of the dataset that holds it; verify that dataset (bpconvert verify %s)", root, ErrTableNotDataset, parent)
}

// Verify checks the dataset at root (a converted dataset's root, any
// directory holding packs and tables, a pack directory, or a single shard).
// It reports every problem it finds; the error is for failures to run at
// all (an unreadable root, a cancelled context).
func Verify(ctx context.Context, root string, opts Options) (*Report, error) {
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = 10000
	}
	rep := &Report{Root: root, Packs: []Pack{}, Tables: []Table{}, Problems: []Problem{}}
	v := &Check{ctx: ctx, root: root, rep: rep, opts: opts, sets: map[string]*setEntry{}, records: map[string]tableRecord{}}
	defer v.close()
	out, file, err := openPlace(ctx, root, v.storeOptions())
	if err != nil {
		return nil, err
	}
	v.out = out
	if file != "" {
		if tableFormat(file) != "" {
			return nil, refuseTable(root, out.t.Location())
		}
		if !strings.HasSuffix(file, ".zip") && out.t.Remote() {
			// an object of another kind, beside the prefix root names
			return nil, fmt.Errorf("%s: %w", root, ErrNothingToVerify)
		}
		// A single shard: the pack check alone.
		pr, err := v.verifyPack(file)
		if err != nil {
			return nil, err
		}
		v.addPack(file, pr)
		return rep, nil
	}
	if strings.HasSuffix(path.Base(filepath.ToSlash(out.t.Location())), ".lance") {
		if isLance, _ := out.t.IsDir("_versions"); isLance {
			return nil, refuseTable(root, out.parent())
		}
	}
	packDirs, tables, err := v.discover()
	if err != nil {
		return nil, err
	}
	if len(packDirs) == 0 && len(tables) == 0 {
		return nil, fmt.Errorf("%s: %w", root, ErrNothingToVerify)
	}
	v.packDirs = packDirs
	for _, d := range packDirs {
		pr, err := v.verifyPack(d)
		if err != nil {
			return nil, err
		}
		v.addPack(d, pr)
	}
	for _, t := range tables {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := v.table(t); err != nil {
			return nil, err
		}
	}
	if opts.Against != "" {
		if err := v.against(opts.Against); err != nil {
			return nil, err
		}
	}
	rep.RefBases = sortedSet(v.bases)
	return rep, nil
}

// storeOptions are the options a location in object storage is opened
// with.
func (v *Check) storeOptions() objstore.Options { return objstore.Options{Stats: v.opts.Stats} }

// verifyPack checks the pack directory, or the single shard, rel of the
// dataset: read directly on this machine, streamed from a bucket.
func (v *Check) verifyPack(rel string) (*packcore.VerifyReport, error) {
	if st, key := v.out.storeKey(rel); st != nil {
		return packcore.VerifyIn(v.ctx, st, key)
	}
	return packcore.Verify(v.ctx, v.out.t.Path(rel))
}

// Check is one run of Verify: the dataset, its packs and tables, the source
// compared with and the report. A Comparer receives it, and compares the
// dataset with its source through its exported methods.
type Check struct {
	ctx  context.Context
	root string
	rep  *Report
	opts Options
	// sets caches opened pack directories by their path relative to root.
	sets map[string]*setEntry
	// wds is what the samples table records, for its reference check.
	wds *wdsTable
	// records holds the bpconvert record of every table that has one (a
	// Lance table's only when it names the columns extracted), by path
	// relative to root.
	records map[string]tableRecord
	// plainLance lists the Lance tables under root that carry no
	// bpconvert record (blobpack convert-lance writes such tables).
	plainLance []string
	// out is the dataset verified, opened once; objects holds every file
	// under it (but inside hidden directories), by path relative to root,
	// from the one walk (discover).
	out     place
	objects map[string]bool
	// src is the source compared with (Options.Against), opened once when
	// first needed (srcOpened); srcFile is its name in src's tree when it
	// is a single file, srcErr the failure to open it.
	src       place
	srcFile   string
	srcErr    error
	srcOpened bool
	// packDirs are the pack directories found under root; bases collects
	// what absolute and URL references call root (see shardRel).
	packDirs []string
	bases    map[string]bool
	// isLeRobot caches whether the --against source is a LeRobot dataset
	// (nil until asked).
	isLeRobot *bool
}

type setEntry struct {
	set    *packcore.Set
	err    error
	shards map[string]bool
}

func (v *Check) close() {
	for _, e := range v.sets {
		if e.set != nil {
			e.set.Close()
		}
	}
}

// problem records a problem, up to the limit.
func (v *Check) problem(p Problem) {
	if len(v.rep.Problems) < v.opts.MaxProblems {
		v.rep.Problems = append(v.rep.Problems, p)
	} else if len(v.rep.Problems) == v.opts.MaxProblems {
		v.rep.Problems = append(v.rep.Problems, Problem{Row: -1, Reason: "more problems not listed"})
	}
}

func (v *Check) addPack(dir string, pr *packcore.VerifyReport) {
	v.rep.Packs = append(v.rep.Packs, Pack{Dir: dir, VerifyReport: pr})
	v.rep.Shards += pr.Shards
	v.rep.Members += pr.Members
	v.rep.Bytes += pr.Bytes
	for _, p := range pr.Problems {
		if dir != "." && !strings.HasSuffix(dir, ".zip") {
			p = dir + "/" + p
		}
		v.problem(Problem{Row: -1, Reason: p})
	}
}

// set returns the pack set of a directory relative to root.
func (v *Check) set(dir string) *setEntry {
	if e, ok := v.sets[dir]; ok {
		return e
	}
	e := &setEntry{shards: map[string]bool{}}
	if st, key := v.out.storeKey(dir); st != nil {
		e.set, e.err = packcore.OpenSetIn(v.ctx, st, key, packcore.SetOptions{RefBase: "."})
	} else {
		e.set, e.err = packcore.OpenSet(v.out.t.Path(dir), packcore.SetOptions{RefBase: ".", SkipDirs: true})
	}
	if e.set != nil {
		for _, s := range e.set.Shards() {
			e.shards[s] = true
		}
	}
	v.sets[dir] = e
	return e
}

// resolve checks one reference and returns the reason it does not resolve
// ("" when it does).
func (v *Check) resolve(ref string) string {
	key, shardPath, err := packcore.ParseRef(ref)
	if err != nil {
		return "not a valid reference (want zip://KEY::DIR/pack-NNNN.zip)"
	}
	shardPath, ok := v.shardRel(shardPath)
	if !ok {
		return fmt.Sprintf("shard path %s ends with no pack directory of this dataset (%s): an absolute or URL reference is resolved against the dataset verified by the pack directory and shard its path ends with", shardPath, strings.Join(v.packDirs, ", "))
	}
	if strings.HasPrefix(shardPath, "/") || path.Clean(shardPath) != shardPath || shardPath == ".." || strings.HasPrefix(shardPath, "../") {
		return fmt.Sprintf("shard path %q is not a clean path inside the dataset", shardPath)
	}
	dir, shard := path.Split(shardPath)
	dir = packcore.CleanRefBase(dir)
	if dir == "" {
		dir = "."
	}
	if !v.objects[shardPath] {
		return fmt.Sprintf("shard %s does not exist", shardPath)
	}
	e := v.set(dir)
	if e.err != nil {
		return fmt.Sprintf("pack directory %s cannot be read: %v", dir, e.err)
	}
	if !e.shards[shard] {
		return fmt.Sprintf("shard %s is not a pack shard", shardPath)
	}
	// The member of the shard the reference names, even where another
	// shard holds the key too (the pack check reports that key).
	if _, err := e.set.Stat(packcore.FormatRef(key, shard)); err == nil {
		return ""
	}
	if m, err := e.set.Stat(key); err == nil {
		return fmt.Sprintf("member %q is in %s, not in %s", key, path.Join(path.Dir(shardPath), m.Shard), shardPath)
	}
	return fmt.Sprintf("member %q is not in %s", key, shardPath)
}

// shardRel returns the shard path, relative to root, of a reference's
// shard path: the path itself when it is in a pack directory of the
// dataset; for an absolute path, a URL or another relative path (a
// reference written with --ref-base: /data/ds/media/pack-0000.zip,
// ../ds/media/pack-0000.zip), the pack directory of the dataset and the
// shard its path ends with (the deepest pack directory that fits), the
// part before them being what the reference calls the dataset root, which
// is recorded. ok is false when no pack directory fits an absolute path or
// a URL; a relative path that none fits is returned as it is.
func (v *Check) shardRel(shardPath string) (string, bool) {
	_, _, isURL := packcore.SplitURL(shardPath)
	dir, file := path.Split(shardPath)
	dir = packcore.CleanRefBase(dir)
	relative := !isURL && !strings.HasPrefix(shardPath, "/")
	if relative && slices.Contains(v.packDirs, cmp.Or(dir, ".")) {
		return shardPath, true
	}
	best, base := "", ""
	for _, pd := range v.packDirs {
		var b string
		switch {
		case pd == "." || pd == "":
			b = dir
		case strings.HasSuffix(dir, "/"+pd):
			b = strings.TrimSuffix(dir, "/"+pd)
		default:
			continue
		}
		if best == "" || best == "." || strings.Count(pd, "/") > strings.Count(best, "/") {
			best, base = pd, b
		}
	}
	if relative && (best == "" || best == "." || file == "") {
		// relative to the dataset root, checked as it is
		return shardPath, true
	}
	if best == "" || file == "" {
		return shardPath, false
	}
	if v.bases == nil {
		v.bases = map[string]bool{}
	}
	v.bases[base] = true
	if best == "." {
		return file, true
	}
	return path.Join(best, file), true
}

// tableRecord is a table's bpconvert record, with the table's format.
type tableRecord struct {
	format string // parquet, arrow or lance
	text   string
}

// tableFile is a table found under the root.
type tableFile struct {
	rel    string // slash-separated, relative to root
	format string // parquet, lance, json, jsonl
}

// tableFormatOf returns the format of the table at rel: lance for a
// directory named like a Lance dataset, else as tableFormat says.
func tableFormatOf(rel string) string {
	if strings.HasSuffix(rel, ".lance") {
		return "lance"
	}
	return tableFormat(path.Base(rel))
}

// tableFormat returns the format of a table file by its name (parquet,
// arrow, json or jsonl; a pack manifest is no table), or "" for a file that
// is not a table.
func tableFormat(name string) string {
	switch {
	case strings.HasSuffix(name, ".parquet"):
		return "parquet"
	case strings.HasSuffix(name, ".arrow"):
		return "arrow"
	case strings.HasSuffix(name, ".json") && name != packcore.ManifestName:
		return "json"
	case strings.HasSuffix(name, ".jsonl"):
		return "jsonl"
	}
	return ""
}

// discover lists the pack directories and tables under the dataset root
// with one walk of its tree, and records every file for resolve. Hidden
// entries (staging directories, the run record) are skipped, and so is the
// inside of Lance datasets and of directories named like shards (the pack
// check reports those). A pack directory is one that holds an entry named
// like a shard, whatever its type.
func (v *Check) discover() (packDirs []string, tables []tableFile, err error) {
	v.objects = map[string]bool{}
	if v.out.t.Empty() {
		return nil, nil, nil // a prefix in a bucket with nothing under it
	}
	dirs := map[string]bool{}
	lances := map[string]bool{}
	err = v.out.t.Walk(v.ctx, "", func(e srctree.Entry) error {
		rel := e.Name
		if rel == "." {
			return nil
		}
		isDir := e.Mode.IsDir()
		if !isDir {
			v.objects[rel] = true
		}
		segs := strings.Split(rel, "/")
		// The directories above a file (in a bucket, where none is walked
		// on its own).
		for i, seg := range segs[:len(segs)-1] {
			if strings.HasPrefix(seg, ".") {
				return nil
			}
			if strings.HasSuffix(seg, ".lance") {
				lances[strings.Join(segs[:i+1], "/")] = true
				return nil
			}
		}
		name := segs[len(segs)-1]
		switch {
		case strings.HasPrefix(name, "."):
			if isDir {
				return fs.SkipDir
			}
		case isDir && strings.HasSuffix(name, ".lance"):
			lances[rel] = true
			return fs.SkipDir
		case strings.HasSuffix(name, ".zip"):
			dirs[path.Dir(rel)] = true
			if isDir {
				// named like a shard: the pack check reports it
				v.objects[rel] = true
				return fs.SkipDir
			}
		case !isDir:
			if format := tableFormat(name); format != "" {
				tables = append(tables, tableFile{rel, format})
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, name := range sortedSet(lances) {
		tables = append(tables, tableFile{name, "lance"})
	}
	packDirs = sortedSet(dirs)
	sort.Slice(tables, func(i, j int) bool { return tables[i].rel < tables[j].rel })
	return packDirs, tables, nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
