package packcore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"iter"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
)

// ErrNotFound is wrapped when a key or reference is not in a pack set.
var ErrNotFound = errors.New("not in this pack set")

// ErrChecksum is wrapped when a member's bytes do not match the CRC-32 its
// central directory records. It matches ErrFormat too.
var ErrChecksum = fmt.Errorf("%w: CRC-32 mismatch", ErrFormat)

// SetOptions configures OpenSet.
type SetOptions struct {
	// RefBase is the directory references must name (default: the pack
	// directory's base name). "." accepts references with any directory.
	RefBase string
	// SkipDirs leaves out a directory named like a shard (*.zip) beside
	// the shards, which OpenSet otherwise refuses: Verify reports it, and
	// the references into the other shards are still checked.
	SkipDirs bool
}

// Member is one blob of a pack set.
type Member struct {
	Key   string
	Shard string
	Size  int64
	CRC32 uint32
	// HeaderOffset is the position of the member's local header in its shard.
	HeaderOffset int64
}

// Set is an opened pack: every shard's central directory, parsed once, and an
// index from key to member. Reads are safe for concurrent use.
type Set struct {
	dir     string
	refBase string
	shards  []*shardFile
	byName  map[string]*shardFile
	index   *memberIndex
}

type memberLoc struct {
	shard *shardFile
	i     int
}

type shardFile struct {
	name string
	// r reads the shard: an *os.File, or an object in a store, where every
	// read is a request (remote) and streams are fetched ahead in chunks.
	r       io.ReaderAt
	closer  io.Closer
	remote  bool
	size    int64
	dir     *Directory
	bounds  []int64        // per entry: where its payload must end
	dataOff []atomic.Int64 // per entry: payload offset once its header was read
}

// OpenSet opens a pack directory, or a single shard file, and indexes every
// member. A key present in two shards is read by a reference that names its
// shard; the bare key is refused as ambiguous (ErrDuplicateKey).
func OpenSet(p string, opts SetOptions) (*Set, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	dir, names := p, []string(nil)
	if st.IsDir() {
		if opts.SkipDirs {
			names, _, err = listShards(p)
		} else {
			names, err = ListShards(p)
		}
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: no *.zip shards", p)
		}
	} else {
		dir, names = filepath.Dir(p), []string{filepath.Base(p)}
	}
	refBase := opts.RefBase
	if refBase == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		refBase = filepath.Base(abs)
	}
	s := &Set{dir: dir, refBase: CleanRefBase(refBase), byName: map[string]*shardFile{}}
	for _, name := range names {
		sf, err := openShard(filepath.Join(dir, name))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
		s.shards = append(s.shards, sf)
		s.byName[name] = sf
	}
	s.indexMembers()
	return s, nil
}

// indexMembers builds the set's member index once its shards are open. A
// key that several shards hold is indexed at each: a reference that names
// its shard reads it there, the bare key is ambiguous (see resolve and
// Unique).
func (s *Set) indexMembers() {
	s.index = buildMemberIndex(s.shards)
}

// Unique returns nil when no key is in two shards, else an error wrapping
// ErrDuplicateKey that names the first such key, in shard order, and its
// shards. A set opens whatever its keys; a command that handles every
// member by its key alone (unpack) calls Unique first.
func (s *Set) Unique() error {
	if len(s.index.dups) == 0 {
		return nil
	}
	for _, sf := range s.shards {
		for i := range sf.dir.Entries {
			if locs, ok := s.index.dups[sf.dir.Entries[i].Name]; ok {
				return s.dupError(sf.dir.Entries[i].Name, locs)
			}
		}
	}
	return nil
}

// dupError is the error for a key that the shards at locs all hold.
func (s *Set) dupError(key string, locs []memberLoc) error {
	names := make([]string, len(locs))
	for i, l := range locs {
		names[i] = l.shard.name
	}
	return fmt.Errorf("%w: %q is in %s", ErrDuplicateKey, cutName(key), strings.Join(names, " and "))
}

// openShard opens the shard file p (a regular file: a FIFO is refused, not
// waited on, with an error that does not repeat p, which the caller
// names).
func openShard(p string) (*shardFile, error) {
	f, err := srcfile.OpenFile(p)
	if err != nil {
		return nil, err
	}
	sf, err := newShardFile(filepath.Base(p), f, f.Size(), false)
	if err != nil {
		f.Close()
		return nil, err
	}
	sf.closer = f
	return sf, nil
}

