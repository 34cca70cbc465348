package parquet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/srctree"
	"github.com/bpconvert/bpconvert/stage"
)

// MediaDir is the directory, relative to the output root, that holds the
// packs; references name it as their base.
const MediaDir = convert.MediaDir

// maxMetaBytes bounds the JSON and card files read whole (state.json,
// dataset_dict.json, dataset_info.json, README.md).
const maxMetaBytes = 64 << 20

// inputFile is one input file: a table or another file copied unchanged.
type inputFile struct {
	rel  string // slash-separated path relative to the root, its name in the tree
	path string // the file on this machine, symlinks resolved; "" in a bucket
	size int64
	// arrow marks an Arrow IPC data file of a save_to_disk dataset, and
	// dataset is the directory of that dataset relative to the root.
	arrow   bool
	dataset string
}

// inputs lists what a source holds.
type inputs struct {
	// tree reads the source: a local directory or a prefix in a bucket.
	tree     *srctree.Tree
	root     string // dataset root: SRC, or the directory of a single SRC file (an s3:// location in a bucket)
	rootReal string // a local root with symlinks resolved
	single   bool
	tables   []inputFile
	others   []inputFile
	warnings []string
	// disk is set for a Hugging Face save_to_disk directory (hfdisk.go).
	disk *diskLayout

	mu   sync.Mutex
	meta map[string][]byte // metadata files read whole, by rel
}

