// Package stage makes a command's output directory appear all at once: work
// is written into a hidden staging directory beside the destination and
// renamed into place only when the whole run succeeded. A staging directory
// left by a killed run is recognised and removed by the next run; one held by
// a live run is refused. It is not a general transaction manager: it moves
// one new directory into place.
package stage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
)

// ErrExists is wrapped when the destination already exists and is not empty.
var ErrExists = errors.New("destination already exists")

// Stage is a staging directory for one destination.
type Stage struct {
	// Final is the destination path.
	Final string
	// Dir is the staging directory; write the output here.
	Dir  string
	lock *os.File
	done bool
}

// Suffix ends the name of every staging directory.
const Suffix = ".bpconvert-staging"

// Path returns the staging directory used for final.
func Path(final string) string {
	return filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+Suffix)
}

// Begin prepares a staging directory for final, which must not exist or be
// an empty directory. A stale staging directory from an interrupted run is
// removed; one locked by a running process is an error.
func Begin(final string) (*Stage, error) {
	final = filepath.Clean(final)
	if err := CheckDest(final); err != nil {
		return nil, err
	}
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", final, err)
	}
	dir := Path(final)
	if _, err := os.Lstat(dir); err == nil {
		if f, err := os.Open(dir); err == nil {
			lerr := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			f.Close()
			if lerr != nil {
				return nil, fmt.Errorf("%s: another bpconvert run is writing it (%s is locked)", final, dir)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("%s: removing stale staging directory: %w", final, err)
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: %w", final, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s: %w", final, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s: locking staging directory: %w", final, err)
	}
	return &Stage{Final: final, Dir: dir, lock: f}, nil
}

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
	s.lock.Close()
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
	s.lock.Close()
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
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
