package convert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/stage"
)

// Base is the committed output an append extends: its record, the shards
// its pack directory holds (which new shards are numbered after, and whose
// keys a new member may not take) and what the append's sources hold that
// it has converted already. Target.ReadBase makes it before anything is
// planned; the converter reads the output's tables through it (Open,
// ReadFile, List) and hands it to Begin in OutputOptions.Base.
type Base struct {
	// Dest is the destination holding the committed output.
	Dest Dest
	// Record is the committed record.
	Record *Record
	// Shards are the committed shards of the pack directory, in order.
	// Their SHA256 is "" when the output has no manifest.
	Shards []packcore.ShardInfo
	// Diff is what the sources hold compared with Record (see Sources).
	Diff SourceDiff

	packDir string
	held    map[string]bool // the paths of Diff.Kept and Diff.Removed (Holds)
	raw     []byte          // the committed record's bytes
	etag    string          // its ETag in object storage
}

// SourceDiff sorts a run's source files against a committed record: New
// ones to convert, Kept ones the output holds already (unchanged: same
// size and modification time or content tag), Removed ones it holds that
// have disappeared.
type SourceDiff struct {
	New, Kept, Removed []SourceFile
}

// Bytes sums the sizes of files.
func Bytes(files []SourceFile) int64 {
	var n int64
	for _, f := range files {
		n += f.Size
	}
	return n
}

// errStdinAppend refuses an append whose sources cannot be identified.
var errStdinAppend = errors.New("--append needs sources it can identify (files or objects): standard input cannot tell what is new")

// ErrBaseMoved is matched when the committed output an append planned to
// extend was replaced (another run committed) before the append began or
// committed: a rerun plans the append again.
var ErrBaseMoved = errors.New("another run committed to the destination since this run planned its append")

