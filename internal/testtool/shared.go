package testtool

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/bpconvert/bpconvert/internal/filelock"
)

// FixtureCacheEnv names the variable that makes fixture directories
// shared by every test process of one run: a directory that `make test`
// creates for the run and removes after it. Without it each test process
// writes its own.
const FixtureCacheEnv = "BPCONVERT_FIXTURE_CACHE"

// sharedWait bounds how long a process waits for another one that is
// writing the same fixture.
const sharedWait = 20 * time.Minute

// sharedDir returns the directory under the run's fixture cache that holds
// what write made of the fixture named by key, calling write (with a new
// directory to fill) only when no process of the run has yet; ok is false
// when no cache is set. One process writes a fixture while the others
// wait on a lock that dies with it; a fixture appears whole, by a rename,
// or not at all.
func sharedDir(key string, write func(dir string) error) (dir string, ok bool, err error) {
	cache := os.Getenv(FixtureCacheEnv)
	if cache == "" {
		return "", false, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", true, err
	}
	dir = filepath.Join(cache, key)
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", true, err
	}
	defer lock.Close()
	deadline := time.Now().Add(sharedWait)
	for {
		err := filelock.TryLock(lock)
		if err == nil {
			break
		}
		if !errors.Is(err, filelock.ErrLocked) || time.Now().After(deadline) {
			return "", true, fmt.Errorf("fixture %s: %w", key, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir, true, nil
	}
	tmp, err := os.MkdirTemp(cache, key+".tmp-")
	if err != nil {
		return "", true, err
	}
	if err := write(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", true, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return "", true, err
	}
	return dir, true, nil
}

// fixtureKey names a fixture by its generator's project files (every
// regular file directly in proj: scripts and lock files), the script and
// its arguments, so that a cache never serves what another version of a
// generator wrote.
func fixtureKey(proj, script string, args []string) (string, error) {
	h := sha256.New()
	entries, err := os.ReadDir(proj)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(proj, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "script\x00%s", script)
	for _, a := range args {
		fmt.Fprintf(h, "\x00%s", a)
	}
	return filepath.Base(proj) + "-" + hex.EncodeToString(h.Sum(nil))[:16], nil
}
