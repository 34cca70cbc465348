package packcore

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/bpconvert/bpconvert/internal/keyindex"
	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// VerifyReport lists what Verify checked and every problem it found.
type VerifyReport struct {
	Shards   int      `json:"shards"`
	Members  int      `json:"members"`
	Bytes    int64    `json:"bytes"`
	Manifest bool     `json:"manifest_checked"`
	Problems []string `json:"problems"`
}

// OK reports whether no problem was found.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// shardCheck is the outcome of one shard's full check.
type shardCheck struct {
	dir      *Directory
	size     int64
	sha256   string
	problems []string
}

// Verify checks a pack directory, or a single shard file, at rest: every
// member STORED and unencrypted, local headers agreeing with the central
// directory, no overlaps, keys unique across shards, every CRC-32, and, when
// pack.manifest.json is present, every shard's size and SHA-256. Each shard
// is read once, sequentially. It reports every problem, not only the first;
// the error is for failures to run at all.
func Verify(ctx context.Context, path string) (*VerifyReport, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	dir, names := path, []string(nil)
	if st.IsDir() {
		// A directory named like a shard is opened as one, and reported.
		names, err = ShardEntries(path)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: no *.zip shards", path)
		}
	} else {
		dir, names = filepath.Dir(path), []string{filepath.Base(path)}
	}
	var manifest *Manifest
	var manifestErr error
	if st.IsDir() {
		manifest, manifestErr = ReadManifest(dir)
	}
	return verifyShards(ctx, names, manifest, manifestErr, func(ctx context.Context, name string) (*openedShard, error) {
		return openLocalShard(filepath.Join(dir, name))
	})
}

// openedShard is a shard opened for a check: positioned reads for its
// directory, and one reader front to back.
type openedShard struct {
	r     io.ReaderAt
	size  int64
	seq   func(ctx context.Context) io.ReadCloser
	close func() error
}

// shardOpener opens a shard of the pack directory being checked, by name.
type shardOpener func(ctx context.Context, name string) (*openedShard, error)

func openLocalShard(p string) (*openedShard, error) {
	f, err := srcfile.OpenFile(p)
	if err != nil {
		return nil, srcfile.Named("open", p, err)
	}
	return &openedShard{r: f, size: f.Size(), close: f.Close,
		seq: func(ctx context.Context) io.ReadCloser { return io.NopCloser(ctxReader{ctx, f}) }}, nil
}

