package packcore

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/filelock"
	"github.com/bpconvert/bpconvert/internal/keyindex"
	"github.com/bpconvert/bpconvert/internal/offheap"
)

// Defaults for WriterOptions.
const (
	DefaultMaxPackBytes = 4 << 30
	DefaultMaxMembers   = 65535
	DefaultPrefix       = "pack"
)

// smallMember is the largest payload the writer reads whole before writing
// it: such members are gathered with their headers into a lent buffer,
// written to the shard in one call when it is full, and hashed from memory.
// Larger members are streamed.
const smallMember = 1 << 20

// copyBuf is the chunk size for streamed members.
const copyBuf = 1 << 20

// ErrClosed is returned by Add after Close or Abort.
var ErrClosed = errors.New("pack writer is closed")

// ErrNotEmpty is returned when a pack directory already holds shards and the
// caller did not ask to resume.
var ErrNotEmpty = errors.New("pack directory already holds shards")

// ErrSizeMismatch is wrapped when a member's stream is shorter or longer than
// its declared size.
var ErrSizeMismatch = errors.New("stream length differs from declared size")

// WriterOptions configures a Writer. The zero value selects the defaults.
type WriterOptions struct {
	// MaxPackBytes caps a shard's size on disk, headers and directory
	// included (default 4 GiB). A member larger than the cap gets a shard of
	// its own.
	MaxPackBytes int64
	// MaxMembers caps the number of members in a shard (default 65,535).
	MaxMembers int
	// RefBase is the shard directory as references spell it, relative to the
	// dataset root. Empty selects the pack directory's base name; "." yields
	// references holding the bare shard name.
	RefBase string
	// Prefix names shards Prefix-0000.zip, … (default "pack").
	Prefix string
	// GroupFill says when a member that starts a new placement group opens
	// a new shard. Zero (the default): when the current shard is at least
	// half full and twice the largest group so far would not fit in the
	// bytes it has left, or the largest group would not fit in the members
	// it has left; so a group is cut only if it is over half a shard and
	// more than twice any group before it, and shards of small groups fill
	// up. A positive fraction: the reference tool's rule, once the current
	// shard is at least that fraction of MaxPackBytes full (0.5 there:
	// shards of small groups close half full), or when the largest group
	// would not fit in the members left. Negative: never.
	GroupFill float64
	// NoManifest skips pack.manifest.json and the SHA-256 digests it needs
	// (ShardInfo.SHA256 stays empty).
	NoManifest bool
	// Resume accepts a pack directory that already holds shards written by
	// an earlier, interrupted writer with the same prefix: each is verified
	// in full (a shard that fails is an error, never trusted), its keys are
	// loaded so Lookup finds them, and new shards continue the numbering.
	Resume bool
	// NoLock skips the writer's exclusive lock on the directory, for callers
	// that already own it exclusively (such as a locked staging directory).
	NoLock bool
	// OnShard, when set, is called after each shard is synced and renamed
	// into place, from the goroutine that called Add, EndShard or Close:
	// a shard is synced in the background while the next one is written,
	// and OnShard reports it when that next one is finished (or at
	// EndShard or Close), at the same point of every run. Its SHA256 is
	// empty: the digest is computed in the background, and Close's Stats
	// and Completed carry it.
	OnShard func(ShardInfo)
	// Publish, when set, is called for each shard this writer completes,
	// in order, once its digest is known and its central directory has
	// been read back and checked (the check Close makes otherwise), from
	// the goroutine that called Add, EndShard or Close. The shard is then
	// the callee's: it may move the file elsewhere (an upload) and remove
	// it. An error fails the writer.
	Publish func(ShardInfo) error
	// Stored lists shards that an earlier, interrupted writer of this pack
	// completed and that are kept elsewhere (uploaded to object storage
	// and no longer in the directory). With Resume, each counts as
	// completed as given: its keys are loaded from Dir and new shards
	// continue the numbering. A name both stored and in the directory is
	// an error.
	Stored []StoredShard
}

// StoredShard is a completed shard kept outside the pack directory.
type StoredShard struct {
	Info ShardInfo
	Dir  *Directory
}

// ShardInfo describes a completed shard.
type ShardInfo struct {
	Name    string `json:"name"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256"`
	Members int    `json:"members"`
	// Resumed marks a shard that an earlier writer completed.
	Resumed bool `json:"resumed,omitempty"`
}

// Stats summarises what a writer wrote.
type Stats struct {
	Members     int64       `json:"members"`
	Bytes       int64       `json:"bytes"`
	Shards      int         `json:"shards"`
	GroupsSplit int         `json:"groups_split"`
	ShardFiles  []ShardInfo `json:"shard_files"`
}

