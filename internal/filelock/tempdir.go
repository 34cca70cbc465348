package filelock

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// staleAfter is how old an unlocked directory of MkdirTemp's must be to be
// taken for one a killed process left: younger, it may be one just made
// and not yet locked.
const staleAfter = time.Minute

// MkdirTemp makes a new directory under root (made if absent; the system's
// temporary directory when root is "") whose name starts with prefix, as
// os.MkdirTemp does, and locks it until release, which removes it. It
// first removes the directories of the same prefix that processes killed
// before their clean-up left there: no longer locked, and older than
// staleAfter.
func MkdirTemp(root, prefix string) (dir string, release func(), err error) {
	if root == "" {
		root = os.TempDir()
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		return "", nil, err
	}
	sweep(root, prefix, time.Now().Add(-staleAfter))
	dir, err = os.MkdirTemp(root, prefix)
	if err != nil {
		return "", nil, err
	}
	lock, err := LockDir(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() { lock.Close(); os.RemoveAll(dir) }, nil
}

// sweep removes the directories under root whose names start with prefix,
// that no process holds locked and that were last changed before cutoff.
// It is best effort: what it cannot read or remove stays.
func sweep(root, prefix string, cutoff time.Time) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if info, err := e.Info(); err != nil || info.ModTime().After(cutoff) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		lock, err := LockDir(dir)
		if err != nil {
			continue // held by a live process, or not ours to judge
		}
		lock.Close()
		os.RemoveAll(dir)
	}
}