// newShardFile reads and checks the central directory of the shard r of the
// given size.
func newShardFile(name string, r io.ReaderAt, size int64, remote bool) (*shardFile, error) {
	dir, err := ReadDirectory(r, size)
	if err != nil {
		return nil, err
	}
	if probs := structuralProblems(name, dir); len(probs) > 0 {
		return nil, errors.New(probs[0])
	}
	sf := &shardFile{name: name, r: r, remote: remote, size: size, dir: dir,
		bounds: make([]int64, len(dir.Entries)), dataOff: make([]atomic.Int64, len(dir.Entries))}
	// A payload may not run past the next member's header or the directory.
	order := make([]int, len(dir.Entries))
	for i := range order {
		order[i] = i
	}
	sortByOffset(order, dir.Entries)
	for k, i := range order {
		if k+1 < len(order) {
			sf.bounds[i] = dir.Entries[order[k+1]].HeaderOffset
		} else {
			sf.bounds[i] = dir.Start
		}
	}
	return sf, nil
}

// Close closes every shard file.
func (s *Set) Close() error {
	var errs []error
	for _, sf := range s.shards {
		if sf.closer != nil {
			errs = append(errs, sf.closer.Close())
		}
	}
	s.shards = nil
	return errors.Join(errs...)
}

// Len returns the number of members.
func (s *Set) Len() int { return s.index.n }

// Shards returns the shard file names in shard order.
func (s *Set) Shards() []string {
	out := make([]string, len(s.shards))
	for i, sf := range s.shards {
		out[i] = sf.name
	}
	return out
}

// RefBase returns the directory this set's references name.
func (s *Set) RefBase() string { return s.refBase }

// Members yields every member, shards in order, members in central
// directory order.
func (s *Set) Members() iter.Seq[Member] {
	return func(yield func(Member) bool) {
		for _, sf := range s.shards {
			for i := range sf.dir.Entries {
				if !yield(sf.member(i)) {
					return
				}
			}
		}
	}
}

func (sf *shardFile) member(i int) Member {
	e := sf.dir.Entries[i]
	return Member{Key: e.Name, Shard: sf.name, Size: e.Size, CRC32: e.CRC32, HeaderOffset: e.HeaderOffset}
}

// Ref returns the reference for a member of this set.
func (s *Set) Ref(m Member) string {
	return FormatRef(m.Key, JoinShardPath(s.refBase, m.Shard))
}

// resolve finds a member by bare key or by reference. A reference must name
// this set's directory (unless the set accepts any), one of its shards, and
// a key stored in that shard; a bare key must be in one shard only.
func (s *Set) resolve(refOrKey string) (memberLoc, error) {
	if !IsRef(refOrKey) {
		if locs, ok := s.index.dups[refOrKey]; ok {
			return memberLoc{}, fmt.Errorf("%w: a reference naming one of its shards reads it", s.dupError(refOrKey, locs))
		}
		loc, ok := s.index.find(s.shards, refOrKey)
		if !ok {
			return memberLoc{}, fmt.Errorf("%w: key %q", ErrNotFound, refOrKey)
		}
		return loc, nil
	}
	key, shardPath, err := ParseRef(refOrKey)
	if err != nil {
		return memberLoc{}, err
	}
	dir, shard := path.Split(shardPath)
	if s.refBase != "" && CleanRefBase(dir) != s.refBase {
		return memberLoc{}, fmt.Errorf("%w: reference %q names directory %q, expected %q", ErrNotFound, refOrKey, CleanRefBase(dir), s.refBase)
	}
	sf, ok := s.byName[shard]
	if !ok {
		return memberLoc{}, fmt.Errorf("%w: reference %q names shard %q", ErrNotFound, refOrKey, shard)
	}
	loc, ok := s.index.findIn(s.shards, key, sf)
	if !ok {
		return memberLoc{}, fmt.Errorf("%w: reference %q: key not in shard %s", ErrNotFound, refOrKey, shard)
	}
	return loc, nil
}

// Has reports whether key (a bare key, not a reference) is a member.
func (s *Set) Has(key string) bool {
	_, ok := s.index.find(s.shards, key)
	return ok
}

