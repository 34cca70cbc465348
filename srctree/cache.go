package srctree

import (
	"context"
	"io"
	"sync"

	"github.com/bpconvert/bpconvert/objstore"
)

// The reads of a remote file.
const (
	// BlockSize is what a read that is not part of a sequential run is
	// rounded out to (aligned), and the first step of a run's read-ahead.
	BlockSize = 16 << 10
	// MaxAhead is the largest request a sequential run grows to, and the
	// largest request any read makes: a larger read is fetched as a run of
	// requests of this size. While a run goes on, the next request of that
	// size is in flight ahead of it.
	MaxAhead = 8 << 20
	// MaxRuns is how many sequential runs each open File follows at once:
	// a reader that reads several streams of a file in turn (the column
	// chunks of a row group, the pages of several columns) has each read
	// ahead. A read that continues none of them replaces the newest run
	// that never went on past its first read, else the run read least
	// recently.
	MaxRuns = 4
	// An open object keeps, of what it fetched, twice the last request of
	// each run of its Files that has gone on past its first read (the span
	// being read and the one fetched ahead), at least runBytes, and
	// scatterBytes more: 16.1 MiB for one run at full speed or none, 64.1
	// MiB for MaxRuns at full speed (of one File or of several).
	runBytes     = 2 * MaxAhead
	scatterBytes = 8 * BlockSize
	// SampleBytes bounds what a tree keeps, for the files it opens later,
	// of what exact reads (see Exact) fetched: the blocks of a plan's
	// sample, which the conversion that follows reads again.
	SampleBytes = 16 << 20
	// freeBytes bounds the buffers of spans let go of that a tree keeps to
	// fetch later spans into.
	freeBytes = 2 * MaxAhead
)

// span is a range of the file fetched, or being fetched, in one request.
// Its fields but off and done are guarded by the mutex of the file that
// fetched it; a span the tree keeps (shared) is not written again once it
// is handed to other files.
type span struct {
	off  int64
	b    []byte
	done chan struct{}
	err  error

	exact  bool   // fetched by an exact read: offered to the tree when done
	shared bool   // kept by the tree too: its buffer is never reused
	refs   int    // reads copying out of b, and the request filling it
	gone   bool   // no longer kept: b is reused once refs is 0
	read   bool   // a read reached its last byte
	used   uint64 // when a read last asked for it (the file's tick)
}

func (s *span) end() int64         { return s.off + int64(len(s.b)) }
func (s *span) has(pos int64) bool { return pos >= s.off && pos < s.end() }

// run is one sequential run of reads of a file.
type run struct {
	start int64  // where its first read started
	last  int64  // where its last read started
	next  int64  // where its reads ended
	ahead int64  // the size of its last span
	on    bool   // it went on past its first read
	used  uint64 // the tick of its last read
}

// remoteFile is an object of a tree in object storage, open for reading,
// shared by every File the tree opened for it that is not closed (see
// handle): readers of one object opened at once (the column readers of
// one table) fetch its bytes once between them. Reads are served from the
// spans fetched before where they cover them; otherwise a read fetches one
// span (at most MaxAhead): aligned BlockSize blocks around it, or, when it
// continues one of the runs of its File (see runAt), a span twice the
// run's last one (up to MaxAhead); once a run is long, the span after the
// one being read is always in flight. Every byte a caller reads is fetched
// once while it stays among the kept spans: spans are let go of when more
// than twice the last request of each run that went on (at least
// runBytes), plus scatterBytes, are kept, spans whose last byte was read
// first, the least recently read first; their buffers are reused for later
// spans once no read copies out of them. No span reaches past the end of
// the file.
//
// A file of a tree also reads the spans the tree kept of exact reads of
// the same object before (pinned): a conversion reads again the blocks
// its plan's sample read, without fetching them again.
type remoteFile struct {
	obj  objstore.Object
	c    *cache // the tree's, or nil
	name string // the object's name in the tree, "" for a section

	handles int // open Files of it, guarded by c.mu

	mu     sync.Mutex
	spans  []*span          // fetched by this file
	pinned []*span          // kept by the tree, read-only
	runs   map[*[]*run]bool // the runs of each open File
	tick   uint64
	ranSeq bool // a read that was not exact was served
}

