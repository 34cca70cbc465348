// Package stage makes a command's output directory appear all at once: work
// is written into a hidden staging directory beside the destination and
// renamed into place only when the whole run succeeded. A staging directory
// left by a killed run is removed by the next run, or, when that run
// produces the same output (its record matches) and asks to resume, kept
// so that complete work in it is reused. Runs on one destination exclude
// each other through a lock file beside it, so two simultaneous starts never
// remove each other's staging directory. It is not a general transaction
// manager: it moves one new directory into place.
package stage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/filelock"
)

// ErrExists is wrapped when the destination already exists and is not empty.
var ErrExists = errors.New("destination already exists")

// Stage is a staging directory for one destination.
type Stage struct {
	// Final is the destination path.
	Final string
	// Dir is the staging directory; write the output here.
	Dir string
	// Resumed is set when Dir is an interrupted run's staging directory,
	// kept because its record matched (see Options).
	Resumed bool
	lock    *os.File
	done    bool
	made    []string // parent directories Begin created, deepest first
}

// Suffix ends the name of every staging directory.
const Suffix = ".bpconvert-staging"

// lockSuffix ends the name of the lock file beside the destination. The
// holder removes it when it finishes; a run that locked a file that has
// since been removed (or replaced) sees that the path no longer names the
// file it holds and starts over, so two runs never both hold "the" lock.
const lockSuffix = ".bpconvert-lock"

// RecordName is the file, inside the staging directory and so inside the
// committed destination, that holds Options.Record.
const RecordName = ".bpconvert.json"

// Path returns the staging directory used for final.
func Path(final string) string {
	return filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+Suffix)
}

// LockPath returns the lock file used for final.
func LockPath(final string) string {
	return filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+lockSuffix)
}

// Options tune BeginWith.
type Options struct {
	// Record describes what the run will produce (source identity, options,
	// tool). It is written to RecordName in the staging directory, so the
	// committed destination says what produced it. Nil writes no record.
	Record []byte
	// Resume keeps a stale staging directory whose record equals Record,
	// instead of removing it.
	Resume bool
}

// Begin prepares a staging directory for final, which must not exist or be
// an empty directory. A stale staging directory from an interrupted run is
// removed; a run holding the destination's lock is an error.
func Begin(final string) (*Stage, error) { return BeginWith(final, Options{}) }

// BeginWith is Begin with options: a record written into the staging
// directory, and resumption of a stale staging directory with the same
// record.
func BeginWith(final string, o Options) (*Stage, error) {
	final = filepath.Clean(final)
	if err := CheckDest(final); err != nil {
		return nil, err
	}
	parent := filepath.Dir(final)
	made := missingDirs(parent)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", final, err)
	}
	lock, err := acquire(final)
	if err != nil {
		removeEmpty(made)
		return nil, err
	}
	// From here on this process owns the destination's staging directory.
	st := &Stage{Final: final, Dir: Path(final), lock: lock, made: made}
	if err := CheckDest(final); err != nil { // a run that just finished
		st.release()
		return nil, err
	}
	if err := st.prepare(o); err != nil {
		return nil, err
	}
	return st, nil
}

// prepare makes the locked stage's directory: a stale one whose record
// equals o.Record is kept when o.Resume is set (Resumed), any other
// removed; a new one gets o.Record. On an error the stage is released.
func (st *Stage) prepare(o Options) error {
	if _, err := os.Lstat(st.Dir); err == nil {
		if o.Resume && o.Record != nil {
			if old, err := os.ReadFile(filepath.Join(st.Dir, RecordName)); err == nil && bytes.Equal(old, o.Record) {
				st.Resumed = true
				return nil
			}
		}
		if err := os.RemoveAll(st.Dir); err != nil {
			st.release()
			return fmt.Errorf("%s: removing stale staging directory: %w", st.Final, err)
		}
	}
	if err := os.Mkdir(st.Dir, 0o755); err != nil {
		st.release()
		return fmt.Errorf("%s: %w", st.Final, err)
	}
	if o.Record != nil {
		if err := atomicfile.WriteFile(filepath.Join(st.Dir, RecordName), o.Record, 0o644); err != nil {
			st.Abort()
			return fmt.Errorf("%s: %w", st.Final, err)
		}
	}
	return nil
}

