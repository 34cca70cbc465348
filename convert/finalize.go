package convert

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/stage"
)

// TableJoiner writes out, one table of the joined output, from the same
// table in each part (parts[i] is part i+1's copy, in part order).
// rename maps a reference written by part i+1 to the reference of the
// joined output (its shard renumbered); a value that is not a reference is
// an error, so a joiner applies it only to reference columns.
type TableJoiner func(ctx context.Context, out string, parts []string, rename func(part int, ref string) (string, error)) error

// FinalizeOptions configure Finalize.
type FinalizeOptions struct {
	// Joiners returns, for the command that wrote the parts, the function
	// that names the joiner of each table (by slash path relative to the
	// output; nil for a file that is not a table). A command without
	// joiners cannot be finalized.
	Joiners func(command string) (func(rel string) TableJoiner, bool)
	// Stats, when set, counts the requests and bytes of object storage.
	Stats *objstore.Stats
	// Staging is the local directory under which a destination in object
	// storage has its tables joined (the system's temporary directory when
	// ""); no payload byte is staged.
	Staging string
}

// FinalizeResult says what Finalize did.
type FinalizeResult struct {
	// AlreadyDone is set when dst already held the joined output.
	AlreadyDone bool
	// Command is the converter command that wrote the parts.
	Command string
	// Parts, Shards, Members and Bytes count what was joined.
	Parts   int
	Shards  int
	Members int64
	Bytes   int64
	// Extents say what each part contributed, in part order.
	Extents []PartExtent
}

// Finalize joins the parts of a split conversion (see Part) into dst: the
// pack shards of every part, in part order, become dst's shards, numbered
// from 0, by hard links (payload bytes are never copied; the parts stay
// whole until the joined output is committed, so a killed Finalize can run
// again); the manifests merge into one; the tables that every part writes
// are joined by the command's TableJoiner with their references
// renumbered; every other file must be the same in each part that has it.
// The joined output carries the run's record with no part, so a retry of an
// undivided run of the same plan finds it already done. The parts'
// directory is removed after the commit.
//
// A missing or incomplete part, parts made from different plans or sources,
// or a dst that holds other output is a *UsageError; a key that two parts
// both wrote is an *InputError.
func Finalize(ctx context.Context, dst Dest, o FinalizeOptions) (FinalizeResult, error) {
	return dst.finalize(ctx, o)
}

// finalize joins the parts of a local destination.
func (d localDest) finalize(ctx context.Context, o FinalizeOptions) (FinalizeResult, error) {
	var res FinalizeResult
	dst := d.dir
	partsDir := partsDir(dst)
	parts, recs, err := readParts(ctx, partsDir)
	if errors.Is(err, fs.ErrNotExist) {
		// No parts: a finished Finalize removed them, or there were none.
		if rec, rerr := readRecord(dst); rerr == nil {
			res.AlreadyDone, res.Command = true, rec.Command
			return res, nil
		}
		return res, &UsageError{Err: fmt.Errorf("finalize: %s: no parts to join (%s does not exist)", dst, partsDir),
			Hint: "run the conversion with --part I/N for every I from 1 to N first"}
	}
	if err != nil {
		return res, err
	}
	joined := recs[0].Whole()
	res.Command, res.Parts = joined.Command, len(parts)
	if old, err := readRecord(dst); err == nil {
		if diff := joined.Diff(old); len(diff) > 0 {
			return res, &UsageError{Err: fmt.Errorf("finalize: %s: %w: %s", dst, ErrDifferentRun, strings.Join(diff, "; ")),
				Hint: "finalize into the destination the parts were converted for"}
		}
		// Committed, but killed before the parts were removed.
		res.AlreadyDone = true
		return res, os.RemoveAll(partsDir)
	}
	joiners, ok := o.Joiners(joined.Command)
	if !ok {
		return res, &UsageError{Err: fmt.Errorf("finalize: %s: the parts were written by %s, which cannot be finalized", dst, joined.Command)}
	}
	st, err := stage.BeginWith(dst, stage.Options{Record: joined.Encode()})
	if err != nil {
		return res, err
	}
	defer st.Abort()
	ps := localParts{dirs: parts, media: filepath.Join(st.Dir, MediaDir)}
	if err := joinParts(ctx, ps, len(parts), st.Dir, joiners, joined.Options[RefBaseOption], &res); err != nil {
		return res, err
	}
	joined.Parts = res.Extents
	if err := atomicfile.WriteFile(filepath.Join(st.Dir, RecordName), joined.Encode(), 0o644); err != nil {
		return res, err
	}
	if err := st.Commit(); err != nil {
		return res, err
	}
	if err := os.RemoveAll(partsDir); err != nil {
		return res, fmt.Errorf("finalize: %s joined, but removing its parts failed: %w", dst, err)
	}
	return res, nil
}

