package parquet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrOverlap is returned when the destination is the source, lies inside it
// or contains it.
var ErrOverlap = errors.New("destination must be new and disjoint from the source")

// MediaDir is the directory, relative to the output root, that holds the
// packs; references name it as their base.
const MediaDir = "media"

// inputFile is one input file: a table or another file copied unchanged.
type inputFile struct {
	rel  string // slash-separated path relative to the root
	path string // absolute path to read (symlinks resolved)
	size int64
}

// inputs lists what a source holds.
type inputs struct {
	root     string // dataset root: SRC, or the directory of a single SRC file
	rootReal string // root with symlinks resolved
	single   bool
	tables   []inputFile
	others   []inputFile
	warnings []string
}

// realAbs returns p made absolute with every symlink resolved; for a path
// that does not exist yet, its nearest existing parent is resolved and the
// rest appended.
func realAbs(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	cur := abs
	for {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// within reports whether p is root or lies below it (both cleaned, absolute).
func within(root, p string) bool {
	if p == root {
		return true
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// CheckDest returns an error wrapping ErrOverlap when dst and src, with
// symlinks resolved, are the same directory or one lies inside the other.
// Whether dst already exists is checked when the conversion starts.
func CheckDest(src, dst string) error {
	s, err := realAbs(src)
	if err != nil {
		return err
	}
	if st, err := os.Stat(s); err == nil && !st.IsDir() {
		s = filepath.Dir(s)
	}
	d, err := realAbs(dst)
	if err != nil {
		return err
	}
	if within(s, d) || within(d, s) {
		return fmt.Errorf("parquet: %s and %s: %w", src, dst, ErrOverlap)
	}
	return nil
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
		return nil, &InputError{Row: -1, Err: err}
	}
	in := &inputs{}
	if !st.IsDir() {
		in.root = filepath.Dir(abs)
		in.single = true
		if in.rootReal, err = filepath.EvalSymlinks(in.root); err != nil {
			return nil, err
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, &InputError{Table: src, Row: -1, Err: err}
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
			return &InputError{Table: p, Row: -1, Err: err}
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
			return &InputError{Table: rel, Row: -1, Err: err}
		}
		if !within(in.rootReal, real) {
			return &InputError{Table: rel, Row: -1, Err: fmt.Errorf("resolves to %s, outside the source directory", real)}
		}
		info, err := os.Stat(real)
		if err != nil {
			return &InputError{Table: rel, Row: -1, Err: err}
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
			return nil, &InputError{Table: f.rel, Row: -1, Err: fmt.Errorf("the source has a %s/ directory, where the packs would go", MediaDir)}
		}
	}
	return in, nil
}
