package wds

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
	"github.com/bpconvert/bpconvert/packcore"
)

// toolsPresent reports whether every named program is on PATH.
func toolsPresent(names ...string) bool {
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			return false
		}
	}
	return true
}

// FuzzExpandBraces: expansion never panics, stays within MaxExpansions,
// fails only with ErrBadPattern, and leaves brace-free patterns alone.
func FuzzExpandBraces(f *testing.F) {
	for _, s := range []string{
		"shards/train-{000000..000099}.tar", "{a,b{c,d}}e", "{07..10}", "{a..g..2}", "{2..-1}",
		`\{1,2}`, "{1{2,3}", "{,}", "{1..a}", "a::b", "{Z..a}", "{9..1..3}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		if len(pattern) > 64 {
			return // longer patterns only multiply the work
		}
		got, err := ExpandBraces(pattern)
		if err != nil {
			if !errors.Is(err, ErrBadPattern) {
				t.Fatalf("ExpandBraces(%q): error %v does not wrap ErrBadPattern", pattern, err)
			}
			return
		}
		if len(got) == 0 || len(got) > MaxExpansions {
			t.Fatalf("ExpandBraces(%q) gave %d names", pattern, len(got))
		}
		if !strings.ContainsAny(pattern, `{}\`) && (len(got) != 1 || got[0] != pattern) {
			t.Fatalf("ExpandBraces(%q) = %q, want the pattern itself", pattern, got)
		}
		if strings.Count(pattern, "{") == 0 && strings.Count(pattern, "}") == 0 && len(got) != 1 {
			t.Fatalf("ExpandBraces(%q) = %q, want one name", pattern, got)
		}
	})
}

// FuzzMemberKey: a key that memberKey accepts is one packcore stores, and
// never leads out of the shard.
func FuzzMemberKey(f *testing.F) {
	for _, s := range []string{"./a/b.jpg", "../x", "/abs", "a//b", "ünï/č.txt", "./", "a\\b", "a::b"} {
		f.Add(s, "")
		f.Add(s, "train-0001")
	}
	f.Fuzz(func(t *testing.T, name, prefix string) {
		key, err := memberKey(name, prefix)
		if err != nil {
			return
		}
		if verr := packcore.ValidateKey(key); verr != nil {
			t.Fatalf("memberKey(%q, %q) = %q, which packcore refuses: %v", name, prefix, key, verr)
		}
		for _, el := range strings.Split(key, "/") {
			if el == ".." || el == "." || el == "" {
				t.Fatalf("memberKey(%q, %q) = %q holds element %q", name, prefix, key, el)
			}
		}
		if _, _, ok := SplitSample(StripDot(name)); ok {
			return // splitting must not panic either
		}
	})
}

// FuzzShard feeds arbitrary bytes to the shard reader, both the
// sequential path (Convert, standard input) and the seeking path (Inspect,
// a file): it must never panic or hang, and every failure must be an
// *InputError or an error that says where reading stopped.
func FuzzShard(f *testing.F) {
	seed := func(p string) {
		if b, err := os.ReadFile(p); err == nil && len(b) <= 64<<10 {
			f.Add(b)
		}
	}
	// Seeds: the generated shards (when the tools that make them are
	// here) and the small real ones.
	if toolsPresent("python3", "tar", "gzip", "bzip2", "xz", "zstd") {
		filepath.WalkDir(fixtures(f), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				seed(p)
			}
			return nil
		})
	}
	shared := filepath.Join(filepath.Dir(testtool.RepoRoot(f)), "shared", "data", "webdataset")
	for _, name := range []string{"compressed.tar", "sample.tgz", "mpdata.tar"} {
		seed(filepath.Join(shared, name))
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0}, 1024))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0})
	// One file per process, rewritten for every input: a directory per
	// input would make the file system the bottleneck.
	p := filepath.Join(f.TempDir(), "fuzz.tar")
	f.Fuzz(func(t *testing.T, data []byte) {
		src := shardSource{Name: "fuzz", Stem: "fuzz", Size: -1}
		scanShard(t, src, bytes.NewReader(data), false)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		scanShard(t, shardSource{Name: p, Path: p, Stem: "fuzz", Size: int64(len(data))}, nil, true)
	})
}

// scanShard reads every member of a shard through the walker, reading
// payloads when seek is false, and checks the errors' form.
func scanShard(t *testing.T, src shardSource, r io.Reader, seek bool) {
	s, err := openShard(context.Background(), src, r, seek)
	if err != nil {
		checkFuzzError(t, err)
		return
	}
	defer s.Close()
	w := &walker{table: true}
	w.startShard(0, src)
	smp := newSampler(true, []string{src.Name}, nil, os.TempDir())
	defer smp.close()
	for range 10000 {
		h, off, err := s.next()
		if err == io.EOF {
			if err := s.finish(); err != nil {
				checkFuzzError(t, err)
			}
			return
		}
		if err != nil {
			checkFuzzError(t, err)
			return
		}
		if off < -1 || (off >= 0 && off > s.pos.n) {
			t.Fatalf("member %q: header offset %d past the position %d", h.Name, off, s.pos.n)
		}
		it, err := w.classify(h, off)
		if err != nil {
			checkFuzzError(t, err)
			continue
		}
		if it.inSample {
			if err := smp.add(0, h.Name, off, it.sample, it.field, cellRef, it.key); err != nil {
				checkFuzzError(t, err)
			}
		}
		if !seek && it.kind == itemFile {
			// Sparse members can declare terabytes of holes: read a
			// bounded part, as the payload reading itself is archive/tar's.
			rr := &recordingReader{r: s.tr}
			if _, err := io.CopyN(io.Discard, rr, 1<<20); err != nil && err != io.EOF {
				checkFuzzError(t, s.payloadError(h.Name, err))
				return
			}
		}
	}
}

func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	var ie *InputError
	if errors.As(err, &ie) {
		if ie.Err == nil || !strings.HasPrefix(err.Error(), "wds: ") {
			t.Fatalf("malformed input error %#v", ie)
		}
		return
	}
	if !strings.Contains(err.Error(), "at offset") {
		t.Fatalf("error %v is neither an *InputError nor located", err)
	}
}