// readParts lists the committed parts under partsDir, in order, and checks
// that all N are there, complete, and made by the same plan from the same
// sources. Each refusal names the parts to rerun, or the split to remove,
// and how.
func readParts(ctx context.Context, partsDir string) ([]string, []*Record, error) {
	ents, err := os.ReadDir(partsDir)
	if err != nil {
		return nil, nil, err
	}
	l := newPartListing()
	for _, e := range ents {
		var mod time.Time
		if info, err := e.Info(); err == nil {
			mod = info.ModTime()
		}
		name := e.Name()
		if p, ok := ParsePartName(name); ok && e.IsDir() {
			l.note(p, filepath.Join(partsDir, name), mod)
			continue
		}
		if inner, ok := strings.CutSuffix(strings.TrimPrefix(name, "."), stage.Suffix); ok {
			if p, ok := ParsePartName(inner); ok {
				l.note(p, "", mod)
			}
		}
	}
	rm := func(n int) []string {
		return []string{"rm -rf " + shellQuote(filepath.Join(partsDir, fmt.Sprintf("part-*-of-%04d", n))) + " " +
			shellQuote(filepath.Join(partsDir, fmt.Sprintf(".part-*-of-%04d%s", n, stage.Suffix)))}
	}
	return l.check(ctx, partsDir, func(loc string) (*Record, error) { return readRecord(loc) }, rm)
}

// partListing is what a parts directory holds, per number of parts N: the
// committed parts (I -> location), those staged (running or stopped), and
// when each split last changed.
type partListing struct {
	found  map[int]map[int]string
	staged map[int]map[int]bool
	newest map[int]time.Time
}

func newPartListing() *partListing {
	return &partListing{found: map[int]map[int]string{}, staged: map[int]map[int]bool{}, newest: map[int]time.Time{}}
}

// note records part p: committed at loc, or staged when loc is "".
func (l *partListing) note(p Part, loc string, mod time.Time) {
	if l.found[p.N] == nil {
		l.found[p.N], l.staged[p.N] = map[int]string{}, map[int]bool{}
	}
	if mod.After(l.newest[p.N]) {
		l.newest[p.N] = mod
	}
	if loc == "" {
		l.staged[p.N][p.I] = true
	} else {
		l.found[p.N][p.I] = loc
	}
}

// check returns the committed parts of the one split listed, in order,
// with their records (read by readRecord), refusing several splits (rm
// gives the commands that remove a split of n parts), missing or
// incomplete parts, and parts of different plans or sources.
func (l *partListing) check(ctx context.Context, partsDir string, readRecord func(loc string) (*Record, error), rm func(n int) []string) ([]string, []*Record, error) {
	found := map[int]map[int]string{}
	for n, parts := range l.found {
		if len(parts) > 0 {
			found[n] = parts
		}
	}
	if len(found) == 0 {
		return nil, nil, &UsageError{Err: fmt.Errorf("finalize: %s holds no parts", partsDir),
			Hint: "run the conversion with --part I/N for every I from 1 to N first"}
	}
	if len(found) > 1 {
		return nil, nil, splitsError(partsDir, found, l.newest, rm)
	}
	var n int
	for n = range found {
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if _, ok := found[n][i]; ok {
			continue
		}
		what := "missing"
		if l.staged[n][i] {
			what = "not complete (running, or stopped: rerun it)"
		}
		missing = append(missing, fmt.Sprintf("part %d/%d %s", i, n, what))
	}
	if len(missing) > 0 {
		return nil, nil, &UsageError{Err: fmt.Errorf("finalize: %s: %s", partsDir, strings.Join(missing, "; ")),
			Hint: "run every part to completion, then finalize again"}
	}
	var dirs []string
	var recs []*Record
	for i := 1; i <= n; i++ {
		rec, err := readRecord(found[n][i])
		if err != nil {
			return nil, nil, &UsageError{Err: fmt.Errorf("finalize: part %d/%d: %w", i, n, err)}
		}
		if rec.Options[PartOption] != (Part{I: i, N: n}).String() {
			return nil, nil, &UsageError{Err: fmt.Errorf("finalize: %s: its record names part %q", found[n][i], rec.Options[PartOption])}
		}
		dirs = append(dirs, found[n][i])
		recs = append(recs, rec)
	}
	if err := samePlan(ctx, recs); err != nil {
		return nil, nil, err
	}
	return dirs, recs, nil
}

