package srctree

import (
	"io"
	"sync"

	"github.com/bpconvert/bpconvert/objstore"
)

// The reads of a remote file.
const (
	// BlockSize is what a read that is not part of a sequential run is
	// rounded out to (aligned), and the first step of a run's read-ahead.
	BlockSize = 16 << 10
	// MaxAhead is the largest request a sequential run grows to; while a
	// run goes on, the next request of that size is in flight ahead of it.
	MaxAhead = 8 << 20
	// keptBytes bounds what one open file keeps of what it fetched.
	keptBytes = 2*MaxAhead + 8*BlockSize
)

// span is a range of the file fetched, or being fetched, in one request.
type span struct {
	off  int64
	b    []byte
	done chan struct{}
	err  error
}

func (s *span) has(pos int64) bool { return pos >= s.off && pos < s.off+int64(len(s.b)) }

// remoteFile is a File in object storage. Reads are served from the spans
// fetched before where they cover them; otherwise a read fetches one span:
// aligned BlockSize blocks around it, or, when it starts where the
// previous read ended, a span twice the last one (up to MaxAhead); once a
// run is long, the span after the one being read is always in flight. Every byte a caller reads
// is fetched once while it stays among the kept spans (keptBytes), so
// sequential and nearby reads cost one request per span; no span reaches
// past the end of the file.
type remoteFile struct {
	obj objstore.Object

	mu    sync.Mutex
	spans []*span // most recently made last
	next  int64   // where the previous read ended, -1 before the first
	ahead int64   // the size of the last span of a sequential run
}

func newRemoteFile(obj objstore.Object) *remoteFile {
	return &remoteFile{obj: obj, next: -1}
}

func (f *remoteFile) Size() int64  { return f.obj.Size() }
func (f *remoteFile) Close() error { return f.obj.Close() }

// ReadAt implements io.ReaderAt.
func (f *remoteFile) ReadAt(p []byte, off int64) (int, error) {
	return f.readAt(p, off, true)
}

// readAt is ReadAt; without ahead no read counts as part of a sequential
// run, so none is fetched ahead.
func (f *remoteFile) readAt(p []byte, off int64, ahead bool) (int, error) {
	size := f.obj.Size()
	if len(p) == 0 {
		return 0, nil
	}
	if off < 0 || off >= size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), size-off)
	f.mu.Lock()
	seq := ahead && off == f.next
	f.next = off + want
	f.mu.Unlock()
	var n int64
	for n < want {
		s := f.spanAt(off+n, want-n, seq)
		<-s.done
		if s.err != nil {
			f.drop(s)
			return int(n), s.err
		}
		n += int64(copy(p[n:want], s.b[off+n-s.off:]))
		seq = ahead // the rest of one read continues it
	}
	if want < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// spanAt returns the span holding pos, fetching one that covers as much of
// [pos, pos+need) as a span may when none does.
func (f *remoteFile) spanAt(pos, need int64, seq bool) *span {
	f.mu.Lock()
	defer f.mu.Unlock()
	size := f.obj.Size()
	if s := f.holding(pos); s != nil {
		if end := s.off + int64(len(s.b)); seq && f.ahead >= MaxAhead/4 && end < size && f.holding(end) == nil {
			// the run has entered its last span: the next goes out now
			f.ahead = min(2*f.ahead, MaxAhead)
			f.fetch(end, f.limit(end, min(end+f.ahead, size)))
		}
		return s
	}
	var lo, hi int64
	if seq {
		f.ahead = min(max(2*f.ahead, need, BlockSize), MaxAhead)
		lo, hi = pos, pos+max(need, f.ahead)
	} else {
		lo = pos / BlockSize * BlockSize
		hi = (pos + need + BlockSize - 1) / BlockSize * BlockSize
		// not again what a kept span holds before pos
		for moved := true; moved && lo < pos; {
			moved = false
			if s := f.holding(lo); s != nil {
				lo, moved = min(pos, s.off+int64(len(s.b))), true
			}
		}
	}
	hi = f.limit(pos, min(hi, size))
	if !seq {
		f.ahead = hi - lo // a run that starts here doubles it
	}
	s := f.fetch(lo, hi)
	if seq && f.ahead >= MaxAhead/4 && hi < size && f.holding(hi) == nil {
		// a long run: the next span is fetched while this one is read
		f.fetch(hi, f.limit(hi, min(hi+f.ahead, size)))
	}
	return s
}

// holding returns the newest kept span holding pos, or nil. Called with
// f.mu held.
func (f *remoteFile) holding(pos int64) *span {
	for i := len(f.spans) - 1; i >= 0; i-- {
		if s := f.spans[i]; s.has(pos) {
			return s
		}
	}
	return nil
}

// limit ends a span that must hold pos before the next kept span that
// starts after pos, so no byte is fetched twice. Called with f.mu held.
func (f *remoteFile) limit(pos, hi int64) int64 {
	for _, s := range f.spans {
		if s.off > pos && s.off < hi {
			hi = s.off
		}
	}
	return hi
}

// fetch starts the request of [lo, hi) and keeps its span, letting go of
// the oldest spans beyond keptBytes. Called with f.mu held.
func (f *remoteFile) fetch(lo, hi int64) *span {
	s := &span{off: lo, b: make([]byte, hi-lo), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		n, err := f.obj.ReadAt(s.b, lo)
		if n == len(s.b) {
			err = nil
		} else if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		s.err = err
	}()
	f.spans = append(f.spans, s)
	var kept int64
	for i := len(f.spans) - 1; i >= 0; i-- {
		kept += int64(len(f.spans[i].b))
		if kept > keptBytes && i < len(f.spans)-1 {
			f.spans = append([]*span(nil), f.spans[i+1:]...)
			break
		}
	}
	return s
}

// Exact returns f read without read-ahead: a read of a remote file fetches
// the aligned blocks around it that no kept span holds, and reads that
// follow one another are not fetched ahead of time. It is for a reader
// that reads a few ranges it names exactly, such as a plan's sample of a
// table's row groups, and would otherwise have a run of two reads fetch
// far past what it wants. A local file is returned as it is.
func Exact(f File) File {
	if rf, ok := f.(*remoteFile); ok {
		return exactFile{rf}
	}
	return f
}

type exactFile struct{ *remoteFile }

func (f exactFile) ReadAt(p []byte, off int64) (int, error) { return f.readAt(p, off, false) }

// drop forgets a span whose request failed, so a later read asks again.
func (f *remoteFile) drop(s *span) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.spans {
		if x == s {
			f.spans = append(f.spans[:i:i], f.spans[i+1:]...)
			return
		}
	}
}