// Writer adds members to a pack directory, rolling to new shards as limits
// require. It is not safe for concurrent use.
type Writer struct {
	ctx     context.Context
	dir     string
	opts    WriterOptions
	refBase string
	lock    *os.File
	// keys holds every key added or resumed, in a temporary file made in
	// the pack directory (memory holds about 9 bytes a key: see
	// keyindex.Spilled).
	keys *keyindex.Spilled
	// keyErr is a failure to read keys back in Lookup, reported by the
	// next Add.
	keyErr error
	shards []string // names of the shards keys point into, by keyindex.Loc.Shard
	next   int      // index of the next shard to open
	cur    *shardWriter
	done   []ShardInfo
	buf    []byte // chunk buffer for streamed members, made when first needed
	hdr    []byte // local header buffer of AddBytes and streamThenHash
	// cd is the central directory being built, outside the Go heap
	// (package offheap): one table for every shard, since a finished shard's
	// directory is hashed back from the file. The post-write checks read
	// directories into it.
	cd *offheap.Table[byte]
	// pubBuf holds the directory a published shard's check reads back.
	pubBuf []byte
	// cdSums holds the CRC-32 of each finished shard's central directory
	// as written, by shard name, for the post-write checks
	// (checkWrittenShard).
	cdSums map[string]uint32
	// hs lends the buffers members pass through and computes the
	// shards' digests.
	hs *hasher
	// hashing lists shards renamed into place whose digests are still
	// being computed, oldest first; they join done in order.
	hashing []*shardWriter
	// settling is the last finished shard, being synced and renamed into
	// place in the background; it joins hashing once it is in place.
	settling *shardWriter
	closed   bool
	stats    Stats
	group    string
	groupIdx int // shard index where the current group began
	groupLen int // members of the current group so far
	groupMax int // members of the largest group before it
	// groupBytes and groupMaxBytes are the same in bytes on disk.
	groupBytes, groupMaxBytes int64
}

type shardWriter struct {
	f *os.File
	// flushed is the offset up to which writeback has been started.
	flushed int64
	tmp     string
	name    string
	index   int
	// off is the shard's size so far, the members gathered in batch
	// included: the file holds off-len(batch) bytes.
	off int64
	// batch holds small members with their headers, not yet written: a
	// lent buffer (see hasher), written when the next member does not
	// fit, before anything else is written, and at the shard's end.
	batch  []byte
	cdLen  int64 // bytes of central directory so far, in Writer.cd
	count  int64
	sha    *hashPipe
	sync   *shardSync
	failed bool
	info   ShardInfo // set once the shard is renamed into place
}

var shardRE = regexp.MustCompile(`^(.+)-([0-9]+)\.zip$`)

