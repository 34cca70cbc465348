package stage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCommitAppendMovesVersionManifestLast: an append's commit moves a
// Lance version manifest (table.lance/_versions/...) after the data files
// it names, whatever their names sort as. A data file that cannot be moved
// (its destination is a non-empty directory) stops the commit with the
// manifest still staged, so no reader finds a version whose files are
// missing; once the obstacle is gone, FinishAppend moves the rest.
func TestCommitAppendMovesVersionManifestLast(t *testing.T) {
	t.Parallel()
	final := filepath.Join(t.TempDir(), "out")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(final, RecordName), "old")
	st, err := BeginAppend(final, Options{Record: []byte("new")})
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join("table.lance", "_versions", "18446744073709551613.manifest")
	data := filepath.Join("table.lance", "data", "0001.lance")
	write(filepath.Join(st.Dir, manifest), "version 2")
	write(filepath.Join(st.Dir, data), "rows")
	write(filepath.Join(st.Dir, "table.lance", "_transactions", "1-a.txn"), "txn")
	// The data file's destination is a non-empty directory: its move fails.
	write(filepath.Join(final, data, "blocker"), "x")
	if err := st.CommitAppend(); err == nil {
		t.Fatal("the commit succeeded with a data file that cannot be moved")
	}
	if exists(filepath.Join(final, manifest)) {
		t.Fatal("the version manifest was moved before the data file it names")
	}
	st.unlock() // as the process that failed would on exit
	if err := os.RemoveAll(filepath.Join(final, data)); err != nil {
		t.Fatal(err)
	}
	if done, err := FinishAppend(final); !done || err != nil {
		t.Fatalf("FinishAppend: %v, %v", done, err)
	}
	for _, rel := range []string{manifest, data, RecordName} {
		if !exists(filepath.Join(final, rel)) {
			t.Fatalf("%s not committed", rel)
		}
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