// verifyShards checks the named shards (in shard order), with the manifest
// (or the error reading it) of their directory.
func verifyShards(ctx context.Context, names []string, manifest *Manifest, manifestErr error, open shardOpener) (*VerifyReport, error) {
	rep := &VerifyReport{Problems: []string{}}
	if manifestErr != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s: unreadable (%v)", ManifestName, manifestErr))
	}
	// owner holds every key seen, with the index of its shard in names:
	// outside the heap, and with copies of the keys, so that each shard's
	// directory can go once checked (package keyindex).
	owner := keyindex.New()
	present := make(map[string]bool)
	// Shards are checked on all cores and their results taken in order;
	// SHA-256 only when a manifest has digests to compare.
	results := checkShardsWith(ctx, open, names, manifest != nil)
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			results.drain(i)
			return nil, err
		}
		r := results.result(i)
		present[name] = true
		rep.Shards++
		res, err := r.res, r.err
		if err != nil {
			if ctx.Err() != nil {
				results.drain(i + 1)
				return nil, ctx.Err()
			}
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: unreadable (%v)", name, err))
			continue
		}
		rep.Problems = append(rep.Problems, res.problems...)
		for _, e := range res.dir.Entries {
			if err := ValidateKey(e.Name); err != nil {
				var ke *KeyError
				reason := err.Error()
				if errors.As(err, &ke) {
					reason = ke.Reason
				}
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s:%s: unusable key (%s)", name, quoteName(cutName(e.Name)), reason))
			}
			if other, dup := owner.Get(e.Name); dup && int(other.Shard) != i {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s:%s: duplicate key (also in %s)", name, cutName(e.Name), names[other.Shard]))
				continue
			}
			owner.Put(e.Name, keyindex.Loc{Shard: int32(i)})
			rep.Members++
			rep.Bytes += e.Size
		}
		if manifest != nil {
			if m, ok := manifest.Shards[name]; !ok {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: not listed in manifest", name))
			} else if m.Bytes != res.size || m.SHA256 != res.sha256 {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: does not match manifest (%d bytes, sha256 %s; manifest says %d bytes, %s)", name, res.size, res.sha256, m.Bytes, m.SHA256))
			}
		}
	}
	if manifest != nil {
		rep.Manifest = true
		var missing []string
		for name := range manifest.Shards {
			if !present[name] {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		for _, name := range missing {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: listed in manifest but missing", name))
		}
	}
	return rep, nil
}

// verifyBuf is the read size of a shard check: large enough for few system
// calls, small enough that the bytes are still in the CPU's cache when the
// CRC-32 reads them.
const verifyBuf = 1 << 20

// shardResult is one shard's check or the failure to run it.
type shardResult struct {
	res *shardCheck
	err error
}

// shardChecks checks shards on all cores; results are taken in shard order.
// A shard starts only while fewer than one per core are running or waiting
// to be taken, which bounds the directories held at once.
type shardChecks struct {
	out   []chan shardResult
	slots chan struct{}
}

// checkShards starts checking the named shards of dir, with SHA-256 when
// hash is set.
func checkShards(ctx context.Context, dir string, names []string, hash bool) *shardChecks {
	return checkShardsWith(ctx, func(ctx context.Context, name string) (*openedShard, error) {
		return openLocalShard(filepath.Join(dir, name))
	}, names, hash)
}

// checkShardsWith is checkShards for shards that open opens.
func checkShardsWith(ctx context.Context, open shardOpener, names []string, hash bool) *shardChecks {
	c := &shardChecks{
		out:   make([]chan shardResult, len(names)),
		slots: make(chan struct{}, max(1, min(runtime.GOMAXPROCS(0), len(names)))),
	}
	for i := range c.out {
		c.out[i] = make(chan shardResult, 1)
	}
	go func() {
		for i, name := range names {
			c.slots <- struct{}{}
			go func() {
				res, err := verifyShard(ctx, open, name, true, hash)
				c.out[i] <- shardResult{res, err}
			}()
		}
	}()
	return c
}

// result waits for shard i's result; results are taken in order, each once.
func (c *shardChecks) result(i int) shardResult {
	r := <-c.out[i]
	<-c.slots
	return r
}

// drain takes the results from i on, so that no check outlives its caller.
func (c *shardChecks) drain(i int) {
	for ; i < len(c.out); i++ {
		c.result(i)
	}
}

// verifyShard parses a shard's directory, checks its structure, and reads
// the file once from start to end to check each member's local header and,
// with crc, CRC-32, and, with hash, to compute the file's SHA-256.
func verifyShard(ctx context.Context, open shardOpener, name string, crc, hash bool) (*shardCheck, error) {
	f, err := open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer f.close()
	dir, err := ReadDirectory(f.r, f.size)
	if err != nil {
		return nil, err
	}
	res := &shardCheck{dir: dir, size: f.size}
	res.problems = structuralProblems(name, dir)

	order := make([]int, 0, len(dir.Entries))
	for i, e := range dir.Entries {
		if entryProblem(&e) == "" {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		return dir.Entries[order[a]].HeaderOffset < dir.Entries[order[b]].HeaderOffset
	})
	seq := f.seq(ctx)
	defer seq.Close()
	var src io.Reader = seq
	sha := sha256.New()
	if hash {
		src = io.TeeReader(src, sha)
	}
	br := bufio.NewReaderSize(src, verifyBuf)
	pos := int64(0)
	skip := func(to int64) error {
		n, err := br.Discard(int(to - pos))
		pos += int64(n)
		return err
	}
	for _, i := range order {
		e := dir.Entries[i]
		if e.HeaderOffset < pos {
			continue // overlapping member, already reported
		}
		if err := skip(e.HeaderOffset); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: local header at offset %d unreadable (%v)", name, cutName(e.Name), e.HeaderOffset, err))
			break
		}
		hdr := make([]byte, localLen, localLen+e.NameLen)
		if _, err := io.ReadFull(br, hdr); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: local header unreadable", name, cutName(e.Name)))
			break
		}
		pos += localLen
		h, err := parseLocalHeader(hdr)
		if err != nil {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: no local header at offset %d", name, cutName(e.Name), e.HeaderOffset))
			continue
		}
		hdr = append(hdr, make([]byte, h.NameLen+h.ExtraLen)...)
		if _, err := io.ReadFull(br, hdr[localLen:]); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: local header unreadable", name, cutName(e.Name)))
			break
		}
		pos += int64(h.NameLen + h.ExtraLen)
		h, _ = parseLocalHeader(hdr) // the same bytes, now whole
		if reason := localProblem(&e, &h); reason != "" {
			// The reader refuses the member for this reason: its payload
			// is not checked further.
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: %s", name, cutName(e.Name), reason))
			continue
		}
		if pos+e.Size > dir.Start {
			continue // reported as extending into the directory
		}
		if !crc {
			continue
		}
		sum, n, err := crcFrom(br, e.Size)
		pos += n
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: payload unreadable after %d of %d bytes (%v)", name, cutName(e.Name), n, e.Size, err))
			break
		}
		if sum != e.CRC32 {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: CRC mismatch", name, cutName(e.Name)))
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil, err
	}
	if hash {
		res.sha256 = hex.EncodeToString(sha.Sum(nil))
	}
	return res, nil
}