// Create opens a writer on dir, creating it when missing. A directory that
// already holds *.zip files is refused unless opts.Resume is set. Temporary
// files of an interrupted writer are removed. ctx cancels a running Add.
func Create(ctx context.Context, dir string, opts WriterOptions) (*Writer, error) {
	if opts.MaxPackBytes == 0 {
		opts.MaxPackBytes = DefaultMaxPackBytes
	}
	if opts.MaxMembers == 0 {
		opts.MaxMembers = DefaultMaxMembers
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	switch {
	case opts.MaxPackBytes < 0 || opts.MaxMembers < 0:
		return nil, fmt.Errorf("pack %s: size and member limits must be positive", dir)
	case opts.MaxMembers > DefaultMaxMembers:
		return nil, fmt.Errorf("pack %s: at most %d members fit a shard that every zip reader can list", dir, DefaultMaxMembers)
	case opts.GroupFill > 1:
		return nil, fmt.Errorf("pack %s: group fill must be at most 1", dir)
	case strings.ContainsAny(opts.Prefix, `/\`) || opts.Prefix == "." || opts.Prefix == "..":
		return nil, fmt.Errorf("pack %s: prefix %q must be a plain file name", dir, opts.Prefix)
	}
	refBase := opts.RefBase
	if refBase == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("pack %s: %w", dir, err)
		}
		refBase = filepath.Base(abs)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	w := &Writer{
		ctx:     ctx,
		dir:     dir,
		opts:    opts,
		refBase: CleanRefBase(refBase),
		keys:    keyindex.NewSpilled(dir, "."+opts.Prefix+"-keys-*.tmp"),
		cdSums:  map[string]uint32{},
		hs:      newHasher(),
	}
	cd := offheap.NewTable[byte](offheap.NewSet(w))
	w.cd = &cd
	if !opts.NoLock {
		if err := w.lockDir(); err != nil {
			return nil, err
		}
	}
	if err := w.scanExisting(); err != nil {
		w.keys.Close()
		w.unlock()
		return nil, err
	}
	return w, nil
}

// lockDir takes an exclusive advisory lock on the pack directory so that two
// writers never interleave shards.
func (w *Writer) lockDir() error {
	f, err := filelock.LockDir(w.dir)
	if errors.Is(err, filelock.ErrLocked) {
		return fmt.Errorf("pack %s: another writer holds this directory: %w", w.dir, err)
	}
	if err != nil {
		return fmt.Errorf("pack %s: %w", w.dir, err)
	}
	w.lock = f
	return nil
}

func (w *Writer) unlock() {
	if w.lock != nil {
		w.lock.Close() // closing releases the flock
		w.lock = nil
	}
}

// isTemp reports whether name is a temporary shard of this writer's prefix.
func (w *Writer) isTemp(name string) bool {
	return strings.HasPrefix(name, "."+w.opts.Prefix+"-") && strings.HasSuffix(name, ".tmp")
}

// scanExisting removes stale temporary shards and handles complete ones.
func (w *Writer) scanExisting() error {
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("pack %s: %w", w.dir, err)
	}
	var zips []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case w.isTemp(name):
			if err := os.Remove(filepath.Join(w.dir, name)); err != nil {
				return fmt.Errorf("pack %s: removing stale temporary shard: %w", w.dir, err)
			}
		case strings.HasSuffix(name, ".zip"):
			zips = append(zips, name)
		}
	}
	if len(zips) == 0 && len(w.opts.Stored) == 0 {
		return nil
	}
	if !w.opts.Resume {
		return fmt.Errorf("pack %s: %w: it already contains %d zip file(s); packs are immutable, write to a fresh directory", w.dir, ErrNotEmpty, len(zips))
	}
	stored := map[string]*StoredShard{}
	all := slices.Clone(zips)
	for i := range w.opts.Stored {
		st := &w.opts.Stored[i]
		if slices.Contains(zips, st.Info.Name) {
			return fmt.Errorf("pack %s: cannot resume: %s is both stored and in the directory", w.dir, st.Info.Name)
		}
		stored[st.Info.Name] = st
		all = append(all, st.Info.Name)
	}
	sortShardNames(zips)
	sortShardNames(all)
	idxs := make([]int, len(all))
	for i, name := range all {
		m := shardRE.FindStringSubmatch(name)
		if m == nil || m[1] != w.opts.Prefix {
			return fmt.Errorf("pack %s: cannot resume: %s is not a shard of prefix %q", w.dir, name, w.opts.Prefix)
		}
		idxs[i], _ = strconv.Atoi(m[2])
	}
	checks := checkShards(w.ctx, w.dir, zips, !w.opts.NoManifest)
	local := 0 // the next of zips to take from checks
	for i, name := range all {
		var entries []Entry
		var info ShardInfo
		if st := stored[name]; st != nil {
			entries, info = st.Dir.Entries, st.Info
			info.Members, info.Resumed = len(entries), true
		} else {
			r := checks.result(local)
			local++
			res, err := r.res, r.err
			if err == nil && len(res.problems) > 0 {
				err = errors.New(res.problems[0])
			}
			if err != nil {
				checks.drain(local)
				return fmt.Errorf("pack %s: cannot resume: %w", w.dir, err)
			}
			entries = res.dir.Entries
			info = ShardInfo{Name: name, Bytes: res.size, SHA256: res.sha256, Members: len(entries), Resumed: true}
		}
		for _, e := range entries {
			prev, dup, err := w.keys.Get(e.Name)
			if err == nil && dup {
				err = fmt.Errorf("key %q is in %s and %s", e.Name, w.shards[prev.Shard], name)
			}
			if err == nil {
				err = w.keys.Put(e.Name, keyindex.Loc{Shard: int32(len(w.shards)), Size: e.Size})
			}
			if err != nil {
				checks.drain(local)
				return fmt.Errorf("pack %s: cannot resume: %w", w.dir, err)
			}
		}
		w.shards = append(w.shards, name)
		w.done = append(w.done, info)
		w.next = max(w.next, idxs[i]+1)
	}
	return nil
}

// Completed returns the shards completed so far, resumed ones first.
func (w *Writer) Completed() []ShardInfo { return slices.Clone(w.done) }

// RefBase returns the reference base the writer puts into references.
func (w *Writer) RefBase() string { return w.refBase }

// Ref returns the reference of key in shard.
func (w *Writer) Ref(key, shard string) string {
	return FormatRef(key, JoinShardPath(w.refBase, shard))
}

// Lookup returns the reference and size of a key already in the pack, from
// this writer or from a resumed shard, also after Close (a converter
// resolves its table's references then).
func (w *Writer) Lookup(key string) (ref string, size int64, ok bool) {
	loc, ok, err := w.keys.Get(key)
	if err != nil && w.keyErr == nil {
		w.keyErr = fmt.Errorf("pack %s: %w", w.dir, err)
	}
	if !ok {
		return "", 0, false
	}
	return w.Ref(key, w.shards[loc.Shard]), loc.Size, true
}

// startGroup reports whether a member of group starts a new placement
// group, and if so closes the figures of the one before.
func (w *Writer) startGroup(group string) bool {
	if group == "" || group == w.group {
		return false
	}
	w.groupMax = max(w.groupMax, w.groupLen)
	w.groupMaxBytes = max(w.groupMaxBytes, w.groupBytes)
	w.groupLen, w.groupBytes = 0, 0
	return true
}

// countInGroup counts a member into the current group's figures.
func (w *Writer) countInGroup(group, key string, size int64) {
	if group != "" {
		w.group = group
		w.groupLen++
		w.groupBytes += memberBytes(key, size)
	}
}

// Replay records a member that a reused shard already holds, when a run
// resumes an interrupted one and skips the members it had written: the
// placement decisions after it are then the ones an uninterrupted run makes
// (they depend on the groups seen so far).
func (w *Writer) Replay(key string, size int64, group string) {
	w.startGroup(group)
	w.countInGroup(group, key, size)
}

// EndShard completes the open shard, if it holds a member, and waits until
// every finished shard is in place (OnShard called); the next member opens
// a new shard. A caller that must read a shard back before it adds more (as
// links to earlier members do) calls it.
func (w *Writer) EndShard() error {
	if w.closed {
		return ErrClosed
	}
	if w.cur != nil && w.cur.count > 0 {
		if err := w.finishShard(); err != nil {
			return err
		}
	}
	return w.settle()
}

// groupStartsShard says whether a member starting a new placement group
// opens a new shard (see WriterOptions.GroupFill).
func (w *Writer) groupStartsShard() bool {
	g := w.opts.GroupFill
	if g < 0 {
		return false
	}
	if w.groupMax > 1 && w.cur.count+int64(w.groupMax) > int64(w.opts.MaxMembers) {
		return true
	}
	p := w.cur.projected()
	if g > 0 {
		return float64(p) >= float64(w.opts.MaxPackBytes)*g
	}
	// Past half full, and twice the largest group so far would not fit: a
	// group is then cut only if it is over half a shard and more than
	// twice any group before it, and shards of small groups fill up.
	return 2*p >= w.opts.MaxPackBytes && p+2*w.groupMaxBytes > w.opts.MaxPackBytes
}

// memberBytes is about what a member adds to a shard: its local header,
// name and bytes, and its central directory entry.
func memberBytes(key string, size int64) int64 {
	return size + localLen + centralLen + 2*int64(len(key))
}

// Add streams size bytes from r into the pack as member key and returns its
// reference. group names a placement group ("" for none): a member that
// starts a new group may open a new shard (see WriterOptions.GroupFill), so
// one group's members tend to share a shard.
//
// The key is validated and checked for duplicates before any byte is
// written. A stream that ends early or runs past size is an error; the
// partial member is cut off and the writer stays usable.
func (w *Writer) Add(key string, r io.Reader, size int64, group string) (string, error) {
	if err := w.place(key, size, group); err != nil {
		return "", err
	}
	if err := w.writeMember(key, r, size); err != nil {
		return "", fmt.Errorf("key %q: %w", key, err)
	}
	return w.added(key, size)
}

// AddBytes adds b as member key, like Add with a reader of b, but without
// copying b: the header and b go to the shard in one vectored write, and a
// large b is hashed for the manifest by reading it back from the shard
// (from the page cache) on the hashing goroutine instead of from a copy.
// b is not retained after AddBytes returns.
func (w *Writer) AddBytes(key string, b []byte, group string) (string, error) {
	if err := w.place(key, int64(len(b)), group); err != nil {
		return "", err
	}
	if err := w.writeBytes(key, b); err != nil {
		return "", fmt.Errorf("key %q: %w", key, err)
	}
	return w.added(key, int64(len(b)))
}

// place checks a member of size bytes and makes the current shard the one
// it goes into: the checks and placement Add and AddBytes share.
func (w *Writer) place(key string, size int64, group string) error {
	if w.closed {
		return ErrClosed
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.keyErr != nil {
		return w.keyErr
	}
	if err := w.collect(maxHashing); err != nil {
		return err
	}
	if err := ValidateKey(key); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("key %q: negative size %d", key, size)
	}
	loc, dup, err := w.keys.Get(key)
	if err != nil {
		return fmt.Errorf("pack %s: %w", w.dir, err)
	}
	if dup {
		return &KeyError{Key: key, Reason: "already added (in " + w.shards[loc.Shard] + ")", Err: ErrDuplicateKey}
	}
	startsGroup := w.startGroup(group)
	if startsGroup && w.cur != nil && w.cur.count > 0 && w.groupStartsShard() {
		if err := w.roll(); err != nil {
			return err
		}
	}
	if w.cur == nil || w.cur.count >= int64(w.opts.MaxMembers) ||
		(w.cur.count > 0 && w.cur.projectedWith(key, size) > w.opts.MaxPackBytes) {
		if w.cur != nil && !startsGroup && group != "" && w.groupIdx == w.cur.index {
			w.stats.GroupsSplit++
		}
		if err := w.roll(); err != nil {
			return err
		}
	}
	if startsGroup {
		w.group = group
		w.groupIdx = w.cur.index
	}
	w.countInGroup(group, key, size)
	return nil
}

// added records a member written to the current shard and returns its
// reference. A failure to record the key fails the writer: the member is
// in the shard, and a later duplicate could no longer be told apart.
func (w *Writer) added(key string, size int64) (string, error) {
	if err := w.keys.Put(key, keyindex.Loc{Shard: int32(len(w.shards) - 1), Size: size}); err != nil {
		return "", w.failShard(fmt.Errorf("pack %s: %w", w.dir, err))
	}
	w.stats.Members++
	w.stats.Bytes += size
	return w.Ref(key, w.cur.name), nil
}

// AddFile adds the regular file at path as member key.
func (w *Writer) AddFile(key, path, group string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", path)
	}
	return w.Add(key, f, st.Size(), group)
}

// projected is the shard's size if it were closed now.
func (s *shardWriter) projected() int64 {
	cdSize := s.cdLen
	return s.off + cdSize + endRecordsLen(s.count, cdSize, s.off)
}

// projectedWith is the shard's exact size after adding one more member.
func (s *shardWriter) projectedWith(key string, size int64) int64 {
	n := int64(len(key))
	off := s.off + localLen + n + localExtraLen(size) + size
	cdSize := s.cdLen + centralLen + n + centralExtraLen(size, s.off)
	return off + cdSize + endRecordsLen(s.count+1, cdSize, off)
}

// roll completes the current shard, if any, and opens the next one.
func (w *Writer) roll() error {
	if w.cur != nil {
		if err := w.finishShard(); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("%s-%04d.zip", w.opts.Prefix, w.next)
	if _, err := os.Lstat(filepath.Join(w.dir, name)); err == nil {
		return fmt.Errorf("pack %s: %s already exists", w.dir, name)
	}
	f, err := os.CreateTemp(w.dir, "."+name+".*.tmp")
	if err != nil {
		return fmt.Errorf("pack %s: %w", w.dir, err)
	}
	w.cd.S = w.cd.S[:0] // the directory of the shard before is written or discarded
	w.cur = &shardWriter{f: f, tmp: f.Name(), name: name, index: w.next, sha: newHashPipe(!w.opts.NoManifest, f, w.hs), sync: newShardSync(f)}
	w.shards = append(w.shards, name)
	w.next++
	return nil
}

// writeMember appends one member to the current shard.
func (w *Writer) writeMember(key string, r io.Reader, size int64) error {
	s := w.cur
	hdrOff := s.off
	var crc uint32
	if size <= smallMember {
		hdrLen := localLen + len(key)
		n := hdrLen + int(size)
		if len(s.batch) > 0 && len(s.batch)+n > batchBytes {
			if err := w.writeBatch(); err != nil {
				return err
			}
		}
		if s.batch == nil {
			s.batch = w.hs.get()
		}
		// Read into the batch past its end; a member that fails leaves
		// the batch as it was, and nothing on disk to cut.
		at := len(s.batch)
		buf := s.batch[at : at+n]
		if _, err := io.ReadFull(r, buf[hdrLen:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: stream ended before %d declared bytes", ErrSizeMismatch, size)
			}
			return err
		}
		if err := expectEOF(r, size); err != nil {
			return err
		}
		crc = crc32.ChecksumIEEE(buf[hdrLen:])
		appendLocalHeader(buf[:0], key, size, crc)
		s.batch = s.batch[:at+n]
		s.off += int64(n)
	} else {
		if err := w.writeBatch(); err != nil {
			return err
		}
		var err error
		if pre, ok := w.fileCRC(r, size); ok {
			crc, err = w.streamKnownCRC(key, r, size, pre)
		} else {
			crc, err = w.streamThenHash(key, r, size)
		}
		if err != nil {
			return err
		}
		s.startWriteback()
	}
	w.addCentral(key, size, crc, hdrOff)
	s.count++
	return nil
}

// writeBatch writes the members gathered in the current shard's batch and
// hands the buffer to the hasher.
func (w *Writer) writeBatch() error {
	s := w.cur
	b := s.batch
	if b == nil {
		return nil
	}
	s.batch = nil
	if _, err := s.f.Write(b); err != nil {
		w.hs.put(b)
		return w.failShard(err)
	}
	s.sha.send(b, s.off-int64(len(b)))
	s.startWriteback()
	return nil
}

// addCentral appends the current shard's directory entry for a member.
func (w *Writer) addCentral(key string, size int64, crc uint32, hdrOff int64) {
	w.cd.Reserve(centralLen + len(key) + int(centralExtraLen(size, hdrOff)))
	w.cd.S = appendCentralHeader(w.cd.S, key, size, crc, hdrOff)
	w.cur.cdLen = int64(len(w.cd.S))
}

// rangeHashMin is the smallest payload AddBytes leaves in the caller's
// memory: smaller ones are copied into the batch with their header (one
// copy is cheaper than a read back, and than a write of their own).
const rangeHashMin = 64 << 10

// writeBytes appends one member whose bytes are in memory.
func (w *Writer) writeBytes(key string, b []byte) error {
	s := w.cur
	size := int64(len(b))
	if size < rangeHashMin {
		return w.writeMember(key, bytes.NewReader(b), size)
	}
	if err := w.writeBatch(); err != nil {
		return err
	}
	hdrOff := s.off
	crc := crc32.ChecksumIEEE(b)
	hdr := appendLocalHeader(w.hdr[:0], key, size, crc)
	w.hdr = hdr
	if err := writev(s.f, hdr, b); err != nil {
		return w.failShard(err)
	}
	s.off += int64(len(hdr)) + size
	s.sha.sendRange(hdrOff, s.off-hdrOff)
	w.addCentral(key, size, crc, hdrOff)
	s.count++
	s.startWriteback()
	return nil
}

// fileCRC computes the CRC-32 of the next size bytes of r ahead of copying
// them, when r is a regular file that holds them: with the CRC known, the
// local header is complete before the payload, so the payload is hashed
// from the copy buffers as it passes instead of read back afterwards. The
// pass reads the file's pages (warm after it) at CRC-32 speed.
func (w *Writer) fileCRC(r io.Reader, size int64) (uint32, bool) {
	f, ok := r.(*os.File)
	if !ok || !w.cur.sha.hashing() {
		return 0, false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0, false
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil || st.Size()-pos < size {
		return 0, false
	}
	h := crc32.NewIEEE()
	for off := pos; off < pos+size; {
		if w.ctx.Err() != nil {
			return 0, false
		}
		chunk := w.copyBuf()[:min(copyBuf, pos+size-off)]
		if _, err := f.ReadAt(chunk, off); err != nil {
			return 0, false
		}
		h.Write(chunk)
		off += int64(len(chunk))
	}
	return h.Sum32(), true
}

// streamKnownCRC copies a member whose CRC-32 was computed beforehand: the
// header goes first, then the payload through pooled buffers that the
// hasher takes as they are written. The CRC is computed again on the way; a
// source that changed in between fails the member, which is cut off.
func (w *Writer) streamKnownCRC(key string, r io.Reader, size int64, want uint32) (uint32, error) {
	s := w.cur
	hdrOff := s.off
	hdr := appendLocalHeader(w.hs.get(), key, size, want)
	if _, err := s.f.Write(hdr); err != nil {
		w.hs.put(hdr)
		return 0, w.failShard(err)
	}
	s.sha.mark()
	s.sha.send(hdr, hdrOff)
	h := crc32.NewIEEE()
	var n int64
	var err error
	for n < size {
		if err = w.ctx.Err(); err != nil {
			break
		}
		buf := w.hs.get()
		chunk := buf[:min(copyBuf, size-n)]
		var m int
		m, err = io.ReadFull(r, chunk)
		if m > 0 {
			if _, werr := s.f.Write(chunk[:m]); werr != nil {
				w.hs.put(buf)
				return 0, w.failShard(werr)
			}
			h.Write(chunk[:m])
			s.sha.send(chunk[:m], hdrOff+int64(len(hdr))+n)
			n += int64(m)
		} else {
			w.hs.put(buf)
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("%w: stream ended after %d of %d declared bytes", ErrSizeMismatch, n, size)
			}
			break
		}
	}
	if err == nil {
		err = expectEOF(r, size)
	}
	if err == nil && h.Sum32() != want {
		err = fmt.Errorf("source changed while it was read (CRC-32 %08x before copying, %08x while copying)", want, h.Sum32())
	}
	if err != nil {
		s.sha.rollback()
		return 0, w.cutMember(hdrOff, err)
	}
	s.sha.unmark()
	s.off += int64(len(hdr)) + size
	return want, nil
}

// streamThenHash copies a member from a stream whose CRC-32 is known only
// at its end: the header is written with a zero CRC and completed after the
// payload, and the hasher then reads the member back from the shard file
// (the page cache) while the writer goes on with the next member.
func (w *Writer) streamThenHash(key string, r io.Reader, size int64) (uint32, error) {
	s := w.cur
	hdrOff := s.off
	hdr := appendLocalHeader(w.hdr[:0], key, size, 0)
	w.hdr = hdr
	hdrLen := int64(len(hdr))
	if _, err := s.f.Write(hdr); err != nil {
		return 0, w.failShard(err)
	}
	h := crc32.NewIEEE()
	n, err := w.copyData(io.MultiWriter(s.f, h), r, size)
	if err == nil && n < size {
		err = fmt.Errorf("%w: stream ended after %d of %d declared bytes", ErrSizeMismatch, n, size)
	}
	if err == nil {
		err = expectEOF(r, size)
	}
	if err != nil {
		return 0, w.cutMember(hdrOff, err)
	}
	crc := h.Sum32()
	var c [4]byte
	c[0], c[1], c[2], c[3] = byte(crc), byte(crc>>8), byte(crc>>16), byte(crc>>24)
	if _, err := s.f.WriteAt(c[:], hdrOff+localCRCOffset); err != nil {
		return 0, w.failShard(err)
	}
	s.sha.sendRange(hdrOff, hdrLen+size)
	s.off += hdrLen + size
	return crc, nil
}

// writebackChunk is how many written bytes accumulate before the writer asks
// the kernel to start writing them to disk, so that the fsync which
// completes a shard finds little left to do.
const writebackChunk = 32 << 20

// startWriteback asks the shard's sync goroutine to start writeback of the
// bytes written since the last call, once there are at least
// writebackChunk of them. It never waits for the disk.
func (s *shardWriter) startWriteback() {
	written := s.off - int64(len(s.batch))
	n := written - s.flushed
	if n < writebackChunk {
		return
	}
	s.sync.writeback(s.flushed, n)
	s.flushed = written
}

// copyBuf returns the chunk buffer for streamed members.
func (w *Writer) copyBuf() []byte {
	if w.buf == nil {
		w.buf = make([]byte, copyBuf)
	}
	return w.buf
}

// copyData copies up to size bytes, checking for cancellation per chunk.
func (w *Writer) copyData(dst io.Writer, src io.Reader, size int64) (int64, error) {
	buf := w.copyBuf()
	var n int64
	for n < size {
		if err := w.ctx.Err(); err != nil {
			return n, err
		}
		chunk := buf[:min(int64(len(buf)), size-n)]
		m, err := io.ReadFull(src, chunk)
		if m > 0 {
			if _, werr := dst.Write(chunk[:m]); werr != nil {
				return n, werr
			}
			n += int64(m)
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return n, nil
			}
			return n, err
		}
	}
	return n, nil
}

// expectEOF checks that r has nothing left after size bytes.
func expectEOF(r io.Reader, size int64) error {
	var one [1]byte
	for {
		n, err := r.Read(one[:])
		if n > 0 {
			return fmt.Errorf("%w: stream is longer than %d declared bytes", ErrSizeMismatch, size)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// cutMember removes a partially written member so the shard stays valid.
func (w *Writer) cutMember(hdrOff int64, cause error) error {
	s := w.cur
	if err := s.f.Truncate(hdrOff); err != nil {
		return w.failShard(errors.Join(cause, err))
	}
	if _, err := s.f.Seek(hdrOff, io.SeekStart); err != nil {
		return w.failShard(errors.Join(cause, err))
	}
	return cause
}

// failShard marks the current shard unusable after an I/O error: it is
// removed, and the writer refuses further members.
func (w *Writer) failShard(err error) error {
	w.cur.failed = true
	w.abortCurrent()
	w.closed = true
	return err
}

// maxHashing bounds how many shards renamed into place may still be
// waiting for their digests; the writer waits for the oldest beyond it.
const maxHashing = 4

// finishShard writes the central directory and end records and hands the
// shard to its sync goroutine, which syncs it and renames it into place
// while the writer goes on. The shard finished before it is waited for
// first, and then joins the ones being hashed, with OnShard called for it:
// at the same point of every run, whatever the disk's speed.
func (w *Writer) finishShard() error {
	s := w.cur
	w.cd.Reserve(int(endRecordsLen(s.count, s.cdLen, s.off)))
	tail := appendEndRecords(w.cd.S, s.count, s.cdLen, s.off)
	batch := s.batch
	s.batch = nil
	if err := writev(s.f, batch, tail); err != nil {
		if batch != nil {
			w.hs.put(batch)
		}
		return w.failShard(fmt.Errorf("pack %s: %s: %w", w.dir, s.name, err))
	}
	if batch != nil {
		s.sha.send(batch, s.off-int64(len(batch)))
	}
	// Hashed back from the file (the page cache), so the table is free for
	// the next shard at once.
	s.sha.sendRange(s.off, int64(len(tail)))
	s.sha.close()
	w.cdSums[s.name] = crc32.ChecksumIEEE(tail[:s.cdLen])
	s.info = ShardInfo{Name: s.name, Bytes: s.off + int64(len(tail)), Members: int(s.count)}
	if err := w.settle(); err != nil {
		return err
	}
	w.cur = nil
	s.sync.finish(s.tmp, filepath.Join(w.dir, s.name), w.dir, s.name)
	w.settling = s
	keep := maxHashing
	if w.opts.Publish != nil {
		keep = 1 // published shards leave the directory: keep few behind
	}
	return w.collect(keep)
}

// settle waits until the shard being synced is in place, then adds it to
// the shards being hashed and calls OnShard.
func (w *Writer) settle() error {
	s := w.settling
	if s == nil {
		return nil
	}
	w.settling = nil
	if err := s.sync.wait(); err != nil {
		s.sha.sum() //nolint:errcheck // the shard is discarded
		s.f.Close()
		w.closed = true
		w.abortCurrent()
		w.drainHashing()
		return err
	}
	w.hashing = append(w.hashing, s)
	if w.opts.OnShard != nil {
		w.opts.OnShard(s.info)
	}
	return nil
}

// collect moves shards whose digests are computed, oldest first, to the
// completed ones. It waits until at most keep shards are still being
// hashed, and takes the finished ones beyond.
func (w *Writer) collect(keep int) error {
	for len(w.hashing) > 0 {
		s := w.hashing[0]
		if len(w.hashing) <= keep && !s.sha.finished() {
			return nil
		}
		w.hashing = w.hashing[1:]
		digest, err := s.sha.sum()
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			w.closed = true
			w.abortCurrent()
			w.drainHashing()
			return fmt.Errorf("pack %s: %s: %w", w.dir, s.name, err)
		}
		if digest != nil {
			s.info.SHA256 = hex.EncodeToString(digest)
		}
		w.done = append(w.done, s.info)
		if w.opts.Publish != nil {
			if err := w.publish(s.info); err != nil {
				w.closed = true
				w.abortCurrent()
				w.drainHashing()
				return err
			}
		}
	}
	return nil
}

// publish checks a completed shard as Close would and hands it to
// WriterOptions.Publish.
func (w *Writer) publish(info ShardInfo) error {
	// Not into the directory table: collect runs between members too,
	// while the open shard's directory is being built there.
	buf, err := w.checkWrittenShard(filepath.Join(w.dir, info.Name), info, w.pubBuf[:0])
	w.pubBuf = buf[:0]
	if err != nil {
		return fmt.Errorf("pack %s: %w", w.dir, err)
	}
	return w.opts.Publish(info)
}

// drainHashing stops waiting for digests after a failure: the hashing
// goroutines finish and their files are closed.
func (w *Writer) drainHashing() {
	if s := w.settling; s != nil {
		w.settling = nil
		s.sync.wait() //nolint:errcheck // the writer already failed
		w.hashing = append(w.hashing, s)
	}
	for _, s := range w.hashing {
		s.sha.sum() //nolint:errcheck // the writer already failed
		s.f.Close()
	}
	w.hashing = nil
}

// abortCurrent closes and removes the current temporary shard.
func (w *Writer) abortCurrent() {
	if w.cur == nil {
		return
	}
	w.cur.sync.cancel()
	if b := w.cur.batch; b != nil {
		w.cur.batch = nil
		w.hs.put(b)
	}
	w.cur.sha.sum() //nolint:errcheck // the shard is discarded
	w.cur.f.Close()
	os.Remove(w.cur.tmp)
	w.cur = nil
}

// Close completes the last shard, checks every shard this writer completed
// against its central directory, writes pack.manifest.json (unless disabled)
// and returns what was written. A writer that added nothing writes nothing.
func (w *Writer) Close() (Stats, error) {
	if w.closed {
		return w.stats, ErrClosed
	}
	w.closed = true
	defer w.unlock()
	if w.cur != nil {
		if err := w.finishShard(); err != nil {
			return w.stats, err
		}
	}
	if err := w.settle(); err != nil {
		return w.stats, err
	}
	if err := w.collect(0); err != nil {
		return w.stats, err
	}
	for _, sh := range w.done {
		if sh.Resumed || w.opts.Publish != nil {
			continue // published shards were checked before
		}
		// The table held the largest directory this writer built, so it
		// has the room (a directory that grew on disk gets a heap buffer).
		if _, err := w.checkWrittenShard(filepath.Join(w.dir, sh.Name), sh, w.cd.S[:0:cap(w.cd.S)]); err != nil {
			return w.stats, fmt.Errorf("pack %s: %w", w.dir, err)
		}
	}
	if err := atomicfile.SyncDir(w.dir); err != nil {
		return w.stats, fmt.Errorf("pack %s: %w", w.dir, err)
	}
	w.stats.Shards = len(w.done)
	w.stats.ShardFiles = append([]ShardInfo(nil), w.done...)
	if len(w.done) > 0 && !w.opts.NoManifest {
		if err := WriteManifest(w.dir, w.done); err != nil {
			return w.stats, err
		}
	}
	return w.stats, nil
}

// Abort stops the writer and removes its temporary shard. Completed shards
// stay (Abort waits for the digests still being computed). Abort after
// Close does nothing.
func (w *Writer) Abort() {
	w.closed = true
	w.abortCurrent()
	_ = w.settle()   // a shard being synced comes into place and stays
	_ = w.collect(0) // shards already in place stay whatever this reports
	w.keys.Close()
	w.unlock()
}

// checkWrittenShard re-reads a finished shard's central directory and
// checks it against what the writer wrote: the size on disk, the member
// count, every entry STORED, unencrypted, in write order without overlap
// and ending before the directory, and the directory's bytes those the
// writer built (their CRC-32: the names, sizes and offsets of the members
// it added, each key once). It walks the directory without building a list
// of its entries, and reads no key back.
func (w *Writer) checkWrittenShard(path string, info ShardInfo, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return buf, err
	}
	if st.Size() != info.Bytes {
		return buf, fmt.Errorf("%s: %d bytes on disk, %d written", info.Name, st.Size(), info.Bytes)
	}
	cd, err := readCentral(f, st.Size(), buf)
	if err != nil {
		return buf, fmt.Errorf("%s: %w", info.Name, err)
	}
	buf = cd.buf
	if cd.count != int64(info.Members) {
		return buf, fmt.Errorf("%s: directory lists %d members, %d written", info.Name, cd.count, info.Members)
	}
	var prevEnd int64
	err = walkCentral(cd.buf, cd.count, cd.base, st.Size(), func(e *Entry, _ []byte) error {
		switch {
		case e.Method != methodStored || e.Flags&(flagEncrypted|flagStrongEnc) != 0 || e.CompressedSize != e.Size:
			return fmt.Errorf("%s:%s: method %d, flags %#x, stored size %d, size %d: not as written", info.Name, e.Name, e.Method, e.Flags, e.CompressedSize, e.Size)
		case e.HeaderOffset < prevEnd:
			return fmt.Errorf("%s:%s: overlaps the member before it", info.Name, e.Name)
		}
		// The local header holds at least the fixed part and the name.
		prevEnd = e.HeaderOffset + localLen + int64(e.NameLen) + e.Size
		if prevEnd > cd.start {
			return fmt.Errorf("%s:%s: extends into the central directory", info.Name, e.Name)
		}
		return nil
	})
	if err != nil {
		return buf, err
	}
	if want, got := w.cdSums[info.Name], crc32.ChecksumIEEE(cd.buf); got != want {
		return buf, fmt.Errorf("%s: central directory differs from the one written (CRC-32 %08x, written %08x): names, sizes or offsets changed", info.Name, got, want)
	}
	return buf, nil
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
		switch {
		case e.Method != methodStored:
			out = append(out, fmt.Sprintf("%s:%s: not STORED (method %d)", shard, e.Name, e.Method))
		case e.Flags&(flagEncrypted|flagStrongEnc) != 0:
			out = append(out, fmt.Sprintf("%s:%s: encrypted", shard, e.Name))
		case e.CompressedSize != e.Size:
			out = append(out, fmt.Sprintf("%s:%s: stored size %d differs from size %d", shard, e.Name, e.CompressedSize, e.Size))
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

// sortShardNames orders shard file names by prefix and then numerically by
// index, so pack-10000.zip follows pack-9999.zip; other names sort last by
// name.
func sortShardNames(names []string) {
	type k struct {
		prefix string
		idx    int
		ok     bool
	}
	key := func(s string) k {
		m := shardRE.FindStringSubmatch(s)
		if m == nil {
			return k{}
		}
		n, err := strconv.Atoi(m[2])
		return k{m[1], n, err == nil}
	}
	sort.SliceStable(names, func(i, j int) bool {
		a, b := key(names[i]), key(names[j])
		if a.ok != b.ok {
			return a.ok
		}
		if a.ok && (a.prefix != b.prefix || a.idx != b.idx) {
			if a.prefix != b.prefix {
				return a.prefix < b.prefix
			}
			return a.idx < b.idx
		}
		return names[i] < names[j]
	})
}