func newRemoteFile(obj objstore.Object, c *cache, name string) *remoteFile {
	f := &remoteFile{obj: obj, c: c, name: name}
	if c != nil && name != "" {
		f.pinned = c.samples(name)
	}
	return f
}

func (f *remoteFile) Size() int64 { return f.obj.Size() }

// close lets go of the file's spans (their buffers are reused by the tree
// once no read holds them) and closes the object. The tree's spans of an
// exact read are let go of by the close of a file that read them ahead,
// which is the conversion that followed the plan.
func (f *remoteFile) close() error {
	f.mu.Lock()
	for _, s := range f.spans {
		f.retire(s)
	}
	f.spans = nil
	if f.ranSeq && len(f.pinned) > 0 && f.c != nil {
		f.c.forget(f.name)
	}
	f.pinned = nil
	f.mu.Unlock()
	return f.obj.Close()
}

// readAt is ReadAt of a File whose runs are runs; without runs (an exact
// read) no read counts as part of a sequential run, so none is fetched
// ahead.
func (f *remoteFile) readAt(p []byte, off int64, runs *[]*run) (int, error) {
	ahead := runs != nil
	size := f.obj.Size()
	if len(p) == 0 {
		return 0, nil
	}
	if off < 0 || off >= size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), size-off)
	var r *run
	seq := false
	if ahead {
		f.mu.Lock()
		r, seq = f.runAt(runs, off, want)
		f.mu.Unlock()
	}
	var n int64
	for n < want {
		s, own := f.spanAt(off+n, want-n, r, seq)
		<-s.done
		if s.err != nil {
			if own {
				f.release(s)
			}
			f.drop(s)
			return int(n), s.err
		}
		n += int64(copy(p[n:want], s.b[off+n-s.off:]))
		if own {
			f.release(s)
		}
		seq = ahead // the rest of one read continues it
	}
	if want < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// runAt returns the run a read of want bytes at off continues (seq): one
// whose last read started at or before off and whose reads ended at or
// after it (a reader that reads a header, then the record from its start,
// goes on as one that reads on from the header). Otherwise it starts a
// run, in place of another: of the runs that never went on past their
// first read the newest, else the one read least recently. So reads here
// and there do not end the runs that go on, and of more streams than
// MaxRuns read in turn, all but two keep their runs. Called with f.mu
// held.
func (f *remoteFile) runAt(runs *[]*run, off, want int64) (r *run, seq bool) {
	f.tick++
	f.ranSeq = true
	for _, x := range *runs {
		if off >= x.last && off <= x.next {
			x.last, x.next, x.used, x.on = off, max(x.next, off+want), f.tick, true
			return x, true
		}
	}
	if len(*runs) < MaxRuns {
		r = &run{}
		*runs = append(*runs, r)
	} else {
		r = (*runs)[0]
		for _, x := range (*runs)[1:] {
			if !x.on && r.on || !x.on && !r.on && x.used > r.used || x.on && r.on && x.used < r.used {
				r = x
			}
		}
		*r = run{}
	}
	r.start, r.last, r.next, r.used = off, off, off+want, f.tick
	return r, false
}

// spanAt returns the span holding pos, fetching one that covers as much of
// [pos, pos+need) as a span may when none does; own says that the span is
// the file's and the caller holds a reference to it (see release). r is
// the run of the read, nil for an exact read.
func (f *remoteFile) spanAt(pos, need int64, r *run, seq bool) (s *span, own bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tick++
	size := f.obj.Size()
	if s, own = f.holding(pos); s != nil {
		if r != nil && r.ahead == 0 {
			r.ahead = int64(len(s.b)) // a run that starts in s doubles it
		}
		if own {
			s.refs++
			s.used = f.tick
			if pos+need >= s.end() {
				s.read = true
			}
		}
		if end := s.end(); seq && r.ahead >= MaxAhead/4 && end < size && f.free(end) {
			// the run has entered its last span: the next goes out now
			r.ahead = min(2*r.ahead, MaxAhead)
			f.fetchAhead(r, end, size)
		}
		return s, own
	}
	var lo, hi int64
	if seq {
		r.ahead = min(max(2*r.ahead, need, BlockSize), MaxAhead)
		lo, hi = pos, pos+max(min(need, MaxAhead), r.ahead)
	} else {
		lo = pos / BlockSize * BlockSize
		hi = (pos + min(need, MaxAhead) + BlockSize - 1) / BlockSize * BlockSize
		hi = min(hi, lo+MaxAhead)
		// not again what a kept span holds before pos
		for moved := true; moved && lo < pos; {
			moved = false
			if s, _ := f.holding(lo); s != nil {
				lo, moved = min(pos, s.end()), true
			}
		}
	}
	hi = f.limit(pos, min(hi, size))
	if r != nil && !seq {
		r.ahead = hi - lo // a run that starts here doubles it
	}
	s = f.fetch(lo, hi, r == nil)
	s.refs++
	s.used = f.tick
	if pos+need >= hi {
		s.read = true
	}
	if seq && r.ahead >= MaxAhead/4 && hi < size && f.free(hi) {
		// a long run: the next span is fetched while this one is read
		f.fetchAhead(r, hi, size)
	}
	return s, true
}

