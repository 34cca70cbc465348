package stage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestCommitAndAbort(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	final := filepath.Join(root, "out")
	st, err := Begin(final)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dir != filepath.Join(root, ".out"+Suffix) {
		t.Fatalf("staging at %s", st.Dir)
	}
	os.WriteFile(filepath.Join(st.Dir, "f"), []byte("x"), 0o644)
	if _, err := os.Stat(final); !os.IsNotExist(err) {
		t.Fatal("destination visible before commit")
	}
	if err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	st.Abort() // no effect after commit
	if b, err := os.ReadFile(filepath.Join(final, "f")); err != nil || string(b) != "x" {
		t.Fatalf("committed file: %v", err)
	}
	if _, err := os.Stat(st.Dir); !os.IsNotExist(err) {
		t.Fatal("staging directory survived commit")
	}

	final2 := filepath.Join(root, "out2")
	st2, err := Begin(final2)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(st2.Dir, "f"), []byte("x"), 0o644)
	st2.Abort()
	if _, err := os.Stat(st2.Dir); !os.IsNotExist(err) {
		t.Fatal("abort left the staging directory")
	}
	if _, err := os.Stat(final2); !os.IsNotExist(err) {
		t.Fatal("abort created the destination")
	}
}

func TestDestinationRules(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	full := filepath.Join(root, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	if _, err := Begin(full); !errors.Is(err, ErrExists) {
		t.Fatalf("non-empty destination: %v", err)
	}
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := Begin(file); !errors.Is(err, ErrExists) {
		t.Fatalf("file destination: %v", err)
	}
	empty := filepath.Join(root, "empty")
	os.MkdirAll(empty, 0o755)
	st, err := Begin(empty)
	if err != nil {
		t.Fatalf("empty destination: %v", err)
	}
	if err := st.Commit(); err != nil {
		t.Fatalf("commit over an empty directory: %v", err)
	}
}

func TestStaleAndLiveStaging(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	final := filepath.Join(root, "out")
	// A killed run leaves an unlocked staging directory behind.
	stale := Path(final)
	os.MkdirAll(filepath.Join(stale, "media"), 0o755)
	os.WriteFile(filepath.Join(stale, "media", "junk"), []byte("half"), 0o644)
	st, err := Begin(final)
	if err != nil {
		t.Fatalf("stale staging: %v", err)
	}
	if _, err := os.Stat(filepath.Join(st.Dir, "media", "junk")); !os.IsNotExist(err) {
		t.Fatal("stale content kept")
	}
	// While st holds its lock, a second run is refused.
	if _, err := Begin(final); err == nil || !strings.Contains(err.Error(), "another bpconvert run") {
		t.Fatalf("live staging: %v", err)
	}
	st.Abort()
	st3, err := Begin(final)
	if err != nil {
		t.Fatalf("after abort: %v", err)
	}
	st3.Abort()
}

// TestSimultaneousStarts races runs on one destination: each either commits,
// finds the destination taken (ErrBusy while another runs, ErrExists after
// one committed), and never removes another's staging directory. Exactly
// one commits per round, and no lock file or staging directory is left.
func TestSimultaneousStarts(t *testing.T) {
	t.Parallel()
	for round := range 40 {
		root := t.TempDir()
		final := filepath.Join(root, "out")
		const runs = 6
		errs := make(chan error, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := Begin(final)
				if err != nil {
					errs <- err
					return
				}
				name := filepath.Join(st.Dir, fmt.Sprintf("f%d", i))
				if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
					errs <- fmt.Errorf("staging directory taken away: %w", err)
					st.Abort()
					return
				}
				errs <- st.Commit()
			}()
		}
		wg.Wait()
		close(errs)
		commits := 0
		for err := range errs {
			switch {
			case err == nil:
				commits++
			case errors.Is(err, ErrBusy), errors.Is(err, ErrExists):
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if commits != 1 {
			t.Fatalf("round %d: %d runs committed", round, commits)
		}
		ents, _ := os.ReadDir(root)
		if len(ents) != 1 || ents[0].Name() != "out" {
			t.Fatalf("round %d: left in %s: %v", round, root, ents)
		}
		if got, _ := os.ReadDir(final); len(got) != 1 {
			t.Fatalf("round %d: destination holds %v", round, got)
		}
	}
}

// TestLockReplaced checks that a run which locked a lock file that its
// holder has since removed does not count it as held.
func TestLockReplaced(t *testing.T) {
	t.Parallel()
	final := filepath.Join(t.TempDir(), "out")
	st, err := Begin(final)
	if err != nil {
		t.Fatal(err)
	}
	early, err := os.Open(LockPath(final)) // a run that opened the file before the holder finished
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	st.Abort()
	if _, err := os.Stat(LockPath(final)); !os.IsNotExist(err) {
		t.Fatalf("lock file left after abort: %v", err)
	}
	st2, err := Begin(final)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Abort()
	// The early opener now locks the removed file: Begin must not accept it.
	if err := syscall.Flock(int(early.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the removed file should be lockable: %v", err)
	}
	if _, err := Begin(final); !errors.Is(err, ErrBusy) {
		t.Fatalf("second run while st2 holds the new lock: %v", err)
	}
}

// TestAbortRemovesCreatedParents: a destination under directories that do
// not exist yet gets them; an aborted run removes those it created (when
// empty) and keeps the ones that were there.
func TestAbortRemovesCreatedParents(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	final := filepath.Join(root, "deep", "a", "b", "out")
	st, err := Begin(final)
	if err != nil {
		t.Fatal(err)
	}
	st.Abort()
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Fatalf("left in %s: %v", root, ents)
	}
	// A parent that gained other content is kept.
	st, err = Begin(final)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "deep", "keep"), nil, 0o644)
	st.Abort()
	if _, err := os.Stat(filepath.Join(root, "deep", "keep")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "deep", "a")); !os.IsNotExist(err) {
		t.Fatalf("deep/a kept: %v", err)
	}
	// After a commit, the parents hold the output and stay.
	st, err = Begin(final)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(final); err != nil {
		t.Fatal(err)
	}
}

// TestLeave: Leave keeps the staging directory and its files, releases the
// lock (its file is gone), and a run with the same record resumes it while
// one with another record starts clean.
func TestLeave(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		record  string
		resumed bool
	}{{"same record", "r1", true}, {"other record", "r2", false}} {
		t.Run(tc.name, func(t *testing.T) {
			final := filepath.Join(t.TempDir(), "out")
			st, err := BeginWith(final, Options{Record: []byte("r1"), Resume: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(st.Dir, "shard"), []byte("kept"), 0o644); err != nil {
				t.Fatal(err)
			}
			st.Leave()
			st.Abort() // after Leave: does nothing
			if _, err := os.Stat(LockPath(final)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("lock file after Leave: %v", err)
			}
			again, err := BeginWith(final, Options{Record: []byte(tc.record), Resume: true})
			if err != nil {
				t.Fatal(err)
			}
			defer again.Abort()
			_, err = os.Stat(filepath.Join(again.Dir, "shard"))
			if again.Resumed != tc.resumed || (err == nil) != tc.resumed {
				t.Fatalf("resumed %v, staged file kept: %v", again.Resumed, err)
			}
		})
	}
}