// splitsError refuses parts of several splits (a conversion rerun with
// another N), naming the commands (rm) that remove all but the newest
// split.
func splitsError(partsDir string, found map[int]map[int]string, newest map[int]time.Time, rm func(n int) []string) error {
	ns := slices.Sorted(maps.Keys(found))
	keep := ns[0]
	var desc, cmds []string
	for _, n := range ns {
		desc = append(desc, fmt.Sprintf("%d of %d parts", len(found[n]), n))
		if newest[n].After(newest[keep]) {
			keep = n
		}
	}
	for _, n := range ns {
		if n != keep {
			cmds = append(cmds, rm(n)...)
		}
	}
	return &UsageError{Err: fmt.Errorf("finalize: %s holds parts of %d splits (%s)", partsDir, len(ns), strings.Join(desc, ", ")),
		Hint: fmt.Sprintf("keep one split: `%s` removes all but the %d-part split, written last; then run its missing parts and finalize again",
			strings.Join(cmds, "; "), keep)}
}

// shellQuote quotes p for a POSIX shell, leaving a trailing glob unquoted.
func shellQuote(p string) string {
	dir, base := filepath.Split(p)
	if dir == "" {
		return base
	}
	return "'" + strings.ReplaceAll(dir, "'", `'\''`) + "'" + base
}

// samePlan checks that every part was made by the same plan from the same
// sources. When they differ, the parts to rerun are those made with options
// other than part 1's, or else those made from sources that have changed
// since (compared with the files as they are now), each rerun with its own
// command plus --restart.
func samePlan(ctx context.Context, recs []*Record) error {
	n := len(recs)
	first := recs[0].Whole()
	var other []int
	var otherWhy []string
	sourcesDiffer := false
	for i, rec := range recs[1:] {
		w := rec.Whole()
		if diff := w.Diff(first); len(diff) > 0 {
			sourcesDiffer = true
			noSrc, firstNoSrc := *w, *first
			noSrc.Sources, firstNoSrc.Sources = nil, nil
			if d := noSrc.Diff(&firstNoSrc); len(d) > 0 {
				other = append(other, i+2)
				otherWhy = append(otherWhy, fmt.Sprintf("part %d/%d: %s", i+2, n, strings.Join(d, "; ")))
			}
		}
	}
	if len(other) > 0 {
		return &UsageError{Err: fmt.Errorf("finalize: parts made with other options than part 1/%d: %s", n, strings.Join(otherWhy, "; ")),
			Hint: fmt.Sprintf("rerun %s with part 1/%d's options plus --restart (or every part with the same new options plus --restart), then finalize again", partList(other, n), n)}
	}
	if !sourcesDiffer {
		return nil
	}
	now := &Record{Command: first.Command, Options: first.Options, Sources: currentSources(ctx, recs)}
	var stale []int
	var why []string
	for i, rec := range recs {
		if diff := now.Diff(rec.Whole()); len(diff) > 0 {
			stale = append(stale, i+1)
			if len(why) == 0 {
				why = diff
			}
		}
	}
	if len(stale) == 0 { // cannot happen: the parts differ, so not all match now
		stale = []int{1}
	}
	what := partList(stale, n)
	if len(stale) == n {
		what = "every part"
	}
	verb := "was"
	if len(stale) > 1 {
		verb = "were"
	}
	return &UsageError{Err: fmt.Errorf("finalize: %s %s made from sources that have changed since: %s", what, verb, strings.Join(why, "; ")),
		Hint: fmt.Sprintf("rerun %s with the same command plus --restart (it replaces the part's old output), then finalize again", what)}
}

