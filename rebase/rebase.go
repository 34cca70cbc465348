// Package rebase rewrites what the references of a converted dataset call
// its root (the BASE in zip://KEY::BASE/media/pack-NNNN.zip), in place: after
// the dataset moves, before it is uploaded or published, or to turn the
// default relative references into absolute ones for readers that resolve
// paths from their working directory.
//
// Only tables are written: every table a converter writes with references
// is written again by that converter's own table writer (the
// convert.TableJoiner that joins the parts of a split run, given the one
// dataset as its only part), and a Lance table as a new one-version dataset
// with its reference columns replaced, as convert-lance writes it. Pack
// shards and manifests are never opened for writing, so the work is in
// proportion to the tables' bytes. A run holds a lock on the dataset root,
// so two runs do not interleave. Each table is written under a temporary
// name beside it and renamed over it (a Lance directory is exchanged with
// its rewritten twin in one rename where the system has one), so a reader
// sees a table old or new, whole; a run cut short leaves tables of either
// base, and running it again completes it. The run record's ref-base
// option is written last.
//
// It is not a converter and does not move files: it works on a local
// dataset (rebase before an upload, then copy), and it never checks that a
// URL base is reachable.
package rebase

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

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/filelock"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/packcore"
)

// tempPrefix starts the names of the rewritten tables before they replace
// the tables; a run removes those an earlier, interrupted run left.
const tempPrefix = ".rebase-"

// oldPrefix starts the name a table directory has while it is being
// exchanged by two renames (systems without an exchanging rename): a run
// that finds one whose table is missing puts it back.
const oldPrefix = tempPrefix + "old-"

// Options configure New.
type Options struct {
	// Base is what the references will call the dataset root, as
	// --ref-base takes it (see convert.CheckRefBase): "" or "." for the
	// default, relative to the dataset root.
	Base string
	// Joiners returns, for the command that wrote the dataset, the writer
	// of each of its tables (as convert.FinalizeOptions.Joiners).
	Joiners func(command string) (func(rel string) convert.TableJoiner, bool)
	// ToolVersion is recorded as the writer's version in a rewritten Lance
	// table ("" records "(devel)").
	ToolVersion string
}

// Table is one table a rebase writes again.
type Table struct {
	// Path is slash-separated, relative to the dataset root.
	Path string `json:"path"`
	// Kind says how it is written: "table" (by the converter's table
	// writer) or "lance" (a Lance dataset directory).
	Kind string `json:"kind"`
	// Bytes is the table's size (a Lance directory's files together).
	Bytes int64 `json:"bytes"`

	joiner convert.TableJoiner
}

// Plan is what a rebase will do, computed without writing anything.
type Plan struct {
	// Dataset is the dataset root (absolute).
	Dataset string `json:"dataset"`
	// Command is the converter that wrote the dataset.
	Command string `json:"command"`
	// From is the base the run record names ("" for the default).
	From string `json:"from"`
	// To is the new base ("" for the default, relative to the root).
	To string `json:"to"`
	// Tables are the tables written again, in path order.
	Tables []Table `json:"tables"`
	// Bytes counts the tables' bytes: what the rebase reads and writes.
	Bytes int64 `json:"bytes"`
	// Shards counts the pack shards the references may name (untouched).
	Shards int `json:"shards"`
	// Notes say what people should know before the run.
	Notes []string `json:"notes"`

	shards      map[string]bool
	toolVersion string
}

// New plans the rebase of the local dataset dir (the root of a converted
// dataset, holding its run record) to opts.Base.
func New(ctx context.Context, dir string, opts Options) (*Plan, error) {
	base, err := convert.CheckRefBase(opts.Base)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	} else if !st.IsDir() {
		return nil, convert.Invalid("rebase", abs, errors.New("not a directory"))
	}
	rec, err := convert.ReadRecord(abs)
	if errors.Is(err, fs.ErrNotExist) {
		if names, _ := packcore.ListShards(abs); len(names) > 0 {
			return nil, convert.Invalid("rebase", abs, errors.New("a pack directory holds no table: the references to its members are in tables of your own"))
		}
		return nil, convert.Invalid("rebase", abs, fmt.Errorf("no %s: not a dataset a bpconvert converter wrote", convert.RecordName))
	}
	if err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	}
	if rec.Options[convert.PartOption] != "" {
		return nil, convert.Invalid("rebase", abs, fmt.Errorf("holds part %s of a split conversion; run bpconvert finalize on its destination first", rec.Options[convert.PartOption]))
	}
	joiners, ok := opts.Joiners(rec.Command)
	if !ok {
		return nil, convert.Invalid("rebase", abs, fmt.Errorf("written by %q, whose tables rebase does not know", rec.Command))
	}
	p := &Plan{Dataset: abs, Command: rec.Command, From: rec.Options[convert.RefBaseOption], To: base, shards: map[string]bool{}, toolVersion: opts.ToolVersion}
	names, err := packcore.ListShards(filepath.Join(abs, convert.MediaDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("rebase: %w", err)
	}
	for _, n := range names {
		p.shards[n] = true
	}
	p.Shards = len(names)
	if err := p.findTables(ctx, joiners); err != nil {
		return nil, err
	}
	return p, nil
}