// Stat returns a member by key or reference.
func (s *Set) Stat(refOrKey string) (Member, error) {
	loc, err := s.resolve(refOrKey)
	if err != nil {
		return Member{}, err
	}
	return loc.shard.member(loc.i), nil
}

// headerSlack is how many bytes past the name a fused read takes to cover a
// local extra field (the writer's zip64 field is 20 bytes).
const headerSlack = 64

// Read returns a member's bytes after checking them against the CRC-32 the
// central directory records (an error wrapping ErrChecksum when they
// differ: corrupt bytes are never returned). It allocates one slice of
// exactly the member's size, which the caller owns; ReadInto reuses the
// caller's buffer instead. The first read of a member checks its local
// header; later reads are one positioned read of exactly the payload.
func (s *Set) Read(refOrKey string) ([]byte, error) {
	return s.ReadInto(refOrKey, nil)
}

// ReadInto is Read into buf: the member's bytes are read into buf's
// capacity, and buf[:size] is returned; a buf with less capacity than the
// member is replaced by a new slice, which is returned. Reading into a
// buffer kept by the caller allocates nothing once a member's local header
// has been checked. As with Read, bytes whose CRC-32 differs from the
// central directory's are never returned; buf's contents are then
// unspecified.
func (s *Set) ReadInto(refOrKey string, buf []byte) ([]byte, error) {
	loc, err := s.resolve(refOrKey)
	if err != nil {
		return nil, err
	}
	return loc.shard.readInto(loc.i, buf)
}

func (sf *shardFile) crcError(i int, got uint32) error {
	e := sf.dir.Entries[i]
	return fmt.Errorf("%s:%s: %w (computed %08x, directory records %08x)", sf.name, cutName(e.Name), ErrChecksum, got, e.CRC32)
}

// readInto reads member i into buf (grown when too small) and checks its
// CRC-32. The first read of a member takes its local header in the same
// positioned read as the payload when buf has room for both.
func (sf *shardFile) readInto(i int, buf []byte) ([]byte, error) {
	b, err := sf.fetch(i, buf)
	if err != nil {
		return nil, err
	}
	return sf.checkCRC(i, b)
}

// fetch reads member i into buf (grown when too small) without checking its
// CRC-32: local header and payload in one read when the header is
// unchecked.
func (sf *shardFile) fetch(i int, buf []byte) ([]byte, error) {
	e := sf.dir.Entries[i]
	off := sf.dataOff[i].Load()
	var want int64 // header and payload, for a member whose header is unchecked
	if off == 0 {
		want = localLen + int64(e.NameLen) + headerSlack + e.Size
		want = min(want, sf.bounds[i]-e.HeaderOffset)
		if want < localLen+int64(e.NameLen)+e.Size {
			return nil, fmt.Errorf("%s:%s: %w: member extends past its bounds", sf.name, cutName(e.Name), ErrFormat)
		}
	}
	if int64(cap(buf)) < e.Size {
		buf = make([]byte, e.Size, max(e.Size, want))
	}
	buf = buf[:e.Size]
	if off == 0 {
		if int64(cap(buf)) >= want {
			// One read of header and payload, the payload then moved to
			// the front of buf.
			all := buf[:want]
			if _, err := sf.r.ReadAt(all, e.HeaderOffset); err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s:%s: %w", sf.name, cutName(e.Name), err)
			}
			start, err := sf.checkHeader(i, all)
			if err != nil {
				return nil, err
			}
			if rel := start - e.HeaderOffset; rel+e.Size <= int64(len(all)) {
				copy(buf, all[rel:rel+e.Size])
				return buf, nil
			}
			off = start // a long extra field: the payload is read below
		} else if sf.remote {
			// A request costs more than a copy: header and payload are
			// fetched together here too.
			all := make([]byte, want)
			if _, err := sf.r.ReadAt(all, e.HeaderOffset); err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s:%s: %w", sf.name, cutName(e.Name), err)
			}
			start, err := sf.checkHeader(i, all)
			if err != nil {
				return nil, err
			}
			if rel := start - e.HeaderOffset; rel+e.Size <= int64(len(all)) {
				copy(buf, all[rel:rel+e.Size])
				return buf, nil
			}
			off = start
		} else {
			var err error
			if off, err = sf.readHeader(i); err != nil {
				return nil, err
			}
		}
	}
	if _, err := sf.r.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && e.Size == 0) {
		return nil, fmt.Errorf("%s:%s: %w", sf.name, cutName(e.Name), err)
	}
	return buf, nil
}