// acquire takes the destination's lock file, exclusively and without
// waiting. The lock is good only while the path still names the locked
// file: a holder that finished removes it, and a run that locked the
// removed file tries again on a new one.
func acquire(final string) (*os.File, error) {
	path := LockPath(final)
	for attempt := 0; ; attempt++ {
		lock, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", final, err)
		}
		if err := filelock.TryLock(lock); err != nil {
			lock.Close()
			return nil, fmt.Errorf("%s: %w (%s is locked)", final, ErrBusy, path)
		}
		held, herr := lock.Stat()
		named, nerr := os.Stat(path)
		if herr == nil && nerr == nil && os.SameFile(held, named) {
			return lock, nil
		}
		lock.Close()
		if attempt == 100 {
			return nil, fmt.Errorf("%s: %w (%s keeps being replaced)", final, ErrBusy, path)
		}
	}
}

// unlock removes the lock file while still holding it, then releases it.
func (s *Stage) unlock() {
	os.Remove(LockPath(s.Final))
	s.lock.Close()
}

// release unlocks after a failed Begin and removes the parents it created.
func (s *Stage) release() {
	s.unlock()
	removeEmpty(s.made)
}

// missingDirs returns dir and those of its ancestors that do not exist,
// deepest first: what os.MkdirAll(dir) would create.
func missingDirs(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, os.ErrNotExist) {
			return out
		}
		out = append(out, d)
		if filepath.Dir(d) == d {
			return out
		}
	}
}

// removeEmpty removes the directories of dirs (deepest first) that are
// empty, stopping at the first that is not.
func removeEmpty(dirs []string) {
	for _, d := range dirs {
		if os.Remove(d) != nil {
			return
		}
	}
}

// ErrBusy is wrapped when another run holds the destination.
var ErrBusy = errors.New("another bpconvert run is writing it")

// CheckDest returns an error unless final is absent or an empty directory.
func CheckDest(final string) error {
	st, err := os.Lstat(final)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", final, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %w (not a directory)", final, ErrExists)
	}
	d, err := os.Open(final)
	if err != nil {
		return fmt.Errorf("%s: %w", final, err)
	}
	defer d.Close()
	if _, err := d.Readdirnames(1); err != io.EOF {
		return fmt.Errorf("%s: %w and is not empty", final, ErrExists)
	}
	return nil
}

// Commit moves the staging directory into place as the destination.
func (s *Stage) Commit() error {
	if s.done {
		return errors.New("stage: already finished")
	}
	if err := CheckDest(s.Final); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(s.Dir); err != nil {
		return fmt.Errorf("%s: %w", s.Final, err)
	}
	// An empty destination directory is replaced (os.Remove refuses a
	// non-empty one, so nothing can be lost here).
	if err := os.Remove(s.Final); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", s.Final, err)
	}
	if err := os.Rename(s.Dir, s.Final); err != nil {
		return fmt.Errorf("%s: %w", s.Final, err)
	}
	s.done = true
	s.unlock()
	return atomicfile.SyncDir(filepath.Dir(s.Final))
}

// Abort removes the staging directory and everything in it. It does nothing
// after Commit.
func (s *Stage) Abort() {
	if s.done {
		return
	}
	s.done = true
	os.RemoveAll(s.Dir)
	s.unlock()
	removeEmpty(s.made) // parents this run created, left empty
}

// Leave releases the destination and keeps the staging directory as it
// is, for a later run with the same record to resume (see
// Options.Resume); that run removes it should its record differ. It does
// nothing after Commit or Abort.
func (s *Stage) Leave() {
	if s.done {
		return
	}
	s.done = true
	s.unlock()
}

// CopyFile copies the regular file src to a new file dst (creating its
// directory), synced; an existing dst is an error. It checks ctx before it
// starts.
func CopyFile(ctx context.Context, src, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return atomicfile.WriteNew(dst, in)
}
