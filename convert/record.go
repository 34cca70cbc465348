package convert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"

	"github.com/bpconvert/bpconvert/stage"
)

// RecordName is the file inside a converted destination that says what
// produced it (see Record).
const RecordName = stage.RecordName

// Record says what produced a destination: the command, the options that
// shape the output, the identity of every source file and the tool. It is
// written into the staging directory when a run begins (so a rerun after a
// kill can tell whether the staged work is its own) and is committed with
// the output (so a retry of a finished run can tell it is already done).
type Record struct {
	// Tool and Version name the writer; they are not compared.
	Tool    string `json:"tool"`
	Version string `json:"version"`
	// Command is the converter command, such as "convert-wds".
	Command string `json:"command"`
	// Options are the options that shape the output, by flag name.
	Options map[string]string `json:"options"`
	// Sources identify every source file.
	Sources []SourceFile `json:"sources"`
	// Parts, in a destination joined by Finalize, say what each part of
	// the split contributed; they are not compared.
	Parts []PartExtent `json:"parts,omitempty"`
	// AppendTo, in the record of an append, is the SHA-256 of the record
	// it extends (see Base); Commits say what each commit added, the
	// first conversion first. Neither is compared.
	AppendTo string         `json:"append_to,omitempty"`
	Commits  []CommitExtent `json:"commits,omitempty"`
}

// CommitExtent is what one commit of a destination added: the shards
// numbered First to First+Shards-1, holding Members members of Bytes
// payload bytes, converted from Sources source files.
type CommitExtent struct {
	First   int   `json:"first_shard"`
	Shards  int   `json:"shards"`
	Members int64 `json:"members"`
	Bytes   int64 `json:"bytes"`
	Sources int   `json:"sources"`
}

// PartExtent is what one part of a split conversion contributed to the
// joined destination: the shards numbered First to First+Shards-1, holding
// Members members of Bytes payload bytes.
type PartExtent struct {
	Part    string `json:"part"`
	First   int    `json:"first_shard"`
	Shards  int    `json:"shards"`
	Members int64  `json:"members"`
	Bytes   int64  `json:"bytes"`
}

// SourceFile identifies one source file by path, size and modification
// time: a file rewritten in place changes at least one of them.
type SourceFile struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	ModTime string `json:"mtime"`
}

// Identify lists the regular files of the given opened sources with their
// absolute paths (s3:// locations in a bucket), sizes and modification
// times, sorted by path: the file a source names, or every file of its
// tree (a local directory walked recursively, symbolic links followed for
// files; every object under a prefix). A source's Files, when set, are
// its files (and nothing else of its tree); a source of Parts is its
// parts'. An object's content tag stands beside its time.
func Identify(ctx context.Context, sources []Source) ([]SourceFile, error) {
	out, err := identifyAll(ctx, sources)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b SourceFile) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// identifyAll lists the files of every source (see Identify), unsorted.
func identifyAll(ctx context.Context, sources []Source) ([]SourceFile, error) {
	var out []SourceFile
	for _, src := range sources {
		var files []SourceFile
		var err error
		switch {
		case src.Files != nil:
			files, err = identifyAll(ctx, src.Files)
		case len(src.Parts) > 0:
			files, err = identifyAll(ctx, src.Parts)
		case src.Tree == nil:
		case src.Tree.Remote():
			files, err = identifyRemote(ctx, src)
		default:
			files, err = identifyLocal(src.Location())
		}
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// IdentifyPaths is Identify of the sources named by path or s3:// location
// (each opened as srctree.OpenSource opens it, counting nothing): for
// what a record names, or a source read by name.
func IdentifyPaths(ctx context.Context, paths []string) ([]SourceFile, error) {
	var srcs []Source
	for _, p := range paths {
		t, file, err := srctree.OpenSource(ctx, p, objstore.Options{})
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, Source{Tree: t, File: file})
	}
	return Identify(ctx, srcs)
}

// identifyLocal lists the local file abs, or every regular file under the
// directory abs.
func identifyLocal(abs string) ([]SourceFile, error) {
	var out []SourceFile
	add := func(p string, info fs.FileInfo) {
		out = append(out, SourceFile{Path: p, Size: info.Size(), ModTime: info.ModTime().UTC().Format(time.RFC3339Nano)})
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		add(abs, info)
		return out, nil
	}
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			add(p, info)
		}
		return nil
	})
	return out, err
}