// fetchAhead starts the request of the span from lo that the run r reads
// next, as long as r.ahead and ending before the kept spans and where
// another run began (it read on from there and may have let go of what it
// read): no run fetches ahead what another read already. Called with f.mu
// held.
func (f *remoteFile) fetchAhead(r *run, lo, size int64) {
	hi := f.limit(lo, min(lo+r.ahead, size))
	for runs := range f.runs {
		for _, x := range *runs {
			if x != r && x.start >= lo && x.start < hi {
				hi = x.start
			}
		}
	}
	if hi > lo {
		f.fetch(lo, hi, false)
	}
}

// holding returns the newest span holding pos, the file's own (own) or
// one the tree kept, or nil. Called with f.mu held.
func (f *remoteFile) holding(pos int64) (s *span, own bool) {
	for i := len(f.spans) - 1; i >= 0; i-- {
		if s := f.spans[i]; s.has(pos) {
			return s, true
		}
	}
	for _, s := range f.pinned {
		if s.has(pos) {
			return s, false
		}
	}
	return nil, false
}

// free reports whether no kept span holds pos. Called with f.mu held.
func (f *remoteFile) free(pos int64) bool {
	s, _ := f.holding(pos)
	return s == nil
}

// limit ends a span that must hold pos before the next kept span that
// starts after pos, so no byte is fetched twice, and before where a run of
// the file's Files began after pos (see fetchAhead). Called with f.mu
// held.
func (f *remoteFile) limit(pos, hi int64) int64 {
	for _, l := range [][]*span{f.spans, f.pinned} {
		for _, s := range l {
			if s.off > pos && s.off < hi {
				hi = s.off
			}
		}
	}
	for runs := range f.runs {
		for _, r := range *runs {
			if r.start > pos && r.start < hi {
				hi = r.start
			}
		}
	}
	return hi
}

// keepLimit is what the file may keep of its own spans. Called with f.mu
// held.
func (f *remoteFile) keepLimit() int64 {
	var ahead int64
	for runs := range f.runs {
		for _, r := range *runs {
			if r.on {
				ahead += 2 * r.ahead
			}
		}
	}
	return max(ahead, runBytes) + scatterBytes
}

// fetch starts the request of [lo, hi) and keeps its span, first letting
// go of spans until what is kept, with it, is within keepLimit. Called
// with f.mu held.
func (f *remoteFile) fetch(lo, hi int64, exact bool) *span {
	var kept int64
	for _, s := range f.spans {
		kept += int64(len(s.b))
	}
	for limit := f.keepLimit(); len(f.spans) > 0 && kept+hi-lo > limit; {
		i := f.victim()
		kept -= int64(len(f.spans[i].b))
		f.retire(f.spans[i])
		f.spans = append(f.spans[:i], f.spans[i+1:]...)
	}
	s := &span{off: lo, b: f.c.get(hi - lo), done: make(chan struct{}), exact: exact, refs: 1}
	go f.fill(s)
	f.spans = append(f.spans, s)
	return s
}

// victim returns the index of the span to let go of first: of those whose
// last byte was read, else of all, the one read least recently. Called
// with f.mu held and f.spans not empty.
func (f *remoteFile) victim() int {
	best := -1
	for i, s := range f.spans {
		if best < 0 || s.read && !f.spans[best].read || s.read == f.spans[best].read && s.used < f.spans[best].used {
			best = i
		}
	}
	return best
}