// partList names parts: "part 2/3", "parts 1/3 and 2/3", "parts 1/4, 2/4 and 4/4".
func partList(is []int, n int) string {
	names := make([]string, len(is))
	for k, i := range is {
		names[k] = fmt.Sprintf("%d/%d", i, n)
	}
	if len(names) == 1 {
		return "part " + names[0]
	}
	return "parts " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// currentSources identifies, as they are now, the source files that any
// part's record names; a file that is gone is left out.
func currentSources(ctx context.Context, recs []*Record) []SourceFile {
	paths := map[string]bool{}
	for _, r := range recs {
		for _, s := range r.Sources {
			paths[s.Path] = true
		}
	}
	var out []SourceFile
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		if got, err := IdentifyPaths(ctx, []string{p}); err == nil && len(got) == 1 {
			out = append(out, got[0])
		}
	}
	return out
}

// totals counts the members, payload bytes and shards of the packs in the
// media directory of dir (a converted destination or part), reading each
// shard's central directory.
func totals(dir string) (members, bytes int64, shards int, err error) {
	media := filepath.Join(dir, MediaDir)
	names, err := packcore.ListShards(media)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, 0, nil
	}
	if err != nil {
		return 0, 0, 0, err
	}
	for _, name := range names {
		keys, b, err := shardKeys(filepath.Join(media, name))
		if err != nil {
			return 0, 0, 0, err
		}
		members += int64(len(keys))
		bytes += b
	}
	return members, bytes, len(names), nil
}

// shardKeys returns a shard's member names and payload bytes.
func shardKeys(path string) ([]string, int64, error) {
	f, err := srcfile.OpenFile(path)
	if err != nil {
		return nil, 0, srcfile.Named("open", path, err)
	}
	defer f.Close()
	d, err := packcore.ReadDirectory(f, f.Size())
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	keys := make([]string, len(d.Entries))
	var bytes int64
	for i, e := range d.Entries {
		keys[i] = e.Name
		bytes += e.Size
	}
	return keys, bytes, nil
}

// joinFiles joins the tables that have joiners and links every other file
// of the parts (apart from their packs and records) into dir.
func joinFiles(ctx context.Context, dir string, parts []string, joiners func(rel string) TableJoiner, rename func(int, string) (string, error)) error {
	holders := map[string][]int{}
	for pi, part := range parts {
		files, err := srcfile.List(ctx, part, func(name string) bool { return name != MediaDir })
		if err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
		for _, e := range files {
			if e.Name == MediaDir || e.Name == RecordName {
				continue
			}
			// A part's files are joined or linked, never waited on.
			if err := srcfile.CheckMode(e.Mode); err != nil {
				return fmt.Errorf("finalize: %s: %w", filepath.Join(part, filepath.FromSlash(e.Name)), err)
			}
			holders[e.Name] = append(holders[e.Name], pi)
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(holders)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		out := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if j := joiners(rel); j != nil {
			paths := make([]string, len(parts))
			for _, pi := range holders[rel] {
				paths[pi] = filepath.Join(parts[pi], filepath.FromSlash(rel))
			}
			if err := j(ctx, out, paths, rename); err != nil {
				return fmt.Errorf("finalize: %s: %w", rel, err)
			}
			continue
		}
		first := filepath.Join(parts[holders[rel][0]], filepath.FromSlash(rel))
		for _, pi := range holders[rel][1:] {
			if same, err := sameFile(first, filepath.Join(parts[pi], filepath.FromSlash(rel))); err != nil || !same {
				return fmt.Errorf("finalize: %s differs between part %d and part %d (%v)", rel, holders[rel][0]+1, pi+1, err)
			}
		}
		if err := os.Link(first, out); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
	}
	return nil
}

// sameFile reports whether two files hold the same bytes.
func sameFile(a, b string) (bool, error) {
	x, err := os.ReadFile(a)
	if err != nil {
		return false, err
	}
	y, err := os.ReadFile(b)
	if err != nil {
		return false, err
	}
	return string(x) == string(y), nil
}
