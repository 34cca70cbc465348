package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64 // 0: refused
	}{
		{"4GiB", 4 << 30},
		{"512MiB", 512 << 20},
		{"1.5GiB", 3 << 29},
		{"1.5GB", 1_500_000_000},
		{"100MB", 100_000_000},
		{"100mb", 100_000_000},
		{"2 KiB", 2048},
		{"64K", 64 << 10},
		{"1000", 1000},
		{"1000B", 1000},
		{"0.5KiB", 512},
		{"1.1GB", 1_100_000_000},
		{"0", 0},
		{"-1", 0},
		{"1.5", 0}, // a fraction of a byte
		{"0.0001KB", 0},
		{"1e9", 0},
		{"GiB", 0},
		{".5GiB", 0},
		{"1.5XB", 0},
		{"99999999999TiB", 0},
		{"", 0},
	} {
		got, err := parseSize(tc.in)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("parseSize(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"verfy", "verify"},
		{"convert-wsd", "convert-wds"},
		{"convert-parqet", "convert-parquet"},
		{"Pack", "pack"},
		{"lance-insp", "lance-inspect"},
		{"frobnicate", ""},
	} {
		if got := suggest(tc.in); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestHelpVersionSuggestions runs the ways people ask for help and the
// version, and a typo.
func TestHelpVersionSuggestions(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		r := bp(t, args...)
		// The test binary is an untagged build (see TestOneVersion).
		if r.code != 0 || !strings.HasPrefix(r.stdout, "bpconvert (devel) (go") {
			t.Errorf("%v: exit %d %q %s", args, r.code, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{{"version", "--help"}, {"help", "version"}} {
		if r := bp(t, args...); r.code != 0 || !strings.Contains(r.stdout, "Usage: bpconvert version") {
			t.Errorf("%v: exit %d %q", args, r.code, r.stdout)
		}
	}
	r := bp(t, "help", "convert-wds")
	if r.code != 0 || !strings.Contains(r.stdout, "Usage: bpconvert convert-wds") {
		t.Fatalf("help convert-wds: exit %d %q", r.code, r.stdout)
	}
	// The size flag's default appears once, in the units people write.
	if n := strings.Count(r.stdout, "(default 4GiB)"); n != 1 || strings.Contains(r.stdout, "4294967296") {
		t.Errorf("help convert-wds shows the pack size default %d times:\n%s", n, r.stdout)
	}
	// Converters cap shards at convert.DefaultMaxMembers members; pack at
	// the most a shard can hold.
	if n := strings.Count(r.stdout, fmt.Sprintf("(default %d)", convert.DefaultMaxMembers)); n != 1 {
		t.Errorf("help convert-wds shows the member cap default %d times:\n%s", n, r.stdout)
	}
	if r := bp(t, "help", "pack"); strings.Count(r.stdout, "(default 65535)") != 1 {
		t.Errorf("help pack lost its member default:\n%s", r.stdout)
	}
	r = bp(t, "convert-wsd", "a", "b")
	if r.code != 2 || !strings.Contains(r.stderr, "did you mean bpconvert convert-wds?") {
		t.Errorf("typo: exit %d %s", r.code, r.stderr)
	}
	r = bp(t, "help", "verfy")
	if r.code != 2 || !strings.Contains(r.stderr, "did you mean bpconvert verify?") {
		t.Errorf("help with a typo: exit %d %s", r.code, r.stderr)
	}
	dst := t.TempDir() + "/out"
	r = bp(t, "convert-wds", "missing.tar", dst, "--max-pack-bytes", "1.5GB", "--dry-run")
	if strings.Contains(r.stderr, "invalid size") {
		t.Errorf("1.5GB refused: %s", r.stderr)
	}
	r = bp(t, "convert-wds", "missing.tar", dst, "--max-pack-bytes", "1.5XB", "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "invalid size") {
		t.Errorf("1.5XB: exit %d %s", r.code, r.stderr)
	}
}
