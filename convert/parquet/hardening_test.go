package parquet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestParquetBrokenHFMetadata: a table whose huggingface metadata is not
// JSON (bytes of a DuckDB-written table changed in place, so the footer
// stays valid) is invalid input naming the table and the broken JSON, not
// a table that declares no media features.
func TestParquetBrokenHFMetadata(t *testing.T) {
	t.Parallel()
	src := filepath.Join(fixtureRoot(t), "empty", "b-one.parquet")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, old, new, want string
	}{
		{"broken JSON", `{"info"`, `["info"`, "broken JSON"},
		{"not an object", `{"info"`, `"{info"`, "broken JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := bytes.LastIndex(b, []byte(c.old))
			if i < 0 || len(c.old) != len(c.new) {
				t.Fatalf("%q not in the fixture's footer", c.old)
			}
			bad := bytes.Clone(b)
			copy(bad[i:], c.new)
			dir := t.TempDir()
			p := filepath.Join(dir, "t.parquet")
			if err := os.WriteFile(p, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Inspect(context.Background(), dir, Options{})
			if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "t.parquet") ||
				!strings.Contains(err.Error(), "huggingface") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Inspect: %v; want invalid input naming t.parquet and %q", err, c.want)
			}
		})
	}
}

// TestParquetSourceNotRegular: a FIFO given as the table is refused at
// once, naming it.
func TestParquetSourceNotRegular(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "t.parquet")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Inspect(context.Background(), p, Options{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "is a FIFO") {
			t.Fatalf("Inspect: %v; want a FIFO refused by name", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Inspect blocked on a FIFO")
	}
}
