package wds

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/internal/offheap"
	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/stage"
)

// expectation is what Python's tarfile says a conversion must produce.
type expectation struct {
	members map[string]string // key -> sha256
	dirs    int64
	links   int64
	samples []expectedRow
	fields  []string
}

type expectedRow struct {
	key, shard string
	fields     map[string]string // field -> pack key
}

// expect builds the expectation for shards converted in order. names are
// the shard names as the converter lists them, stems their prefixes.
func expect(t *testing.T, paths, names []string, prefix bool) expectation {
	t.Helper()
	py := pyList(t, paths...)
	e := expectation{members: map[string]string{}}
	fieldSet := map[string]bool{}
	for i, p := range paths {
		sh, ok := py[p]
		if !ok {
			t.Fatalf("tarlist.py did not list %s", p)
		}
		pre := ""
		if prefix {
			pre = ShardStem(p) + "/"
		}
		for _, m := range sh.Members {
			switch m.Type {
			case "dir":
				e.dirs++
			case "file", "link", "symlink":
				if m.SHA256 == nil {
					t.Fatalf("%s: tarfile cannot read %q", p, m.Name)
				}
				e.members[pre+pyStrip(m.Name)] = *m.SHA256
				if m.Type != "file" {
					e.links++
				}
			}
		}
		for _, s := range sh.Samples {
			r := expectedRow{key: pre + s.Key, shard: names[i], fields: map[string]string{}}
			for f, name := range s.Fields {
				r.fields[f] = pre + name
				fieldSet[f] = true
			}
			e.samples = append(e.samples, r)
		}
	}
	for f := range fieldSet {
		e.fields = append(e.fields, f)
	}
	sort.Strings(e.fields)
	return e
}

