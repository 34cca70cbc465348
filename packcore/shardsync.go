package packcore

import (
	"fmt"
	"os"
)

// shardSync moves a shard's trips to the disk off the writing goroutine: it
// starts writeback of the ranges the writer hands it while the shard is
// written, and once the shard is finished it syncs it and renames it into
// place, while the writer goes on with the next shard. One goroutine a
// shard; the writer waits for a shard's sync before it finishes the next,
// so shards come into place in order.
type shardSync struct {
	f      *os.File
	ranges chan [2]int64
	done   chan struct{}
	// Set before ranges is closed; read by the goroutine after.
	commit          bool
	tmp, final, dir string
	name            string
	closed          bool // ranges is closed (by the writer)
	// err is the first failure; read after done.
	err error
}

// syncRanges is how many writeback requests may wait for the goroutine.
const syncRanges = 16

func newShardSync(f *os.File) *shardSync {
	s := &shardSync{f: f, ranges: make(chan [2]int64, syncRanges), done: make(chan struct{})}
	go s.run()
	return s
}

func (s *shardSync) run() {
	defer close(s.done)
	for r := range s.ranges {
		startWriteback(s.f, r[0], r[1])
	}
	if !s.commit {
		return
	}
	if err := s.f.Chmod(0o644); err != nil {
		s.fail(fmt.Errorf("pack %s: %s: %w", s.dir, s.name, err))
		return
	}
	if err := s.f.Sync(); err != nil {
		s.fail(fmt.Errorf("pack %s: %s: %w", s.dir, s.name, err))
		return
	}
	// The directory is synced once, when the writer closes: a rename lost
	// in a crash before then leaves the shard under its temporary name,
	// which a resumed writer removes and writes again.
	if err := os.Rename(s.tmp, s.final); err != nil {
		s.fail(fmt.Errorf("pack %s: %w", s.dir, err))
	}
}

// fail records err and removes the shard, which is not in place.
func (s *shardSync) fail(err error) {
	s.err = err
	os.Remove(s.tmp)
}

// writeback asks for writeback of n bytes at off to start.
func (s *shardSync) writeback(off, n int64) { s.ranges <- [2]int64{off, n} }

// finish hands over the completed shard: after the writeback requests
// queued before, the goroutine syncs it and renames tmp to final in dir.
func (s *shardSync) finish(tmp, final, dir, name string) {
	s.commit, s.tmp, s.final, s.dir, s.name = true, tmp, final, dir, name
	s.closed = true
	close(s.ranges)
}

// cancel stops the goroutine without syncing or renaming anything, unless
// finish came first, and waits for it.
func (s *shardSync) cancel() {
	if !s.closed {
		s.closed = true
		close(s.ranges)
	}
	<-s.done
}

// wait waits for the shard to be synced and in place.
func (s *shardSync) wait() error {
	<-s.done
	return s.err
}