// ReadBase reads the committed output an append (Target.Append) extends; nil
// when the destination holds none, in which case the append converts
// everything as a run without --append does. packDir is the run's pack
// directory ("" for MediaDir). A committed output of another command, or
// made with other options that shape the output, is refused (exit 2).
func (t Target) ReadBase(ctx context.Context, packDir string) (*Base, error) {
	if !t.Append {
		return nil, nil
	}
	if !t.Part.Whole() {
		return nil, &UsageError{Err: errors.New("--append and --part do not go together: an append is one process"),
			Hint: "append with one process (it reads only the new sources), or convert into a new destination with --part"}
	}
	if packDir == "" {
		packDir = MediaDir
	}
	raw, etag, err := t.Dest.readRecordRaw(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	old, err := decodeRecord(raw, t.Dest.Location()+"/"+RecordName)
	if err != nil {
		return nil, err
	}
	if t.Record != nil {
		if diff := t.Record.optionsDiff(old); len(diff) > 0 {
			return nil, &UsageError{Err: fmt.Errorf("%s: %w: %s", t.Dest.Location(), ErrDifferentRun, strings.Join(diff, "; ")),
				Hint: "an append takes the command and options of the conversion it extends; convert into a new destination to change them"}
		}
	}
	b := &Base{Dest: t.Dest, Record: old, packDir: packDir, raw: raw, etag: etag}
	if b.Shards, err = b.committedShards(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// AppendBase is, for an append (t.Append) of the run t.Record records into
// a destination that holds a committed output, that output (ReadBase) with
// the run's sources sorted against its record as growth says: by whole
// files (Base.Sources: a changed file refused, one gone too unless
// allowRemoved), inside files (Base.Grown), or not at all (the converter
// sorts its own units); t.Record is made the extended output's record
// (Base.Extend). A real run (not dryRun) first finishes an append's commit
// that a stopped run began (Recover). It is nil when there is nothing to
// extend: no append, no record, or a destination without a committed
// output (an append converts it whole). packDir is the run's pack
// directory ("" for the default).
func (t Target) AppendBase(ctx context.Context, packDir string, growth Growth, allowRemoved, dryRun bool) (*Base, error) {
	if !t.Append || t.Dest == nil || t.Record == nil {
		return nil, nil
	}
	if !dryRun {
		if _, err := t.Recover(ctx); err != nil {
			return nil, err
		}
	}
	base, err := t.ReadBase(ctx, packDir)
	if err != nil || base == nil {
		return nil, err
	}
	switch growth {
	case GrowsByFiles:
		if _, err := base.Sources(t.Record.Sources, allowRemoved); err != nil {
			return nil, err
		}
		base.Extend(t.Record)
	case GrowsInFiles:
		// The record's files still tell whether anything is new: none
		// changed or added is already done.
		base.Extend(t.Record)
		base.Grown(t.Record.Sources)
	default:
		base.Extend(t.Record)
	}
	return base, nil
}

// Recover finishes the commit of an append that was stopped after it had
// begun to move its files into place (a kill, a lost connection), so that
// the destination holds one committed output before anything is planned.
// It reports whether there was one to finish.
func (t Target) Recover(ctx context.Context) (bool, error) {
	if !t.Append || !t.Part.Whole() {
		return false, nil
	}
	return t.Dest.recover(ctx)
}

// Sources sorts the files cur that a run reads against the committed
// record (see SourceDiff), keeps the result in b.Diff and returns it. A
// file the record holds that has changed since is an *InputError (exit 3):
// an append adds rows, it never replaces them; so is one that has
// disappeared, unless allowRemoved.
func (b *Base) Sources(cur []SourceFile, allowRemoved bool) (SourceDiff, error) {
	held := map[string]SourceFile{}
	for _, s := range b.Record.Sources {
		held[s.Path] = s
	}
	var d SourceDiff
	for _, s := range cur {
		old, ok := held[s.Path]
		delete(held, s.Path)
		switch {
		case !ok:
			d.New = append(d.New, s)
		case sameSource(old, s):
			d.Kept = append(d.Kept, s)
		default:
			e := Invalid("append", s.Path, fmt.Errorf("changed since %s converted it (%d bytes now, %d then; modified %s now, %s then): an append adds new source files, it does not replace what the output holds",
				b.Dest.Location(), s.Size, old.Size, s.ModTime, old.ModTime))
			e.Hint = "convert the changed sources into a new destination (or remove this one and convert again)"
			return d, e
		}
	}
	for _, p := range slices.Sorted(maps.Keys(held)) {
		if !allowRemoved {
			e := Invalid("append", p, fmt.Errorf("converted into %s earlier and gone from the sources now", b.Dest.Location()))
			e.Hint = "add --allow-removed to keep its rows and append the new sources"
			return d, e
		}
		d.Removed = append(d.Removed, held[p])
	}
	b.Diff = d
	return d, nil
}

// Grown sorts the files cur that a run reads against the committed record
// for a converter whose sources grow in place (GrowsInFiles: LeRobot writes
// new episodes into the files that hold earlier ones as often as into new
// files), keeps the result in b.Diff and returns it: New the added or
// changed files, Kept the unchanged ones. Nothing is refused here: the
// converter compares its own units inside a changed file, and refuses one
// that disappeared while it held converted units.
func (b *Base) Grown(cur []SourceFile) SourceDiff {
	held := make(map[string]SourceFile, len(b.Record.Sources))
	for _, f := range b.Record.Sources {
		held[f.Path] = f
	}
	var d SourceDiff
	for _, f := range cur {
		if old, ok := held[f.Path]; ok && sameSource(old, f) {
			d.Kept = append(d.Kept, f)
		} else {
			d.New = append(d.New, f)
		}
	}
	b.Diff = d
	return d
}

// sameSource reports whether a source file is the one a record holds:
// the same size and time, or for an object in object storage the same
// size and content tag (an object uploaded again with the same bytes is
// the same source).
func sameSource(old, cur SourceFile) bool {
	if old == cur {
		return true
	}
	_, t1, ok1 := strings.Cut(old.ModTime, " ")
	_, t2, ok2 := strings.Cut(cur.ModTime, " ")
	return ok1 && ok2 && t1 != "" && t1 == t2 && old.Size == cur.Size && old.Path == cur.Path
}

// SameSource reports whether cur is the source file old that a record
// holds (see sameSource), for converters that sort their sources
// themselves.
func SameSource(old, cur SourceFile) bool { return sameSource(old, cur) }

// Holds reports whether the committed output holds the source file path
// (kept or removed; see Sources): an append skips it without reading it.
func (b *Base) Holds(path string) bool {
	if b == nil {
		return false
	}
	if n := len(b.Diff.Kept) + len(b.Diff.Removed); b.held == nil || len(b.held) != n {
		// Built once per Diff: Holds is asked for every source file.
		b.held = make(map[string]bool, n)
		for _, s := range b.Diff.Kept {
			b.held[s.Path] = true
		}
		for _, s := range b.Diff.Removed {
			b.held[s.Path] = true
		}
	}
	return b.held[path]
}

// Extend makes rec, the record of the run that appends to b, the record of
// the whole output: the sources b holds that have disappeared stay listed
// (their rows stay), it names the record it extends, and it carries b's
// commits (Commit adds this one's).
func (b *Base) Extend(rec *Record) {
	if b == nil || rec == nil {
		return
	}
	rec.Sources = append(rec.Sources, b.Diff.Removed...)
	slices.SortFunc(rec.Sources, func(x, y SourceFile) int { return strings.Compare(x.Path, y.Path) })
	sum := sha256.Sum256(b.raw)
	rec.AppendTo = hex.EncodeToString(sum[:])
	rec.Commits = b.commits()
}

// commits returns the record's commits, or for a record written before
// commits were recorded, one commit of every shard.
func (b *Base) commits() []CommitExtent {
	if len(b.Record.Commits) > 0 {
		return slices.Clone(b.Record.Commits)
	}
	return []CommitExtent{{Shards: len(b.Shards), Sources: len(b.Record.Sources)}}
}

// Store returns the committed output as a store, for reading its files by
// slash-separated paths relative to the destination. It is not for
// writing: an append writes into its Output.
func (b *Base) Store(ctx context.Context) (objstore.Store, error) {
	return b.Dest.store(ctx, nil)
}

// Open opens a committed file of the output (rel is slash-separated,
// relative to the destination).
func (b *Base) Open(ctx context.Context, rel string) (objstore.Object, error) {
	st, err := b.Store(ctx)
	if err != nil {
		return nil, err
	}
	return st.Open(ctx, rel)
}

// ReadFile reads a committed file of the output whole, refusing one of
// more than max bytes.
func (b *Base) ReadFile(ctx context.Context, rel string, max int64) ([]byte, error) {
	st, err := b.Store(ctx)
	if err != nil {
		return nil, err
	}
	return objstore.ReadAll(ctx, st, rel, max)
}

// List lists the committed files under the directory rel ("" for all),
// as slash-separated paths relative to the destination, sorted.
func (b *Base) List(ctx context.Context, rel string) ([]string, error) {
	st, err := b.Store(ctx)
	if err != nil {
		return nil, err
	}
	pfx := ""
	if rel != "" && rel != "." {
		pfx = strings.TrimSuffix(rel, "/") + "/"
	}
	var out []string
	err = st.List(ctx, pfx, func(in objstore.Info) error {
		if strings.HasPrefix(in.Name, pfx) {
			out = append(out, in.Name)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// committedShards lists the shards the committed output's pack directory
// holds: as many as its record's commits (or parts) say, named as the
// writer names them, with their sizes and digests from the manifest where
// there is one; for an older record, those of the manifest, or every
// shard the directory holds.
func (b *Base) committedShards(ctx context.Context) ([]packcore.ShardInfo, error) {
	st, err := b.Store(ctx)
	if err != nil {
		return nil, err
	}
	var man *packcore.Manifest
	if raw, err := objstore.ReadAll(ctx, st, b.inPack(packcore.ManifestName), 1<<28); err == nil {
		man, err = packcore.DecodeManifest(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Dest.Location(), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	n := -1
	switch r := b.Record; {
	case len(r.Commits) > 0:
		n = 0
		for _, c := range r.Commits {
			n += c.Shards
		}
	case len(r.Parts) > 0:
		n = 0
		for _, p := range r.Parts {
			n += p.Shards
		}
	case man != nil:
		n = len(man.Shards)
	}
	var names []string
	if n >= 0 {
		for i := range n {
			names = append(names, shardName(i))
		}
	} else {
		pfx := ""
		if b.packDir != "." {
			pfx = b.packDir + "/"
		}
		err := st.List(ctx, pfx, func(in objstore.Info) error {
			rest := strings.TrimPrefix(in.Name, pfx)
			if _, ok := shardIndex(rest); ok && !strings.Contains(rest, "/") {
				names = append(names, rest)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sortShards(names)
	}
	out := make([]packcore.ShardInfo, 0, len(names))
	for _, name := range names {
		info := packcore.ShardInfo{Name: name}
		if man != nil {
			if m, ok := man.Shards[name]; ok {
				info.Bytes, info.SHA256 = m.Bytes, m.SHA256
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// inPack returns the path of name in the pack directory.
func (b *Base) inPack(name string) string {
	if b.packDir == "." {
		return name
	}
	return objstore.Join(b.packDir, name)
}

// sortShards sorts shard names by number.
func sortShards(names []string) {
	slices.SortFunc(names, func(a, b string) int {
		i, _ := shardIndex(a)
		j, _ := shardIndex(b)
		return i - j
	})
}

// storedShards reads the central directory of each committed shard (its
// end, never a payload byte), for the writer to continue after them and
// to know their keys; it returns them with the members and payload bytes
// they hold.
func (b *Base) storedShards(ctx context.Context) (out []packcore.StoredShard, members, size int64, err error) {
	st, err := b.Store(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	for _, s := range b.Shards {
		name := b.inPack(s.Name)
		obj, err := st.Open(ctx, name)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s: committed shard %s: %w", b.Dest.Location(), name, err)
		}
		dir, err := packcore.ReadDirectory(obj, obj.Size())
		sz := obj.Size()
		obj.Close()
		if err != nil {
			return nil, 0, 0, fmt.Errorf("%s/%s: %w", b.Dest.Location(), name, err)
		}
		info := s
		if info.Bytes == 0 {
			info.Bytes = sz
		}
		for _, e := range dir.Entries {
			members++
			size += e.Size
		}
		out = append(out, packcore.StoredShard{Info: info, Dir: dir})
	}
	return out, members, size, nil
}

// sameBase checks that the destination's record is still the one the
// append planned on (raw).
func (b *Base) sameBase(raw []byte) error {
	if !bytes.Equal(raw, b.raw) {
		return &RetryError{Err: fmt.Errorf("%s: %w", b.Dest.Location(), ErrBaseMoved), Hint: "rerun the same command: it appends to the output as it is now"}
	}
	return nil
}

// errAppendBusy is the error of an append that finds another run's
// unfinished append in object storage.
func errAppendBusy(loc string, pending []byte) error {
	what := "another run"
	if old, err := decodeRecord(pending, loc+"/"+PendingName); err == nil && old.Command != "" {
		what = "another " + old.Command + " run"
	}
	return &RetryError{Err: fmt.Errorf("%s: %w: %s is appending to it or was stopped while it did (%s)", loc, stage.ErrBusy, what, PendingName),
		Hint: "rerun later; if that run was stopped for good, rerun this one with --restart to discard what it left"}
}
