package testtool

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSharedDir checks the run-wide fixture cache: without it nothing is
// shared; with it, of several writers at once one writes (the others wait
// for it and read its directory), a failed write leaves nothing behind and
// the next caller writes again, and another key is another directory.
func TestSharedDir(t *testing.T) {
	t.Setenv(FixtureCacheEnv, "")
	if _, ok, err := sharedDir("k", func(string) error { t.Fatal("wrote without a cache"); return nil }); ok || err != nil {
		t.Fatalf("without a cache: ok %v, %v", ok, err)
	}

	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv(FixtureCacheEnv, cache)
	var writes atomic.Int32
	write := func(dir string) error {
		writes.Add(1)
		time.Sleep(50 * time.Millisecond) // the others reach the lock meanwhile
		return os.WriteFile(filepath.Join(dir, "f"), []byte("made once"), 0o644)
	}
	var wg sync.WaitGroup
	dirs := make([]string, 4)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir, ok, err := sharedDir("k", write)
			if !ok || err != nil {
				t.Errorf("writer %d: ok %v, %v", i, ok, err)
			}
			dirs[i] = dir
		}()
	}
	wg.Wait()
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d writes, want 1", n)
	}
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "f")); err != nil || string(b) != "made once" || d != dirs[0] {
			t.Fatalf("dirs %q: %q, %v", dirs, b, err)
		}
	}

	failed := errors.New("generator failed")
	if _, _, err := sharedDir("bad", func(dir string) error {
		os.WriteFile(filepath.Join(dir, "half"), nil, 0o644)
		return failed
	}); !errors.Is(err, failed) {
		t.Fatalf("failed write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "bad")); !os.IsNotExist(err) {
		t.Fatalf("a failed write left its directory: %v", err)
	}
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".lock" && e.Name() != "k" {
			t.Errorf("left in the cache: %s", e.Name())
		}
	}
	dir, _, err := sharedDir("bad", write)
	if err != nil || writes.Load() != 2 || dir != filepath.Join(cache, "bad") {
		t.Fatalf("retry after a failure: %q, %v, %d writes", dir, err, writes.Load())
	}
}

// TestFixtureKey checks that a fixture's key changes with any file of its
// generator's project, with the script and with the arguments.
func TestFixtureKey(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	os.MkdirAll(filepath.Join(proj, "node_modules"), 0o755)
	os.WriteFile(filepath.Join(proj, "gen.mjs"), []byte("one"), 0o644)
	os.WriteFile(filepath.Join(proj, "package-lock.json"), []byte("{}"), 0o644)
	key := func(script string, args ...string) string {
		t.Helper()
		k, err := fixtureKey(proj, script, args)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key("gen.mjs")
	if base != key("gen.mjs") {
		t.Fatal("the same fixture has two keys")
	}
	others := map[string]string{"script": key("other.mjs"), "args": key("gen.mjs", "320x240")}
	os.WriteFile(filepath.Join(proj, "package-lock.json"), []byte("{ }"), 0o644)
	others["lock file"] = key("gen.mjs")
	os.WriteFile(filepath.Join(proj, "helper.mjs"), []byte("x"), 0o644)
	others["new file"] = key("gen.mjs")
	os.WriteFile(filepath.Join(proj, "node_modules", "dep.js"), []byte("x"), 0o644)
	if key("gen.mjs") != others["new file"] {
		t.Error("a file under node_modules changed the key")
	}
	for what, k := range others {
		if k == base {
			t.Errorf("another %s, the same key", what)
		}
	}
}
