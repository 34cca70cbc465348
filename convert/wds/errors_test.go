package wds

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/converttest"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/stage"
)

// anyMember accepts an error naming any member, or none.
const anyMember = "*"

// offsetFromPython asks for the offset Python's tarfile reports for the
// last member of the given name.
const offsetFromPython = -2

func TestConvertRefusesBadShards(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	cases := []struct {
		name   string
		src    string // relative to the fixture directory
		opts   Options
		member string
		offset int64 // offsetFromPython, an exact value, or -1 for "any"
		reason string
		is     error // besides ErrInvalidInput
		hint   string
	}{
		{name: "duplicate within a shard", src: "bad/dup-within.tar", member: "a.jpg", offset: offsetFromPython,
			reason: `duplicate key "a.jpg": the shard holds two members of that name`, is: packcore.ErrDuplicateKey},
		{name: "duplicate across shards", src: "dups", member: "000000.jpg", offset: 0,
			reason: `duplicate key "000000.jpg": an earlier shard holds`, is: packcore.ErrDuplicateKey, hint: HintShardPrefix},
		{name: "dot dot", src: "bad/dotdot.tar", member: "../evil.txt", offset: offsetFromPython,
			reason: "unsafe member name", is: packcore.ErrInvalidKey},
		{name: "absolute", src: "bad/absolute.tar", member: "/abs/evil.txt", offset: offsetFromPython,
			reason: "unsafe member name: absolute path", is: packcore.ErrInvalidKey},
		{name: "backslash", src: "bad/backslash.tar", member: `a\b.txt`, offset: offsetFromPython,
			reason: "unusable member name", is: packcore.ErrInvalidKey},
		{name: "symlink out of the shard", src: "bad/symlink-out.tar", member: "b.txt", offset: offsetFromPython,
			reason: `symbolic link to "../../etc/passwd" points outside the shard`},
		{name: "absolute symlink", src: "bad/symlink-abs.tar", member: "b.txt", offset: offsetFromPython,
			reason: `symbolic link to "/etc/passwd" points outside the shard`},
		{name: "symlink to a later member", src: "bad/symlink-forward.tar", member: "b.txt", offset: offsetFromPython,
			reason: "not a regular member earlier in this shard"},
		{name: "hard link to nothing", src: "bad/hardlink-missing.tar", member: "b.txt", offset: offsetFromPython,
			reason: `hard link to "nope.txt", which is not a regular member`},
		{name: "fifo", src: "bad/fifo.tar", member: "pipe.txt", offset: offsetFromPython, reason: "FIFO members cannot be converted"},
		{name: "character device", src: "bad/chardev.tar", member: "null.dev", offset: offsetFromPython,
			reason: "character device members cannot be converted"},
		{name: "sample split", src: "bad/split-sample.tar", member: "a.cls", offset: offsetFromPython,
			reason: `sample "a" reappears after other samples`, hint: HintSortTar},
		{name: "field repeated", src: "bad/dup-field.tar", member: "a.JPG", offset: offsetFromPython,
			reason: `field "jpg" appears twice in sample "a"`},
		{name: "truncated in a payload", src: "bad/truncated.tar", member: "000001.bin", offset: 51536,
			reason: "truncated: unexpected EOF", hint: HintTruncated},
		{name: "no end-of-archive marker", src: "bad/no-end.tar", offset: 103936,
			reason: `truncated: the shard ends after member "000001.bin" without the end-of-archive marker`, hint: HintTruncated},
		// Where a damaged stream fails depends on how much the decompressor
		// decodes ahead, so any member (or none) may be named.
		{name: "corrupt gzip", src: "bad/corrupt.tar.gz", member: anyMember, offset: -1, reason: "corrupt gzip stream"},
		{name: "gzip cut short", src: "bad/cut.tar.gz", member: anyMember, offset: -1, reason: "truncated gzip stream", hint: HintTruncated},
		{name: "not a tar", src: "bad/not-a-tar.tar", offset: 0, reason: "not a tar archive"},
		{name: "empty file", src: "bad/empty.tar", offset: 0, reason: "empty shard", hint: HintTruncated},
		{name: "missing shard in a pattern", src: "dups/shard-{000..002}.tar", offset: -1, reason: "no such file", is: fs.ErrNotExist},
		{name: "inline field too large", src: "good/gnu.tar", opts: Options{Inline: []string{"bin"}, InlineMax: 1 << 20},
			member: "big/000000.bin", offset: offsetFromPython, reason: `field "bin" is stored inline, but this member holds 3.0 MiB`},
		{name: "inline field not text", src: "good/ustar.tar", opts: Options{Inline: []string{"jpg"}},
			member: "data/000000.jpg", offset: offsetFromPython, reason: "not UTF-8 text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(dir, c.src)
			shard := src
			if fi, err := os.Stat(src); err == nil && fi.IsDir() {
				shard = filepath.Join(src, "shard-001.tar")
			} else if strings.Contains(c.src, "{") {
				shard = filepath.Join(dir, "dups", "shard-002.tar")
			}
			want := c.offset
			if want == offsetFromPython {
				want = -1
				for _, m := range pyList(t, shard)[shard].Members {
					if m.Name == c.member {
						want = m.Offset
					}
				}
				if want < 0 {
					t.Fatalf("tarlist.py does not list %q", c.member)
				}
			}
			out := filepath.Join(t.TempDir(), "out")
			opts := c.opts
			opts.src, opts.dst = src, converttest.Dest(t, out)
			_, err := convertShards(context.Background(), opts, nil)
			checkInputError(t, err, shard, c.member, want, c.reason, c.is, c.hint)
			if _, serr := os.Stat(out); !errors.Is(serr, fs.ErrNotExist) {
				t.Errorf("output exists after a failed run: %v", serr)
			}
			if _, serr := os.Stat(stage.Path(out)); !errors.Is(serr, fs.ErrNotExist) {
				t.Errorf("staging directory left after a failed run: %v", serr)
			}

			// The plan finds the same problem without writing anything.
			opts.dst = converttest.Dest(t, filepath.Join(t.TempDir(), "plan-out"))
			p, err := inspect(context.Background(), opts, nil)
			checkInputError(t, err, shard, c.member, want, c.reason, c.is, c.hint)
			if c.is != fs.ErrNotExist && len(p.Warnings) == 0 {
				t.Errorf("plan lists no warning for %v", err)
			}
			if _, serr := os.Stat(opts.dst.Location()); !errors.Is(serr, fs.ErrNotExist) {
				t.Errorf("Inspect created the destination: %v", serr)
			}
		})
	}
}

