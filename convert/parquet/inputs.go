package parquet

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/stage"
)

// MediaDir is the directory, relative to the output root, that holds the
// packs; references name it as their base.
const MediaDir = convert.MediaDir

// inputFile is one input file: a table or another file copied unchanged.
type inputFile struct {
	rel  string // slash-separated path relative to the root
	path string // absolute path to read (symlinks resolved)
	size int64
	// arrow marks an Arrow IPC data file of a save_to_disk dataset, and
	// dataset is the directory of that dataset relative to the root.
	arrow   bool
	dataset string
}

// inputs lists what a source holds.
type inputs struct {
	root     string // dataset root: SRC, or the directory of a single SRC file
	rootReal string // root with symlinks resolved
	single   bool
	tables   []inputFile
	others   []inputFile
	warnings []string
	// disk is set for a Hugging Face save_to_disk directory (hfdisk.go).
	disk *diskLayout
}

// listInputs finds the tables and other files of src: src itself when it is
// a file, else every regular file below it, sorted by relative path. Files
// whose path resolves outside the root are refused; symlinked directories are
// not followed (a warning says so) and .git directories are skipped.
func listInputs(ctx context.Context, src string) (*inputs, error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, &InputError{Source: "parquet", Row: -1, Offset: -1, Err: err}
	}
	in := &inputs{}
	if !st.IsDir() && !st.Mode().IsRegular() {
		// a FIFO would block the read that no signal interrupts
		return nil, &InputError{Source: "parquet", File: src, Row: -1, Offset: -1, Err: srcfile.CheckMode(st.Mode())}
	}
	if !st.IsDir() {
		in.root = filepath.Dir(abs)
		in.single = true
		if in.rootReal, err = filepath.EvalSymlinks(in.root); err != nil {
			return nil, err
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, &InputError{Source: "parquet", File: src, Row: -1, Offset: -1, Err: err}
		}
		in.tables = []inputFile{{rel: filepath.Base(abs), path: real, size: st.Size()}}
		return in, nil
	}
	in.root = abs
	if in.rootReal, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, err
	}
	// Walk the resolved root: WalkDir does not descend into a root that is
	// itself a symlink.
	walkRoot := in.rootReal
	err = filepath.WalkDir(walkRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &InputError{Source: "parquet", File: p, Row: -1, Offset: -1, Err: err}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(walkRoot, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == ".git" && p != walkRoot {
				in.warnings = append(in.warnings, fmt.Sprintf("skipped %s/ (a git directory)", rel))
				return filepath.SkipDir
			}
			return nil
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return &InputError{Source: "parquet", File: rel, Row: -1, Offset: -1, Err: err}
		}
		if !stage.Within(in.rootReal, real) {
			return &InputError{Source: "parquet", File: rel, Row: -1, Offset: -1, Err: fmt.Errorf("resolves to %s, outside the source directory", real)}
		}
		info, err := os.Stat(real)
		if err != nil {
			return &InputError{Source: "parquet", File: rel, Row: -1, Offset: -1, Err: err}
		}
		if info.IsDir() {
			in.warnings = append(in.warnings, fmt.Sprintf("skipped %s (a symlinked directory is not followed)", rel))
			return nil
		}
		if !info.Mode().IsRegular() {
			in.warnings = append(in.warnings, fmt.Sprintf("skipped %s (not a regular file)", rel))
			return nil
		}
		f := inputFile{rel: rel, path: real, size: info.Size()}
		if strings.HasSuffix(rel, ".parquet") {
			in.tables = append(in.tables, f)
		} else {
			in.others = append(in.others, f)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(in.tables, func(i, j int) bool { return in.tables[i].rel < in.tables[j].rel })
	sort.Slice(in.others, func(i, j int) bool { return in.others[i].rel < in.others[j].rel })
	for _, f := range append(append([]inputFile(nil), in.tables...), in.others...) {
		if f.rel == MediaDir || strings.HasPrefix(f.rel, MediaDir+"/") {
			return nil, &InputError{Source: "parquet", File: f.rel, Row: -1, Offset: -1, Err: fmt.Errorf("the source has a %s/ directory, where the packs would go", MediaDir)}
		}
	}
	if err := in.detectDisk(); err != nil {
		return nil, err
	}
	return in, nil
}