// identifyRemote lists the object src names, or every object of its tree,
// as the tree listed them.
func identifyRemote(ctx context.Context, src Source) ([]SourceFile, error) {
	file := func(e srctree.Entry) SourceFile {
		mt := e.ModTime.UTC().Format(time.RFC3339Nano)
		if e.ETag != "" {
			mt += " " + e.ETag
		}
		return SourceFile{Path: src.Tree.Path(e.Name), Size: e.Size, ModTime: mt}
	}
	if src.File != "" {
		e, err := src.Tree.Stat(src.File)
		if err != nil {
			return nil, err
		}
		return []SourceFile{file(e)}, nil
	}
	var out []SourceFile
	err := src.Tree.Walk(ctx, "", func(e srctree.Entry) error {
		out = append(out, file(e))
		return nil
	})
	return out, err
}

// PartOption is the option that names a run's part (--part I/N); it is
// empty for an undivided run.
const PartOption = "part"

// Whole returns a copy of r as the undivided run of the same plan records
// itself (no part): what Finalize commits, and what every part's record
// becomes when compared with another's.
func (r *Record) Whole() *Record {
	w := *r
	w.Options = maps.Clone(r.Options)
	w.Options[PartOption] = ""
	w.Commits = nil // a part's own; a joined output's are its parts
	return &w
}

// Encode returns the record as indented JSON.
func (r *Record) Encode() []byte {
	b, _ := json.MarshalIndent(r, "", " ")
	return append(b, '\n')
}

// maxRecord bounds a run record read whole.
const maxRecord = 1 << 24

// readRecord reads the record of a committed local destination; it
// returns fs.ErrNotExist (wrapped) when dst holds none.
func readRecord(dst string) (*Record, error) {
	b, err := srcfile.ReadFile(filepath.Join(dst, RecordName), maxRecord)
	if err != nil {
		return nil, srcfile.Named("read", filepath.Join(dst, RecordName), err)
	}
	return decodeRecord(b, filepath.Join(dst, RecordName))
}

// decodeRecord decodes a record read from where (named in errors).
func decodeRecord(b []byte, where string) (*Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &r, nil
}

// Diff names what differs between r and the record of an earlier run, in
// words for an error message; it is empty when the runs produce the same
// output. Tool versions are not compared.
func (r *Record) Diff(earlier *Record) []string {
	return append(r.optionsDiff(earlier), r.sourcesDiff(earlier)...)
}

// optionsDiff names the differences of command and options (see Diff).
func (r *Record) optionsDiff(earlier *Record) []string {
	var out []string
	if r.Command != earlier.Command {
		out = append(out, fmt.Sprintf("command %s, earlier %s", r.Command, earlier.Command))
	}
	keys := map[string]bool{}
	for k := range r.Options {
		keys[k] = true
	}
	for k := range earlier.Options {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if r.Options[k] != earlier.Options[k] {
			out = append(out, fmt.Sprintf("--%s %q, earlier %q", k, r.Options[k], earlier.Options[k]))
		}
	}
	return out
}

// sourcesDiff names the source files that differ (see Diff).
func (r *Record) sourcesDiff(earlier *Record) []string {
	var out []string
	old := map[string]SourceFile{}
	for _, s := range earlier.Sources {
		old[s.Path] = s
	}
	changed := 0
	for _, s := range r.Sources {
		o, ok := old[s.Path]
		delete(old, s.Path)
		if ok && o == s {
			continue
		}
		if changed++; changed <= 3 {
			if !ok {
				out = append(out, "source file "+s.Path+" is new")
			} else {
				out = append(out, fmt.Sprintf("source file %s changed (size %d, earlier %d; mtime %s, earlier %s)", s.Path, s.Size, o.Size, s.ModTime, o.ModTime))
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(old)) {
		if changed++; changed <= 3 {
			out = append(out, "source file "+p+" is gone")
		}
	}
	if changed > 3 {
		out = append(out, fmt.Sprintf("and %d more source files", changed-3))
	}
	return out
}

// ErrDifferentRun is wrapped when a destination holds the output of a
// different source or plan.
var ErrDifferentRun = errors.New("destination holds the output of a different run")