// checkInputError checks an error's type, location, reason and hint.
func checkInputError(t *testing.T, err error, shard, member string, offset int64, reason string, is error, hint string) {
	t.Helper()
	var ie *InputError
	if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("err = %v (%T), want an *InputError", err, err)
	}
	if ie.File != shard || (ie.Member != member && member != anyMember) {
		t.Errorf("error locates shard %q member %q, want %q %q", ie.File, ie.Member, shard, member)
	}
	if offset >= 0 && ie.Offset != offset {
		t.Errorf("error offset %d, want %d", ie.Offset, offset)
	}
	if !strings.Contains(err.Error(), reason) {
		t.Errorf("error %q does not say %q", err, reason)
	}
	if is != nil && !errors.Is(err, is) {
		t.Errorf("error %v does not wrap %v", err, is)
	}
	if ie.Hint != hint || Hint(err) != hint {
		t.Errorf("hint %q, want %q", ie.Hint, hint)
	}
	if !strings.HasPrefix(err.Error(), "wds: ") {
		t.Errorf("error %q lacks the package prefix", err)
	}
}

// TestNoTableOnlyWarns: without the table, WebDataset's grouping problems
// are reported, not fatal.
func TestNoTableOnlyWarns(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	for _, name := range []string{"split-sample.tar", "dup-field.tar"} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			opts := Options{src: filepath.Join(dir, "bad", name), dst: converttest.Dest(t, out), NoTable: true}
			res, err := convertShards(context.Background(), opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Members != 3 && res.Members != 2 {
				t.Errorf("members = %d", res.Members)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "WebDataset") {
				t.Errorf("warnings = %q, want one about WebDataset's grouping", res.Warnings)
			}
			opts.dst = converttest.Dest(t, filepath.Join(t.TempDir(), "plan"))
			p, err := inspect(context.Background(), opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			// dup-field.tar's a.JPG and a.jpg are case twins too, which
			// the plan also warns of (TestPlanWarnsOfTwins).
			var grouping []string
			for _, w := range p.Warnings {
				if !strings.Contains(w, "differ only in case") {
					grouping = append(grouping, w)
				}
			}
			if len(grouping) != 1 {
				t.Errorf("plan warnings = %q, want one about grouping", p.Warnings)
			}
		})
	}
}