// checkCRC returns b when its CRC-32 is the one member i's directory entry
// records.
func (sf *shardFile) checkCRC(i int, b []byte) ([]byte, error) {
	if got := crc32.ChecksumIEEE(b); got != sf.dir.Entries[i].CRC32 {
		return nil, sf.crcError(i, got)
	}
	return b, nil
}

// readHeader reads and checks member i's local header and returns its
// payload offset.
func (sf *shardFile) readHeader(i int) (int64, error) {
	e := sf.dir.Entries[i]
	n := min(localLen+int64(e.NameLen)+headerSlack, sf.bounds[i]-e.HeaderOffset)
	if n < localLen {
		return 0, fmt.Errorf("%s:%s: %w: member extends past its bounds", sf.name, cutName(e.Name), ErrFormat)
	}
	hdr := make([]byte, n)
	if _, err := sf.r.ReadAt(hdr, e.HeaderOffset); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("%s:%s: %w", sf.name, cutName(e.Name), err)
	}
	return sf.checkHeader(i, hdr)
}

// checkHeader validates a member's local header (its first bytes in hdr;
// the rest is read when hdr does not hold the whole header) by
// localProblem, and returns and caches the payload offset.
func (sf *shardFile) checkHeader(i int, hdr []byte) (int64, error) {
	e := &sf.dir.Entries[i]
	h, err := parseLocalHeader(hdr)
	if err != nil {
		return 0, fmt.Errorf("%s:%s: %w", sf.name, cutName(e.Name), err)
	}
	if int64(len(hdr)) < h.headerLen() && e.HeaderOffset+h.headerLen() <= sf.bounds[i] {
		// An extra field longer than the slack read with the header.
		full := make([]byte, h.headerLen())
		if _, err := sf.r.ReadAt(full, e.HeaderOffset); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%s:%s: %w", sf.name, cutName(e.Name), err)
		}
		if h, err = parseLocalHeader(full); err != nil {
			return 0, fmt.Errorf("%s:%s: %w", sf.name, cutName(e.Name), err)
		}
	}
	if reason := localProblem(e, &h); reason != "" {
		return 0, fmt.Errorf("%s:%s: %w: %s", sf.name, cutName(e.Name), ErrFormat, reason)
	}
	start := e.HeaderOffset + h.headerLen()
	if start+e.Size > sf.bounds[i] {
		return 0, fmt.Errorf("%s:%s: %w: payload runs past the next member or the directory", sf.name, cutName(e.Name), ErrFormat)
	}
	sf.dataOff[i].Store(start)
	return start, nil
}

// Open returns a reader bounded to a member's bytes: reads and seeks stay
// inside the blob. It is for random access and computes no CRC; a caller
// that streams a whole member uses OpenChecked, and one that streams a part
// uses OpenRange. In a set opened from object storage every read of it is
// a request of its own.
func (s *Set) Open(refOrKey string) (*io.SectionReader, error) {
	loc, err := s.resolve(refOrKey)
	if err != nil {
		return nil, err
	}
	return loc.shard.open(loc.i)
}

// OpenChecked returns a reader of a member's bytes, front to back, that
// computes their CRC-32 as they pass and, at the end, returns an error
// wrapping ErrChecksum instead of io.EOF when it differs from the central
// directory's: a caller that reads to io.EOF has read the stored bytes.
// From object storage a member up to 8 MiB is fetched, local header and
// payload, with one ranged read; a larger one is streamed in 8 MiB reads,
// two ahead of the caller. Close releases that read-ahead (a local reader's
// Close does nothing).
func (s *Set) OpenChecked(refOrKey string) (io.ReadCloser, error) {
	loc, err := s.resolve(refOrKey)
	if err != nil {
		return nil, err
	}
	sf, i := loc.shard, loc.i
	if sf.remote && sf.dir.Entries[i].Size <= streamChunk {
		b, err := sf.fetch(i, nil)
		if err != nil {
			return nil, err
		}
		return &checkedReader{r: bytes.NewReader(b), crc: crc32.NewIEEE(), sf: sf, i: i}, nil
	}
	if !sf.remote {
		sr, err := sf.open(i)
		if err != nil {
			return nil, err
		}
		return &checkedReader{r: sr, crc: crc32.NewIEEE(), sf: sf, i: i}, nil
	}
	r, err := sf.stream(i, 0, sf.dir.Entries[i].Size)
	if err != nil {
		return nil, err
	}
	return &checkedReader{r: r, closer: r, crc: crc32.NewIEEE(), sf: sf, i: i}, nil
}