// checkTable compares samples.parquet, read by arrow-go and by DuckDB, with
// the expected rows.
func checkTable(t *testing.T, out string, e expectation, set *packcore.Set, inline []string) {
	t.Helper()
	path := filepath.Join(out, TableName)
	cols, rows := tableRows(t, path)
	wantCols := append([]string{ColumnKey, ColumnShard}, e.fields...)
	if !slices.Equal(cols, wantCols) {
		t.Fatalf("columns %q, want %q", cols, wantCols)
	}
	if len(rows) != len(e.samples) {
		t.Fatalf("%d rows, want %d", len(rows), len(e.samples))
	}
	for i, want := range e.samples {
		row := rows[i]
		if row[0] == nil || *row[0] != want.key || row[1] == nil || *row[1] != want.shard {
			t.Fatalf("row %d: key/shard %v/%v, want %q/%q", i, deref(row[0]), deref(row[1]), want.key, want.shard)
		}
		for j, f := range e.fields {
			v := row[2+j]
			key, has := want.fields[f]
			if !has {
				if v != nil {
					t.Errorf("row %d (%s): field %q = %q, want null", i, want.key, f, *v)
				}
				continue
			}
			if v == nil {
				t.Errorf("row %d (%s): field %q is null, want %q", i, want.key, f, key)
				continue
			}
			if slices.Contains(inline, f) {
				// The text Python read, and not packed a second time.
				if sha([]byte(*v)) != e.members[key] {
					t.Errorf("row %d: inline field %q = %q, not the member's bytes", i, f, *v)
				}
				if _, err := set.Stat(key); err == nil {
					t.Errorf("row %d: inline member %q is also packed", i, key)
				}
				continue
			}
			k, shardPath, err := packcore.ParseRef(*v)
			if err != nil || k != key || !strings.HasPrefix(shardPath, MediaDir+"/pack-") {
				t.Errorf("row %d: field %q = %q, want a reference to %q (%v)", i, f, *v, key, err)
				continue
			}
			if _, err := set.Stat(*v); err != nil {
				t.Errorf("row %d: reference %q does not resolve: %v", i, *v, err)
			}
		}
	}
	// DuckDB, an independent parquet reader, must see the same table.
	dcols, drows := duckRows(t, path)
	if !slices.Equal(dcols, cols) {
		t.Fatalf("DuckDB columns %q, arrow-go %q", dcols, cols)
	}
	if len(drows) != len(rows) {
		t.Fatalf("DuckDB reads %d rows, arrow-go %d", len(drows), len(rows))
	}
	for i := range rows {
		for j := range rows[i] {
			if deref(rows[i][j]) != deref(drows[i][j]) || (rows[i][j] == nil) != (drows[i][j] == nil) {
				t.Fatalf("row %d column %s: DuckDB %v, arrow-go %v", i, cols[j], deref(drows[i][j]), deref(rows[i][j]))
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// convertCase is one successful conversion.
type convertCase struct {
	name string
	// src is the source argument, relative to the fixture directory
	// unless absolute; shards are the files it names, in order.
	src    string
	shards []string
	opts   Options
}

func TestConvertFixtures(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	g := func(p ...string) []string {
		for i := range p {
			p[i] = filepath.Join(dir, p[i])
		}
		return p
	}
	cases := []convertCase{
		{name: "ustar", src: "good/ustar.tar", shards: g("good/ustar.tar")},
		{name: "gnu", src: "good/gnu.tar", shards: g("good/gnu.tar")},
		{name: "pax", src: "good/pax.tar", shards: g("good/pax.tar")},
		{name: "gnu tar plain", src: "gnutar/plain.tar", shards: g("gnutar/plain.tar")},
		{name: "gnu tar posix gzip", src: "gnutar/posix.tar.gz", shards: g("gnutar/posix.tar.gz")},
		{name: "gnu tar bzip2", src: "gnutar/gnu.tar.bz2", shards: g("gnutar/gnu.tar.bz2")},
		{name: "gnu tar xz", src: "gnutar/gnu.tar.xz", shards: g("gnutar/gnu.tar.xz")},
		{name: "gnu tar zstd", src: "gnutar/gnu.tar.zst", shards: g("gnutar/gnu.tar.zst")},
		{name: "gzip named tar", src: "gnutar/gzip-named.tar", shards: g("gnutar/gzip-named.tar")},
		{name: "multi-member gzip", src: "gnutar/multi.tgz", shards: g("gnutar/multi.tgz")},
		{name: "gnu sparse", src: "gnutar/sparse-gnu.tar", shards: g("gnutar/sparse-gnu.tar")},
		{name: "pax sparse", src: "gnutar/sparse-pax.tar", shards: g("gnutar/sparse-pax.tar")},
		{name: "gzip with zero padding", src: "gnutar/gzip-padded.tgz", shards: g("gnutar/gzip-padded.tgz")},
		{name: "inline fields", src: "good/ustar.tar", shards: g("good/ustar.tar"),
			opts: Options{Inline: []string{"CLS", "json"}}},
		// A symbolic link between inline fields: neither is packed, the
		// link's cell holds its target's text.
		{name: "inline links", src: "good/links.tar", shards: g("good/links.tar"), opts: Options{Inline: []string{"txt"}}},
		{name: "no table", src: "good/gnu.tar", shards: g("good/gnu.tar"), opts: Options{NoTable: true}},
		{name: "duplicates with shard prefix", src: "dups", shards: g("dups/shard-000.tar", "dups/shard-001.tar"),
			opts: Options{ShardPrefix: true}},
		{name: "brace range", src: "dups/shard-{000..001}.tar", shards: g("dups/shard-000.tar", "dups/shard-001.tar"),
			opts: Options{ShardPrefix: true}},
		{name: "patterns joined", src: "good/ustar.tar::good/{gnu,pax}.tar", shards: g("good/ustar.tar", "good/gnu.tar", "good/pax.tar")},
		// Small pack shards: links wait for their target's shard, rollover
		// happens mid-tar, and one member exceeds the cap.
		{name: "small packs", src: "good/gnu.tar::good/pax.tar::gnutar/plain.tar", shards: g("good/gnu.tar", "good/pax.tar", "gnutar/plain.tar"),
			opts: Options{Options: convert.Options{PackOptions: convert.PackOptions{MaxPackBytes: 64 << 10, MaxMembers: 3}}, ShardPrefix: true}},
		{name: "one member per shard", src: "good/pax.tar", shards: g("good/pax.tar"), opts: Options{Options: convert.Options{PackOptions: convert.PackOptions{MaxMembers: 1}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := c.src
			if !strings.Contains(src, "::") && !strings.Contains(src, "{") {
				src = filepath.Join(dir, src)
			} else {
				var parts []string
				for _, p := range strings.Split(src, "::") {
					parts = append(parts, filepath.Join(dir, p))
				}
				src = strings.Join(parts, "::")
			}
			runConversion(t, src, c.shards, c.shards, c.opts)
		})
	}
}

// runConversion converts src and checks the result against Python.
func runConversion(t *testing.T, src string, paths, names []string, opts Options) *Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	// The table's allocator, outside the heap, checked: every block
	// freed, none left mapped.
	off := offheap.NewAllocator()
	mem := memory.NewCheckedAllocator(off)
	opts.src, opts.dst, opts.mem = src, converttest.Dest(t, out), mem
	pc := &countingProgress{}
	res, err := convertShards(context.Background(), opts, pc)
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	mem.AssertSize(t, 0)
	if n := off.Mapped(); n != 0 {
		t.Errorf("%d bytes of the table's blocks still mapped", n)
	}
	if opts.src != "-" {
		names = tableNames(shardList(paths))
	}
	e := expect(t, paths, names, opts.ShardPrefix)
	// Inline fields' members are in the table, not in the pack.
	packed := maps.Clone(e.members)
	if !opts.NoTable {
		for _, r := range e.samples {
			for f, key := range r.fields {
				if slices.Contains(opts.withDefaults().Inline, f) {
					delete(packed, key)
				}
			}
		}
	}
	set := checkPack(t, out, packed)
	if res.Members+res.Links != int64(len(e.members)) || res.Links != e.links || res.Dirs != e.dirs {
		t.Errorf("result counts members %d links %d dirs %d, want %d/%d/%d",
			res.Members, res.Links, res.Dirs, int64(len(e.members))-e.links, e.links, e.dirs)
	}
	if res.Shards != len(paths) || res.Pack.Members != int64(len(packed)) || res.Inline != int64(len(e.members)-len(packed)) {
		t.Errorf("result shards %d pack members %d inline %d, want %d/%d/%d", res.Shards, res.Pack.Members, res.Inline, len(paths), len(packed), len(e.members)-len(packed))
	}
	if s := res.summary; s.Format != "WebDataset" || s.Blobs != int64(len(packed)) || s.Shards != int64(res.Pack.Shards) || s.Dest != out || s.Source != src {
		t.Errorf("summary %+v does not match the result", s)
	}
	if opts.src != "-" {
		var size int64
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			size += fi.Size()
		}
		if pc.bytes != size || pc.totalBytes != size {
			t.Errorf("progress reported %d of %d bytes, want %d", pc.bytes, pc.totalBytes, size)
		}
		if pc.items != res.Members+res.Links {
			t.Errorf("progress reported %d items, want %d members", pc.items, res.Members+res.Links)
		}
	}
	if opts.NoTable {
		if _, err := os.Stat(filepath.Join(out, TableName)); !os.IsNotExist(err) {
			t.Errorf("NoTable wrote %s (%v)", TableName, err)
		}
	} else {
		if res.Samples != int64(len(e.samples)) {
			t.Errorf("result samples %d, want %d", res.Samples, len(e.samples))
		}
		inline := opts.withDefaults().Inline
		checkTable(t, out, e, set, inline)
	}
	// Nothing but the outputs: no spool, no temporary files, no staging.
	checkOnlyOutputs(t, out, !opts.NoTable)
	return res
}

// checkOnlyOutputs fails when out holds anything but the documented files.
func checkOnlyOutputs(t *testing.T, out string, table bool) {
	t.Helper()
	var got []string
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(out, p)
		if rel != "." && !d.IsDir() {
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	for _, g := range got {
		ok := g == MediaDir+"/"+packcore.ManifestName ||
			(strings.HasPrefix(g, MediaDir+"/pack-") && strings.HasSuffix(g, ".zip")) ||
			(table && g == TableName)
		if !ok {
			t.Errorf("unexpected file in output: %s", g)
		}
	}
	if _, err := os.Stat(stage.Path(out)); !os.IsNotExist(err) {
		t.Errorf("staging directory left behind: %v", err)
	}
}

// TestConvertRealShards converts the shards written by the webdataset
// project's own tools, one by one and all together.
func TestConvertRealShards(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(testtool.SharedDir(t), "data", "webdataset")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, e := range ents {
		if !IsShardName(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		all = append(all, p)
		t.Run(e.Name(), func(t *testing.T) {
			runConversion(t, p, []string{p}, []string{p}, Options{})
		})
	}
	if len(all) < 5 {
		t.Fatalf("found %d shards in %s, want at least 5", len(all), dir)
	}
	t.Run("directory with shard prefix", func(t *testing.T) {
		runConversion(t, dir, all, all, Options{ShardPrefix: true})
	})
	t.Run("directory without prefix", func(t *testing.T) {
		// mpdata.tar and tendata.tar both hold samples 000000...: the table
		// cannot hold both, and the error says what to do.
		_, err := convertShards(context.Background(), Options{src: dir, dst: converttest.Dest(t, filepath.Join(t.TempDir(), "out"))}, nil)
		var ie *InputError
		if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidInput) || ie.Hint != HintShardPrefix {
			t.Fatalf("err = %v, want an input error with the --shard-prefix hint", err)
		}
	})
}

// TestConvertStdin reads one shard from standard input.
func TestConvertStdin(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	for _, name := range []string{"good/gnu.tar", "gnutar/gnu.tar.zst"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			res := runConversion(t, "-", []string{p}, []string{"stdin"}, Options{Stdin: f})
			if res.Shards != 1 {
				t.Errorf("shards = %d", res.Shards)
			}
		})
	}
	t.Run("prefix from StdinName", func(t *testing.T) {
		p := filepath.Join(dir, "dups", "shard-000.tar")
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out := filepath.Join(t.TempDir(), "out")
		if _, err := convertShards(context.Background(), Options{src: "-", dst: converttest.Dest(t, out), Stdin: f, StdinName: "train-7", ShardPrefix: true, NoTable: true}, nil); err != nil {
			t.Fatal(err)
		}
		set, err := packcore.OpenSet(filepath.Join(out, MediaDir), packcore.SetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer set.Close()
		if _, err := set.Stat("train-7/000000.jpg"); err != nil {
			t.Errorf("prefixed key missing: %v", err)
		}
	})
}

// TestLinkPaths covers the three ways a link's bytes are copied from the
// pack: at once (the target's pack shard is already complete), once the
// target's shard completes, and at the end of the input, when the writer
// is made to complete the open shard first.
func TestLinkPaths(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	cases := []struct {
		name   string
		src    string
		opts   Options
		paths  [3]int
		shards int
	}{
		// One pack shard: both links of gnu.tar wait for the end, which
		// puts them into a second shard.
		{name: "end of input", src: "good/gnu.tar", paths: [3]int{0, 0, 2}, shards: 2},
		// One member per shard: the targets' shards are complete.
		{name: "at once", src: "good/gnu.tar", opts: Options{Options: convert.Options{PackOptions: convert.PackOptions{MaxMembers: 1}}}, paths: [3]int{2, 0, 0}, shards: 7},
		// 100 KiB shards: c.bin (200 KiB, a shard of its own) completes the
		// shard holding a.txt, which is in place (synced in the background
		// meanwhile) once e.txt completes c.bin's shard: b.txt is copied
		// then. d.bin's target c.bin is still being synced at the end of
		// the input, so the open shard is completed and d.bin follows.
		// Shards: a, c, e + b, d (200 KiB).
		{name: "after the target's shard", src: "good/links.tar", opts: Options{Options: convert.Options{PackOptions: convert.PackOptions{MaxPackBytes: 100 << 10}}}, paths: [3]int{0, 1, 1}, shards: 4},
		// A chain of links to the member just added, all waiting.
		{name: "chain", src: "good/pax.tar", opts: Options{Options: convert.Options{PackOptions: convert.PackOptions{MaxMembers: 1}}}, paths: [3]int{0, 0, 3}, shards: 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.src)
			res := runConversion(t, p, []string{p}, []string{p}, c.opts)
			if res.linkPaths != c.paths || res.Pack.Shards != c.shards {
				t.Errorf("link paths %v in %d shards, want %v in %d", res.linkPaths, res.Pack.Shards, c.paths, c.shards)
			}
		})
	}
}
