package wds

import (
	"bufio"
	"fmt"
	"os"
)

// inlineName is the inline store inside the staging directory.
const inlineName = ".inline.spool"

// inlineStore keeps what the table needs of inline members, which are not
// packed: every inline key (so that a later member of that name is a
// duplicate) and the bytes of inline regular members, in a file beside the
// spool, for links that name them. Memory holds one entry per inline key,
// as the pack writer's index would.
type inlineStore struct {
	f    *os.File
	w    *bufio.Writer
	end  int64
	locs map[string]inlineLoc
}

// inlineLoc is where an inline member's bytes are; n is -1 for an inline
// link, whose bytes are its target's.
type inlineLoc struct {
	off, n int64
}

func createInlineStore(path string) (*inlineStore, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wds: inline store: %w", err)
	}
	return &inlineStore{f: f, w: bufio.NewWriterSize(f, 1<<20), locs: map[string]inlineLoc{}}, nil
}

// put records an inline regular member and its bytes.
func (s *inlineStore) put(key string, b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("wds: inline store: %w", err)
	}
	s.locs[key] = inlineLoc{off: s.end, n: int64(len(b))}
	s.end += int64(len(b))
	return nil
}

// mark records an inline link, whose bytes are its target's.
func (s *inlineStore) mark(key string) { s.locs[key] = inlineLoc{n: -1} }

// has reports whether key is an inline member.
func (s *inlineStore) has(key string) bool {
	_, ok := s.locs[key]
	return ok
}

// get returns an inline regular member's bytes; ok is false when key is
// not one.
func (s *inlineStore) get(key string) (b []byte, ok bool, err error) {
	loc, found := s.locs[key]
	if !found || loc.n < 0 {
		return nil, false, nil
	}
	if err := s.w.Flush(); err != nil {
		return nil, true, fmt.Errorf("wds: inline store: %w", err)
	}
	b = make([]byte, loc.n)
	if _, err := s.f.ReadAt(b, loc.off); err != nil {
		return nil, true, fmt.Errorf("wds: inline store: %q: %w", key, err)
	}
	return b, true, nil
}

// Close closes and removes the store.
func (s *inlineStore) Close() error {
	if s == nil || s.f == nil {
		return nil
	}
	name := s.f.Name()
	err := s.f.Close()
	s.f = nil
	os.Remove(name)
	return err
}
