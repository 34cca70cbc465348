package packcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