// crcFrom computes the CRC-32 of the next n bytes of br straight from its
// buffer, without copying them out.
func crcFrom(br *bufio.Reader, n int64) (uint32, int64, error) {
	var sum uint32
	var done int64
	for done < n {
		b, err := br.Peek(int(min(n-done, int64(br.Size()))))
		sum = crc32.Update(sum, crc32.IEEETable, b)
		k, _ := br.Discard(len(b))
		done += int64(k)
		if err != nil {
			return sum, done, err
		}
	}
	return sum, done, nil
}

// quoteName shows a member name that is not a usable key so a reader can
// see it: quoted (control bytes, NUL and invalid UTF-8 escaped), and cut
// when long.
func quoteName(name string) string {
	return strconv.Quote(cutName(name))
}

// cutName shortens a name for a message: a name longer than 256 bytes
// keeps its first 128 and last 64 bytes around "...", so a hostile name
// cannot flood a terminal or a log.
func cutName(name string) string {
	if len(name) > 256 {
		return name[:128] + "..." + name[len(name)-64:]
	}
	return name
}

// structuralProblems checks a directory without reading payloads: members
// STORED and unencrypted, names unique, sizes consistent, members in order
// without overlap and ending before the directory.
func structuralProblems(shard string, dir *Directory) []string {
	var out []string
	seen := make(map[string]bool, len(dir.Entries))
	type span struct {
		name       string
		start, end int64
	}
	spans := make([]span, 0, len(dir.Entries))
	for _, e := range dir.Entries {
		if strings.HasSuffix(e.Name, "/") {
			continue // directory entries carry no payload
		}
		if reason := entryProblem(&e); reason != "" {
			out = append(out, fmt.Sprintf("%s:%s: %s", shard, e.Name, reason))
		}
		if seen[e.Name] {
			out = append(out, fmt.Sprintf("%s:%s: duplicate member name within one shard", shard, e.Name))
		}
		seen[e.Name] = true
		// The local header holds at least the fixed part and the name.
		end := e.HeaderOffset + localLen + int64(e.NameLen) + e.Size
		spans = append(spans, span{e.Name, e.HeaderOffset, end})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	for i, sp := range spans {
		if sp.end > dir.Start {
			out = append(out, fmt.Sprintf("%s:%s: extends into the central directory", shard, sp.name))
		}
		if i+1 < len(spans) && sp.end > spans[i+1].start {
			out = append(out, fmt.Sprintf("%s:%s: overlaps %q", shard, sp.name, spans[i+1].name))
		}
	}
	return out
}