// cancelAfter cancels a context once n members were reported.
type cancelAfter struct {
	countingProgress
	n      int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Add(items, bytes int64) {
	c.countingProgress.Add(items, bytes)
	if c.items >= c.n {
		c.cancel()
	}
}

func TestConvertCancelled(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := filepath.Join(t.TempDir(), "out")
	pc := &cancelAfter{n: 3, cancel: cancel}
	_, err := convertShards(ctx, Options{src: filepath.Join(dir, "good", "ustar.tar"), dst: converttest.Dest(t, out)}, pc)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("output exists after cancellation: %v", err)
	}
	if _, err := os.Stat(stage.Path(out)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("staging directory left after cancellation: %v", err)
	}
}

// TestConvertRefusesUsedDestination: existing output is never touched.
func TestConvertRefusesUsedDestination(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	out := t.TempDir()
	keep := filepath.Join(out, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := convertShards(context.Background(), Options{src: filepath.Join(dir, "good", "ustar.tar"), dst: converttest.Dest(t, out)}, nil)
	if !errors.Is(err, stage.ErrExists) {
		t.Fatalf("err = %v, want stage.ErrExists", err)
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Errorf("existing file changed: %q %v", b, err)
	}
}

// TestStaleStagingRemoved: a killed run leaves only its staging directory
// (no lock holder), which the next run removes before converting.
func TestStaleStagingRemoved(t *testing.T) {
	t.Parallel()
	dir := fixtures(t)
	out := filepath.Join(t.TempDir(), "out")
	stale := stage.Path(out)
	if err := os.MkdirAll(filepath.Join(stale, MediaDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, MediaDir, ".pack-0000.zip.123.tmp"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, spoolName), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "good", "ustar.tar")
	runConversion(t, src, []string{src}, []string{src}, Options{})
	if _, err := convertShards(context.Background(), Options{src: src, dst: converttest.Dest(t, out)}, nil); err != nil {
		t.Fatalf("re-run after a stale staging directory: %v", err)
	}
	checkOnlyOutputs(t, out, true)
}

func TestOptionsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"inline without table", Options{src: "x.tar", dst: converttest.Dest(t, "y"), NoTable: true, Inline: []string{"cls"}}, "need the samples table"},
		{"inline a column name", Options{src: "x.tar", dst: converttest.Dest(t, "y"), Inline: []string{"__key__"}}, "not a field name"},
		{"no source", Options{dst: converttest.Dest(t, "y")}, "no source"},
		{"stdin without reader", Options{src: "-", dst: converttest.Dest(t, "y")}, "no reader"},
		{"unbalanced braces", Options{src: "shards/{000..009.tar", dst: converttest.Dest(t, "y")}, "unbalanced braces"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := convertShards(context.Background(), c.opts, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Convert: err = %v, want %q", err, c.want)
			}
			_, err = inspect(context.Background(), c.opts, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Inspect: err = %v, want %q", err, c.want)
			}
		})
	}
}
