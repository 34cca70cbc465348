package wds

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/plan"
)

var update = flag.Bool("update", false, "rewrite the golden plans in testdata/")

func TestInspectFixtures(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	cases := []struct {
		name   string
		src    string
		shards []string
		opts   Options
		comp   string
	}{
		{name: "ustar", src: "good/ustar.tar", shards: []string{"good/ustar.tar"}, comp: "plain tar"},
		{name: "pax", src: "good/pax.tar", shards: []string{"good/pax.tar"}, comp: "plain tar"},
		{name: "posix gzip", src: "gnutar/posix.tar.gz", shards: []string{"gnutar/posix.tar.gz"}, comp: "gzip"},
		{name: "zstd", src: "gnutar/gnu.tar.zst", shards: []string{"gnutar/gnu.tar.zst"}, comp: "zstd"},
		{name: "dups with prefix", src: "dups", shards: []string{"dups/shard-000.tar", "dups/shard-001.tar"},
			opts: Options{ShardPrefix: true}, comp: "plain tar"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var paths []string
			for _, s := range c.shards {
				paths = append(paths, filepath.Join(dir, s))
			}
			e := expect(t, paths, paths, c.opts.ShardPrefix)
			opts := c.opts
			opts.src, opts.dst = filepath.Join(dir, c.src), converttest.Dest(t, filepath.Join(t.TempDir(), "out"))
			p, err := inspect(context.Background(), opts, nil)
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			if len(p.Warnings) != 0 {
				t.Errorf("warnings: %q", p.Warnings)
			}
			want := plan.Counts{{Name: "shards", N: int64(len(paths))}, {Name: "members", N: int64(len(e.members))},
				{Name: "samples", N: int64(len(e.samples))}}
			if !equalCounts(p.Source.Counts, want) {
				t.Errorf("counts %v, want %v", p.Source.Counts, want)
			}
			if len(p.Source.Details) == 0 || p.Source.Details[0] != c.comp {
				t.Errorf("details %q, want %q first", p.Source.Details, c.comp)
			}
			var fields []string
			var members int64
			for _, en := range p.Entries {
				if en.Kind == "tar members" && en.Name != "members in no sample" {
					fields = append(fields, en.Name)
				}
				if en.Evidence != nil {
					members += en.Evidence.Values
				}
			}
			if strings.Join(fields, ",") != strings.Join(e.fields, ",") || members != int64(len(e.members)) {
				t.Errorf("entries for fields %q with %d members, want %q and %d", fields, members, e.fields, len(e.members))
			}
			// --dry-run --json: the plan reads back, and nothing was written.
			var buf bytes.Buffer
			if err := plan.RenderJSON(&buf, p); err != nil {
				t.Fatal(err)
			}
			back, err := plan.ParseJSON(&buf)
			if err != nil {
				t.Fatalf("plan JSON does not read back: %v", err)
			}
			if back.Source.Format != "WebDataset" || len(back.Entries) != len(p.Entries) {
				t.Errorf("plan JSON read back as %+v", back.Source)
			}
			if _, err := os.Stat(opts.dst.Location()); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Inspect wrote the destination: %v", err)
			}
		})
	}
}

func equalCounts(a, b plan.Counts) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestInspectStdin: standard input is not touched by the plan.
func TestInspectStdin(t *testing.T) {
	t.Parallel()
	r := strings.NewReader("not read")
	p, err := inspect(context.Background(), Options{src: "-", Stdin: r, dst: converttest.Dest(t, filepath.Join(t.TempDir(), "out"))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != len("not read") {
		t.Errorf("Inspect read %d bytes of standard input", len("not read")-r.Len())
	}
	if p.Source.Bytes != -1 || len(p.Source.Counts) != 1 {
		t.Errorf("plan for stdin claims counts: %+v", p.Source)
	}
	if !strings.Contains(strings.Join(p.Notes, " "), "standard input") {
		t.Errorf("notes do not explain standard input: %q", p.Notes)
	}
}

// TestHeaderPassSeeks: on a plain tar file the header pass reads headers
// only, seeking past payloads.
func TestHeaderPassSeeks(t *testing.T) {
	t.Parallel()
	p := filepath.Join(fixtures(t), "good", "pax.tar")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	src := shardSource{Name: p, Path: p, Stem: "pax", Size: fi.Size()}
	for _, seek := range []bool{true, false} {
		s, err := openShard(context.Background(), src, nil, seek)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			_, _, err := s.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		s.Close()
		if n != 6 {
			t.Errorf("seek=%v: %d members, want 6", seek, n)
		}
		if seek && s.raw.read > 64<<10 {
			t.Errorf("header pass read %d bytes of a %d-byte shard", s.raw.read, fi.Size())
		}
		if !seek && s.raw.read < fi.Size()-10240 {
			t.Errorf("sequential pass read only %d bytes of %d", s.raw.read, fi.Size())
		}
	}
}

// TestInspectGolden renders the plan of the real shards (fixed files) as
// text and JSON and compares it with testdata/plan-real.{txt,json};
// go test -run TestInspectGolden -update rewrites them.
func TestInspectGolden(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(testtool.SharedDir(t), "data", "webdataset")
	dst := filepath.Join(t.TempDir(), "out")
	p, err := inspect(context.Background(), Options{src: dir, dst: converttest.Dest(t, dst), ShardPrefix: true, Inline: []string{"cls"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := plan.RenderText(&txt, p); err != nil {
		t.Fatal(err)
	}
	if err := plan.RenderJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer(dir, "SRC", dst, "DST")
	for name, got := range map[string]string{"plan-real.txt": r.Replace(txt.String()), "plan-real.json": r.Replace(js.String())} {
		golden(t, filepath.Join("testdata", name), got)
	}
}

// golden compares got with a golden file, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines that differ, with their numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  - %s\n  + %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
