package stage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// ErrOverlap is wrapped when a destination is its source, lies inside it or
// contains it.
var ErrOverlap = errors.New("destination must be new and disjoint from the source")

// CheckDisjoint returns an error wrapping ErrOverlap when dst and src (the
// directory of src when it is a file), with symlinks resolved, are the same
// directory or one lies inside the other. dst need not exist yet.
func CheckDisjoint(src, dst string) error {
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
	if srcfile.Within(s, d) || srcfile.Within(d, s) {
		return fmt.Errorf("%s and %s: %w", src, dst, ErrOverlap)
	}
	return nil
}

// realAbs returns p as an absolute path with symlinks resolved as far as the
// path exists.
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