// listInputs finds the tables and other files of the source that tree
// holds: the file it was opened for (file, when not ""), else every
// regular file below its root, sorted by relative path. Files whose path
// resolves outside the root are refused; symlinked directories are not
// followed (a warning says so) and .git directories are skipped.
func listInputs(ctx context.Context, tree *srctree.Tree, file string) (*inputs, error) {
	in := &inputs{tree: tree, root: tree.Location(), meta: map[string][]byte{}}
	if !tree.Remote() {
		var err error
		if in.rootReal, err = filepath.EvalSymlinks(in.root); err != nil {
			return nil, err
		}
	}
	if file != "" {
		in.single = true
		e, err := tree.Stat(file)
		if err != nil {
			// a FIFO would block the read that no signal interrupts
			return nil, &InputError{Source: "parquet", File: tree.Path(file), Row: -1, Offset: -1, Err: srcfile.Cause(err)}
		}
		in.tables = []inputFile{{rel: file, path: e.Path, size: e.Size}}
		return in, nil
	}
	var gits []string // the .git directories of a bucket's listing
	err := tree.Walk(ctx, "", func(e srctree.Entry) error {
		rel := e.Name
		if e.Mode.IsDir() {
			if path.Base(rel) == ".git" {
				in.warnings = append(in.warnings, fmt.Sprintf("skipped %s/ (a git directory)", rel))
				return fs.SkipDir
			}
			return nil
		}
		if tree.Remote() {
			if dir, ok := gitDir(rel); ok {
				if len(gits) == 0 || gits[len(gits)-1] != dir {
					gits = append(gits, dir)
					in.warnings = append(in.warnings, fmt.Sprintf("skipped %s/ (a git directory)", dir))
				}
				return nil
			}
		}
		if !e.Mode.IsRegular() {
			dir, err := tree.IsDir(rel)
			if err != nil {
				return &InputError{Source: "parquet", File: rel, Row: -1, Offset: -1, Err: srcfile.Cause(err)}
			}
			if dir {
				in.warnings = append(in.warnings, fmt.Sprintf("skipped %s (a symlinked directory is not followed)", rel))
				return nil
			}
		}
		st, err := tree.Stat(rel)
		if errors.Is(err, srcfile.ErrNotRegular) {
			in.warnings = append(in.warnings, fmt.Sprintf("skipped %s (not a regular file)", rel))
			return nil
		}
		if err != nil {
			return &InputError{Source: "parquet", File: rel, Row: -1, Offset: -1, Err: srcfile.Cause(err)}
		}
		f := inputFile{rel: rel, path: st.Path, size: st.Size}
		if strings.HasSuffix(rel, ".parquet") {
			in.tables = append(in.tables, f)
		} else {
			in.others = append(in.others, f)
		}
		return nil
	})
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, &InputError{Source: "parquet", File: in.root, Row: -1, Offset: -1, Err: err}
	}
	sort.Slice(in.tables, func(i, j int) bool { return in.tables[i].rel < in.tables[j].rel })
	sort.Slice(in.others, func(i, j int) bool { return in.others[i].rel < in.others[j].rel })
	for _, f := range append(append([]inputFile(nil), in.tables...), in.others...) {
		if f.rel == MediaDir || strings.HasPrefix(f.rel, MediaDir+"/") {
			return nil, &InputError{Source: "parquet", File: f.rel, Row: -1, Offset: -1, Err: fmt.Errorf("the source has a %s/ directory, where the packs would go", MediaDir)}
		}
	}
	if err := in.detectDisk(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// newOnly keeps, for an append, the files that the committed output b
// does not hold (see convert.Base.Holds): new tables are converted, new
// other files copied, and what the output holds is neither read nor
// written again. A save_to_disk dataset, whose state files change as it
// grows, cannot be appended to.
func (in *inputs) newOnly(b *convert.Base) error {
	if b == nil {
		return nil
	}
	if in.disk != nil {
		return &convert.UsageError{Err: errors.New("--append: a dataset saved with save_to_disk rewrites its state files as it grows, so an append cannot tell what is new"),
			Hint: "convert the grown dataset into a new destination, or push it as parquet files (a directory of tables takes --append)"}
	}
	held := func(f inputFile) bool {
		loc := in.root + "/" + f.rel
		if !in.tree.Remote() {
			loc = filepath.Join(in.root, filepath.FromSlash(f.rel))
		}
		return b.Holds(loc)
	}
	in.tables = slices.DeleteFunc(in.tables, held)
	in.others = slices.DeleteFunc(in.others, held)
	return nil
}

// gitDir returns the .git directory an object of a bucket lies under.
func gitDir(rel string) (string, bool) {
	segs := strings.Split(rel, "/")
	for i, s := range segs[:len(segs)-1] {
		if s == ".git" {
			return strings.Join(segs[:i+1], "/"), true
		}
	}
	return "", false
}

// where names the input file f for a Table: the file to read on this
// machine, or its s3:// location.
func (in *inputs) where(f inputFile) string {
	if f.path != "" {
		return f.path
	}
	return in.tree.Path(f.rel)
}

// readMeta reads a metadata file whole (once; later calls share the bytes).
func (in *inputs) readMeta(ctx context.Context, rel string) ([]byte, error) {
	in.mu.Lock()
	b, ok := in.meta[rel]
	in.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := in.tree.ReadFile(ctx, rel, maxMetaBytes)
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	in.meta[rel] = b
	in.mu.Unlock()
	return b, nil
}

// copyFile copies the input file f unchanged to dst (a new file in a
// staging directory): a local one with stage.CopyFile, one in a bucket
// streamed with read-ahead.
func (in *inputs) copyFile(ctx context.Context, f inputFile, dst string) error {
	if f.path != "" {
		return stage.CopyFile(ctx, f.path, dst)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	src, err := in.tree.Open(ctx, f.rel)
	if err != nil {
		return err
	}
	defer src.Close()
	r := srctree.Stream(ctx, src)
	defer r.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, r)
	if err == nil && n != src.Size() {
		err = fmt.Errorf("%s: read %d bytes of %d", in.tree.Path(f.rel), n, src.Size())
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// resolvePath finds the file a Hugging Face path names: relative to the
// dataset root (or, on this machine, an absolute path under it), inside it
// once symlinks are resolved, a regular file, described as the tree's Stat
// describes it.
func (in *inputs) resolvePath(name string) (srctree.Entry, error) {
	if isRemoteCell(name) {
		return srctree.Entry{}, fmt.Errorf("path %q is not a local file (bytes are null and only local files inside the dataset root can be packed; without --strict-remote such a value is kept as it is)", name)
	}
	var rel string
	if in.tree.Remote() {
		rel = path.Clean(name)
		if path.IsAbs(name) || rel == ".." || strings.HasPrefix(rel, "../") {
			return srctree.Entry{}, fmt.Errorf("path %q is outside the dataset root %s", name, in.root)
		}
	} else {
		p := filepath.FromSlash(name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(in.root, p)
		}
		p = filepath.Clean(p)
		base := in.root
		if !srcfile.Within(in.root, p) {
			if !srcfile.Within(in.rootReal, p) {
				return srctree.Entry{}, fmt.Errorf("path %q is outside the dataset root %s", name, in.root)
			}
			base = in.rootReal
		}
		r, err := filepath.Rel(base, p)
		if err != nil {
			return srctree.Entry{}, fmt.Errorf("path %q: %w", name, err)
		}
		rel = filepath.ToSlash(r)
	}
	e, err := in.tree.Stat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return srctree.Entry{}, fmt.Errorf("path %q names no file under %s", name, in.root)
	case errors.Is(err, srcfile.ErrOutside):
		return srctree.Entry{}, fmt.Errorf("path %q %w", name, srcfile.Cause(err))
	case errors.Is(err, srcfile.ErrNotRegular):
		return srctree.Entry{}, fmt.Errorf("path %q is not a regular file", name)
	case err != nil:
		return srctree.Entry{}, fmt.Errorf("path %q: %w", name, srcfile.Cause(err))
	}
	return e, nil
}

// storeFirst returns, for an error met reading a source in a bucket whose
// store failed (a table that did not parse because its bytes did not
// arrive), the store's failure, which names the object: the dataset is not
// at fault, whatever the error that the failure caused says.
func storeFirst(t *srctree.Tree, err error) error {
	if err == nil || t == nil {
		return err
	}
	if serr := t.Err(); serr != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("parquet: %w", serr)
	}
	return err
}

// isRemoteCell reports whether the path of a media value whose bytes are
// null names a file elsewhere: a URL (hf://, https://, s3://, ...) or an
// fsspec chain (zip://a.png::https://...).
func isRemoteCell(name string) bool {
	return strings.Contains(name, "://") || strings.Contains(name, "::")
}
