package stage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
)

// CommitMark is the file an append's staging directory holds once every
// file of the new commit is staged in full: from then on the commit only
// moves files into the destination, and a run that finds the mark (after a
// kill) finishes those moves instead of discarding the staged work.
const CommitMark = ".bpconvert-commit"

// BeginAppend prepares a staging directory for an append to final, which
// must hold a committed output (its RecordName). It takes the
// destination's lock like BeginWith, first finishes a commit a killed
// append had begun (FinishAppend), and keeps a stale staging directory
// whose record equals o.Record when o.Resume is set. Work staged under Dir
// at the paths it has under final is moved in by CommitAppend.
func BeginAppend(final string, o Options) (*Stage, error) {
	final = filepath.Clean(final)
	if _, err := os.Stat(filepath.Join(final, RecordName)); err != nil {
		return nil, fmt.Errorf("%s: nothing committed to append to: %w", final, err)
	}
	lock, err := acquire(final)
	if err != nil {
		return nil, err
	}
	st := &Stage{Final: final, Dir: Path(final), lock: lock}
	if _, err := st.finish(); err != nil {
		st.unlock()
		return nil, err
	}
	if err := st.prepare(o); err != nil {
		return nil, err
	}
	return st, nil
}

// FinishAppend finishes, under the destination's lock, a commit that a
// killed append had begun (its staging directory holds CommitMark): it
// reports whether there was one. A destination another run holds is an
// error matching ErrBusy.
func FinishAppend(final string) (bool, error) {
	final = filepath.Clean(final)
	if _, err := os.Stat(filepath.Join(Path(final), CommitMark)); err != nil {
		return false, nil
	}
	lock, err := acquire(final)
	if err != nil {
		return false, err
	}
	st := &Stage{Final: final, Dir: Path(final), lock: lock}
	defer st.unlock()
	return st.finish()
}

// CommitAppend commits an append: it marks the staging directory complete
// (CommitMark), then moves every staged file into the destination,
// replacing the file of the same path there: zip shards first (new
// shards, which nothing refers to yet), then the other files (manifests,
// tables, metadata) deepest first, and the record last, which is the
// commit. A kill on the way leaves the mark, and the next BeginAppend or
// FinishAppend completes the moves. The staging directory is removed and
// the lock released.
func (s *Stage) CommitAppend() error {
	if s.done {
		return errors.New("stage: already finished")
	}
	if err := atomicfile.WriteFile(filepath.Join(s.Dir, CommitMark), nil, 0o644); err != nil {
		return fmt.Errorf("%s: %w", s.Final, err)
	}
	if err := atomicfile.SyncDir(s.Dir); err != nil {
		return fmt.Errorf("%s: %w", s.Final, err)
	}
	if _, err := s.finish(); err != nil {
		return err
	}
	s.done = true
	s.unlock()
	return nil
}

// MakesVisible reports whether the staged file rel (a path relative to the
// destination) makes other files visible to readers once in place: a
// Lance table's version manifest (in its _versions directory), which
// names the new data files. A commit moves such files after every other
// file but the record.
func MakesVisible(rel string) bool {
	return filepath.Base(filepath.Dir(filepath.FromSlash(rel))) == "_versions"
}

// finish moves what a marked staging directory holds into the destination
// (see CommitAppend) and removes it; it reports whether there was a mark.
func (s *Stage) finish() (bool, error) {
	if _, err := os.Stat(filepath.Join(s.Dir, CommitMark)); err != nil {
		return false, nil
	}
	var files []string
	err := filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(s.Dir, p)
		if rel != CommitMark && rel != RecordName {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return true, fmt.Errorf("%s: finishing an append: %w", s.Final, err)
	}
	slices.SortStableFunc(files, func(a, b string) int {
		za, zb := strings.HasSuffix(a, ".zip"), strings.HasSuffix(b, ".zip")
		switch {
		case za != zb && za:
			return -1
		case za != zb:
			return 1
		}
		switch va, vb := MakesVisible(a), MakesVisible(b); {
		case va != vb && va:
			return 1
		case va != vb:
			return -1
		}
		return strings.Count(b, string(filepath.Separator)) - strings.Count(a, string(filepath.Separator))
	})
	files = append(files, RecordName) // last: the commit
	dirs := map[string]bool{}
	for _, rel := range files {
		from, to := filepath.Join(s.Dir, rel), filepath.Join(s.Final, rel)
		if _, err := os.Lstat(from); errors.Is(err, fs.ErrNotExist) {
			continue // moved before a kill
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return true, fmt.Errorf("%s: %w", s.Final, err)
		}
		if rel == RecordName {
			for d := range dirs {
				if err := atomicfile.SyncDir(d); err != nil {
					return true, fmt.Errorf("%s: %w", s.Final, err)
				}
			}
		}
		if err := os.Rename(from, to); err != nil {
			return true, fmt.Errorf("%s: %w", s.Final, err)
		}
		dirs[filepath.Dir(to)] = true
	}
	if err := atomicfile.SyncDir(s.Final); err != nil {
		return true, fmt.Errorf("%s: %w", s.Final, err)
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return true, fmt.Errorf("%s: %w", s.Final, err)
	}
	return true, nil
}