// fill makes the request of s, then offers s to the tree when an exact
// read asked for it.
func (f *remoteFile) fill(s *span) {
	n, err := f.obj.ReadAt(s.b, s.off)
	if n == len(s.b) {
		err = nil
	} else if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	s.err = err
	// Offered to the tree before a reader can see it done: a reader that
	// closes its File as soon as its read returns must not retire the
	// span before it is kept. No one waits for done with f.mu held.
	f.mu.Lock()
	if err == nil && s.exact && !s.gone && f.c != nil && f.name != "" && f.c.keep(f.name, s) {
		s.shared = true
	}
	f.mu.Unlock()
	close(s.done)
	f.mu.Lock()
	f.unref(s)
	f.mu.Unlock()
}

// release gives up the caller's reference to the file's span s.
func (f *remoteFile) release(s *span) {
	f.mu.Lock()
	f.unref(s)
	f.mu.Unlock()
}

// unref drops a reference to s, reusing its buffer when it was the last
// of a span let go of. Called with f.mu held.
func (f *remoteFile) unref(s *span) {
	if s.refs--; s.refs == 0 && s.gone {
		f.recycle(s)
	}
}

// retire marks s as no longer kept. Called with f.mu held.
func (f *remoteFile) retire(s *span) {
	s.gone = true
	if s.refs == 0 {
		f.recycle(s)
	}
}

// recycle gives the buffer of a span no read holds to the tree, unless the
// tree keeps the span. Called with f.mu held.
func (f *remoteFile) recycle(s *span) {
	if !s.shared && s.b != nil {
		f.c.put(s.b)
		s.b = nil
	}
}

// drop forgets a span whose request failed, so a later read asks again.
func (f *remoteFile) drop(s *span) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.spans {
		if x == s {
			f.spans = append(f.spans[:i:i], f.spans[i+1:]...)
			f.retire(s)
			return
		}
	}
}

// handle is a File of a remote tree: one of the open Files of a shared
// remoteFile, with runs of its own.
type handle struct {
	*remoteFile
	runs []*run // guarded by the remoteFile's mu
	once sync.Once
}

// newHandle returns a new File of f.
func newHandle(f *remoteFile) *handle {
	h := &handle{remoteFile: f}
	f.mu.Lock()
	if f.runs == nil {
		f.runs = map[*[]*run]bool{}
	}
	f.runs[&h.runs] = true
	f.mu.Unlock()
	return h
}

// ReadAt implements io.ReaderAt.
func (h *handle) ReadAt(p []byte, off int64) (int, error) {
	return h.readAt(p, off, &h.runs)
}

// openRemote opens the object e of a tree in a bucket: the remoteFile of
// it already open, or a new one.
func (t *Tree) openRemote(ctx context.Context, e Entry) (File, error) {
	c := &t.cache
	if f := c.acquire(e.Name, nil); f != nil {
		return newHandle(f), nil
	}
	obj, err := objstore.OpenListed(ctx, t.store, objstore.Info{Name: t.prefix + e.Name, Size: e.Size, ETag: e.ETag})
	if err != nil {
		return nil, err
	}
	f := newRemoteFile(&recorder{Object: obj, t: t}, c, e.Name)
	if g := c.acquire(e.Name, f); g != f {
		obj.Close() // another open of the same object came first
		f = g
	}
	return newHandle(f), nil
}

// Close implements File: the last Close of the object's Files closes it.
func (h *handle) Close() error {
	var err error
	h.once.Do(func() {
		h.mu.Lock()
		delete(h.remoteFile.runs, &h.runs)
		h.mu.Unlock()
		if h.c.release(h.remoteFile) {
			err = h.remoteFile.close()
		}
	})
	return err
}

// section opens the n bytes of h from off as a file of its own, reading
// them alone; its Close closes h.
func (h *handle) section(off, n int64) File {
	return newHandle(newRemoteFile(objstore.Section(heldObject{Object: h.obj, h: h}, off, n), h.c, ""))
}

