package stage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommitAndAbort(t *testing.T) {
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