// OpenRange returns a reader of n bytes of a member from byte off on, with
// no CRC (a part is what the shard stores). From object storage it is
// fetched in reads of up to 8 MiB, two ahead of the caller; Close releases
// them.
func (s *Set) OpenRange(refOrKey string, off, n int64) (io.ReadCloser, error) {
	loc, err := s.resolve(refOrKey)
	if err != nil {
		return nil, err
	}
	size := loc.shard.dir.Entries[loc.i].Size
	if off < 0 || n < 0 || off > size || n > size-off {
		return nil, fmt.Errorf("%s:%s: bytes %d to %d are outside the member's %d", loc.shard.name, cutName(loc.shard.dir.Entries[loc.i].Name), off, off+n, size)
	}
	return loc.shard.stream(loc.i, off, n)
}

// streamChunk is the size of one read of a member streamed from object
// storage.
const streamChunk = 8 << 20

// checkedReader checks a member's CRC-32 when its reader reaches the end.
type checkedReader struct {
	r      io.Reader
	closer io.Closer
	crc    hash.Hash32
	sf     *shardFile
	i      int
}

func (c *checkedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	if err == io.EOF {
		if got := c.crc.Sum32(); got != c.sf.dir.Entries[c.i].CRC32 {
			return n, c.sf.crcError(c.i, got)
		}
	}
	return n, err
}

// Close releases the reader's read-ahead, if any.
func (c *checkedReader) Close() error {
	if c.closer != nil {
		return c.closer.Close()
	}
	return nil
}

func (sf *shardFile) open(i int) (*io.SectionReader, error) {
	off := sf.dataOff[i].Load()
	if off == 0 {
		var err error
		if off, err = sf.readHeader(i); err != nil {
			return nil, err
		}
	}
	return io.NewSectionReader(sf.r, off, sf.dir.Entries[i].Size), nil
}

// stream returns a reader of n bytes of member i from byte off on: a
// section of a local file, or reads of object storage fetched ahead.
func (sf *shardFile) stream(i int, off, n int64) (io.ReadCloser, error) {
	sr, err := sf.open(i)
	if err != nil {
		return nil, err
	}
	part := io.NewSectionReader(sr, off, n)
	if !sf.remote {
		return io.NopCloser(part), nil
	}
	return objstore.NewSeqReader(context.Background(), sectionObject{part}, objstore.SeqOptions{Chunk: streamChunk}), nil
}

// sectionObject is a section of a shard as an object, for streaming.
type sectionObject struct{ *io.SectionReader }

func (sectionObject) Close() error { return nil }

// ReadMany reads several members concurrently with up to workers goroutines
// and returns their bytes in input order; like Read, it checks every
// member's CRC-32 and fails rather than return corrupt bytes.
func (s *Set) ReadMany(ctx context.Context, items []string, workers int) ([][]byte, error) {
	out := make([][]byte, len(items))
	if workers < 1 {
		workers = 1
	}
	var (
		wg      sync.WaitGroup
		next    atomic.Int64
		errOnce sync.Once
		first   error
	)
	for range min(workers, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(items) || ctx.Err() != nil {
					return
				}
				b, err := s.Read(items[i])
				if err != nil {
					errOnce.Do(func() { first = err })
					return
				}
				out[i] = b
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func sortByOffset(order []int, entries []Entry) {
	// insertion into a sorted order is the common case: writers emit
	// members in offset order.
	sorted := true
	for k := 1; k < len(order); k++ {
		if entries[order[k-1]].HeaderOffset > entries[order[k]].HeaderOffset {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	sort.Slice(order, func(a, b int) bool { return entries[order[a]].HeaderOffset < entries[order[b]].HeaderOffset })
}