// heldObject is the object of a handle, whose Close is the handle's.
type heldObject struct {
	objstore.Object
	h *handle
}

func (o heldObject) Close() error { return o.h.Close() }

// Exact returns f read without read-ahead: a read of a remote file fetches
// the aligned blocks around it that no kept span holds, and reads that
// follow one another are not fetched ahead of time. It is for a reader
// that reads a few ranges it names exactly, such as a plan's sample of a
// table's row groups, and would otherwise have a run of two reads fetch
// far past what it wants. What exact reads fetch is kept by the tree (up
// to SampleBytes for all its files) for the Files of the same object it
// opens later, until the last of those, when one read ahead, is closed:
// the conversion that follows a plan reads the plan's sample without
// fetching it again. A local file is returned as it is.
func Exact(f File) File {
	if h, ok := f.(*handle); ok {
		return exactFile{h}
	}
	return f
}

type exactFile struct{ *handle }

func (f exactFile) ReadAt(p []byte, off int64) (int, error) { return f.readAt(p, off, nil) }

// cache is what a tree in a bucket shares among its open files: the spans
// exact reads fetched, by object, and buffers to fetch spans into. A nil
// cache shares nothing. Its methods may be called with a file's mutex
// held, never the other way round.
type cache struct {
	mu      sync.Mutex
	open    map[string]*remoteFile
	kept    map[string][]*span
	keptN   int64
	free    [][]byte
	freeN   int64
	reused  int64 // buffers handed out again, for tests
	fetched int64 // buffers handed out, for tests
}

// acquire returns the open remoteFile of name, counting one more File of
// it; when none is open it makes f (when not nil) the one.
func (c *cache) acquire(name string, f *remoteFile) *remoteFile {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.open[name]; g != nil {
		g.handles++
		return g
	}
	if f != nil {
		if c.open == nil {
			c.open = map[string]*remoteFile{}
		}
		f.handles = 1
		c.open[name] = f
	}
	return f
}

// release counts one File of f fewer, reporting whether it was the last:
// f is then no longer open.
func (c *cache) release(f *remoteFile) bool {
	if c == nil || f.name == "" {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.handles--; f.handles > 0 {
		return false
	}
	if c.open[f.name] == f {
		delete(c.open, f.name)
	}
	return true
}

// samples returns the spans kept of the object name.
func (c *cache) samples(name string) []*span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*span(nil), c.kept[name]...)
}

// keep keeps s, a span of name an exact read fetched, when it fits within
// SampleBytes.
func (c *cache) keep(name string, s *span) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keptN+int64(len(s.b)) > SampleBytes {
		return false
	}
	if c.kept == nil {
		c.kept = map[string][]*span{}
	}
	c.kept[name] = append(c.kept[name], s)
	c.keptN += int64(len(s.b))
	return true
}

// forget lets go of the spans kept of name.
func (c *cache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.kept[name] {
		c.keptN -= int64(len(s.b))
	}
	delete(c.kept, name)
}

// get returns a buffer of n bytes: a free one of at most twice that
// capacity, or a new one.
func (c *cache) get(n int64) []byte {
	if c == nil {
		return make([]byte, n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetched++
	best := -1
	for i, b := range c.free {
		if k := int64(cap(b)); k >= n && k <= 2*n && (best < 0 || k < int64(cap(c.free[best]))) {
			best = i
		}
	}
	if best < 0 {
		return make([]byte, n)
	}
	b := c.free[best]
	c.free = append(c.free[:best], c.free[best+1:]...)
	c.freeN -= int64(cap(b))
	c.reused++
	return b[:n]
}

// put keeps b for reuse while the free buffers stay within freeBytes.
func (c *cache) put(b []byte) {
	if c == nil || cap(b) < BlockSize {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := int64(cap(b))
	for c.freeN+k > freeBytes {
		// room is made by the smallest, when they are smaller than b
		i := 0
		for j, x := range c.free {
			if cap(x) < cap(c.free[i]) {
				i = j
			}
		}
		if len(c.free) == 0 || int64(cap(c.free[i])) >= k {
			return
		}
		c.freeN -= int64(cap(c.free[i]))
		c.free = append(c.free[:i], c.free[i+1:]...)
	}
	c.free = append(c.free, b[:0])
	c.freeN += k
}