// findTables lists the tables below the dataset root, outside the pack
// directory: the files the command's joiners write, and Lance datasets.
func (p *Plan) findTables(ctx context.Context, joiners func(rel string) convert.TableJoiner) error {
	files, err := srcfile.List(ctx, p.Dataset, func(name string) bool { return name != convert.MediaDir })
	if err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	lance := map[string]int{} // Lance directory -> index in p.Tables
	for _, e := range files {
		if e.Name == convert.MediaDir || e.Name == convert.RecordName || isTemp(e.Name) {
			continue
		}
		if d, ok := lanceDir(e.Name); ok {
			i, seen := lance[d]
			if !seen {
				i = len(p.Tables)
				lance[d] = i
				p.Tables = append(p.Tables, Table{Path: d, Kind: "lance"})
			}
			p.Tables[i].Bytes += e.Size
			p.Bytes += e.Size
			continue
		}
		if j := joiners(e.Name); j != nil {
			p.Tables = append(p.Tables, Table{Path: e.Name, Kind: "table", Bytes: e.Size, joiner: j})
			p.Bytes += e.Size
		}
	}
	slices.SortFunc(p.Tables, func(a, b Table) int { return strings.Compare(a.Path, b.Path) })
	for _, t := range p.Tables {
		if t.Kind == "lance" {
			if err := p.lanceNotes(ctx, t.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// lanceDir returns the Lance dataset directory (a top-level or nested
// directory named *.lance) that holds the file rel, if any.
func lanceDir(rel string) (string, bool) {
	parts := strings.Split(rel, "/")
	for i := range len(parts) - 1 {
		if strings.HasSuffix(parts[i], ".lance") {
			return strings.Join(parts[:i+1], "/"), true
		}
	}
	return "", false
}

// isTemp reports whether rel is, or lies in, a file an interrupted rebase
// left.
func isTemp(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.HasPrefix(part, tempPrefix) {
			return true
		}
	}
	return false
}

// Where says, for people, where references with base resolve from.
func Where(base string) string {
	ex := "zip://KEY::" + mediaRef(base) + "/pack-NNNN.zip"
	switch {
	case base == "":
		return "relative to the dataset root (" + ex + "), wherever it is; readers that resolve paths from their working directory (datasets, fsspec, MediaRef) need the root joined"
	case isURL(base):
		return "from " + base + " (" + ex + "), once the dataset is there"
	case path.IsAbs(base):
		return "from " + base + " (" + ex + "), in any directory, while the dataset is there"
	}
	return "from " + base + " (" + ex + "), relative to the directory a reader works in"
}

func isURL(s string) bool {
	_, _, ok := packcore.SplitURL(s)
	return ok
}

// mediaRef returns the pack directory as references with base name it.
func mediaRef(base string) string {
	if base == "" {
		return convert.MediaDir
	}
	return packcore.JoinShardPath(base, convert.MediaDir)
}

// rename returns ref with its shard named under the new base: ref must
// name, under any base, a shard of the dataset's pack directory.
func (p *Plan) rename(ref string) (string, error) {
	key, shard, err := packcore.ParseRef(ref)
	if err != nil {
		return "", err
	}
	dir, file := path.Split(shard)
	dir = packcore.CleanRefBase(dir)
	if dir != convert.MediaDir && !strings.HasSuffix(dir, "/"+convert.MediaDir) {
		return "", fmt.Errorf("reference %q names a shard outside a %s/ directory", ref, convert.MediaDir)
	}
	if !p.shards[file] {
		return "", fmt.Errorf("reference %q names %s, which is not in %s", ref, file, filepath.Join(p.Dataset, convert.MediaDir))
	}
	return packcore.FormatRef(key, packcore.JoinShardPath(mediaRef(p.To), file)), nil
}

// Result says what Run did.
type Result struct {
	// Tables counts the tables written again; Unchanged those whose
	// references already had the new base.
	Tables, Unchanged int
	// Bytes counts the bytes of the tables read.
	Bytes int64
}

// Run rewrites the tables of the plan and then the run record. A table is
// replaced only once its new version is complete; running Run again after
// an interruption completes the rebase.
func (p *Plan) Run(ctx context.Context) (*Result, error) {
	lock, err := filelock.LockDir(p.Dataset)
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("rebase: %s: another process is rebasing it: %w", p.Dataset, err)
	}
	if err != nil {
		return nil, fmt.Errorf("rebase: %w", err)
	}
	defer lock.Close()
	if err := removeTemps(ctx, p.Dataset); err != nil {
		return nil, err
	}
	res := &Result{}
	for _, t := range p.Tables {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var changed bool
		var err error
		if t.Kind == "lance" {
			changed, err = p.rebaseLance(ctx, t.Path)
		} else {
			changed, err = p.rebaseTable(ctx, t)
		}
		if err != nil {
			return nil, fmt.Errorf("rebase: %s: %w", filepath.Join(p.Dataset, filepath.FromSlash(t.Path)), err)
		}
		res.Tables++
		res.Bytes += t.Bytes
		if !changed {
			res.Unchanged++
		}
	}
	if err := p.writeRecord(); err != nil {
		return nil, err
	}
	return res, nil
}

// rebaseTable writes one table again with its joiner, beside it, and
// renames it over the table when its bytes differ.
func (p *Plan) rebaseTable(ctx context.Context, t Table) (bool, error) {
	src := filepath.Join(p.Dataset, filepath.FromSlash(t.Path))
	tmp := filepath.Join(filepath.Dir(src), tempPrefix+filepath.Base(src))
	rename := func(_ int, ref string) (string, error) { return p.rename(ref) }
	if err := t.joiner(ctx, tmp, []string{src}, rename); err != nil {
		os.Remove(tmp)
		return false, err
	}
	a, errA := os.Stat(src)
	b, errB := os.Stat(tmp)
	if errA == nil && errB == nil && os.SameFile(a, b) {
		// A table without references is linked, not written.
		return false, os.Remove(tmp)
	}
	if same, err := sameBytes(src, tmp); err != nil || same {
		os.Remove(tmp)
		return false, err
	}
	if err := os.Rename(tmp, src); err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, atomicfile.SyncDir(filepath.Dir(src))
}

// sameBytes reports whether two files hold the same bytes, reading both
// in step.
func sameBytes(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	sa, err := fa.Stat()
	if err != nil {
		return false, err
	}
	sb, err := fb.Stat()
	if err != nil || sa.Size() != sb.Size() {
		return false, err
	}
	x, y := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		n, errA := io.ReadFull(fa, x)
		m, errB := io.ReadFull(fb, y)
		if n != m || !bytes.Equal(x[:n], y[:m]) {
			return false, nil
		}
		if errA == io.EOF || errA == io.ErrUnexpectedEOF {
			return errB == io.EOF || errB == io.ErrUnexpectedEOF, nil
		}
		if errA != nil {
			return false, errA
		}
		if errB != nil {
			return false, errB
		}
	}
}

// removeTemps removes what an interrupted run left: files and Lance
// directories whose names start with tempPrefix, outside the pack
// directory.
func removeTemps(ctx context.Context, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if d.IsDir() && p == filepath.Join(root, convert.MediaDir) {
			return filepath.SkipDir
		}
		if name, ok := strings.CutPrefix(d.Name(), oldPrefix); ok {
			orig := filepath.Join(filepath.Dir(p), name)
			if _, err := os.Lstat(orig); errors.Is(err, fs.ErrNotExist) {
				if err := os.Rename(p, orig); err != nil {
					return fmt.Errorf("rebase: %w", err)
				}
				return filepath.SkipDir
			}
		}
		if strings.HasPrefix(d.Name(), tempPrefix) {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("rebase: %w", err)
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
}

// writeRecord sets the run record's ref-base option to the new base.
func (p *Plan) writeRecord() error {
	rec, err := convert.ReadRecord(p.Dataset)
	if err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	if rec.Options[convert.RefBaseOption] == p.To {
		return nil
	}
	rec.Options[convert.RefBaseOption] = p.To
	if err := atomicfile.WriteFile(filepath.Join(p.Dataset, convert.RecordName), rec.Encode(), 0o644); err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	return nil
}
