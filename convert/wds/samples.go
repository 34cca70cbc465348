package wds

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bpconvert/bpconvert/internal/keyindex"
)

// cellKind says what a spooled table cell holds.
type cellKind byte

const (
	// cellRef: the value is a pack key; the table holds its reference.
	cellRef cellKind = iota
	// cellInline: the value is the member's content, stored inline.
	cellInline
	// cellInlineKey: the value is a pack key whose content is stored
	// inline; it is read back from the pack when the table is written
	// (links, whose bytes are copied after their sample was spooled).
	cellInlineKey
)

// cell is one field of a sample.
type cell struct {
	field int // index into sampler.fields
	kind  cellKind
	value string
}

// row is one sample as spooled.
type row struct {
	key   string
	shard int
	cells []cell
}

// sampler groups members into samples by WebDataset's rule: a sample is a
// run of adjacent members of one shard whose names share the sample key.
// With strict set, a sample key that reappears later, or a field repeated
// within a sample, is an error; otherwise such problems are only counted.
// Finished samples go to the spool, when there is one.
type sampler struct {
	strict bool
	shards []string // shard names by index
	spool  *spoolWriter

	fieldID map[string]int
	fields  []string // in order of first appearance

	// seen maps every finished sample key to the shard it was in, in a
	// temporary file with about 9 bytes a key in memory (a run may hold
	// millions of samples); curSeen says whether it holds cur's key.
	seen    *keyindex.Spilled
	cur     row
	curSeen bool
	open    bool

	samples    int64
	splits     int64 // samples split by a later reappearance of their key
	dupFields  int64 // fields repeated within a sample
	firstSplit error
	firstDup   error
}

// newSampler returns a sampler whose index of sample keys keeps its file in
// dir.
func newSampler(strict bool, shards []string, spool *spoolWriter, dir string) *sampler {
	return &sampler{strict: strict, shards: shards, spool: spool, fieldID: map[string]int{},
		seen: keyindex.NewSpilled(dir, ".samples-keys-*.tmp")}
}

// close releases the index of sample keys; the counts stay.
func (s *sampler) close() { s.seen.Close() }

// problem records a grouping problem: an error when strict, else a count
// and the first of its kind.
func (s *sampler) problem(e *InputError, counter *int64, first *error) error {
	*counter++
	if *first == nil {
		*first = e
	}
	if s.strict {
		return e
	}
	return nil
}

// add puts one member into the current sample, or starts a new one.
func (s *sampler) add(shard int, member string, off int64, key, field string, kind cellKind, value string) error {
	if !s.open || key != s.cur.key || shard != s.cur.shard {
		if err := s.flush(); err != nil {
			return err
		}
		loc, seen, err := s.seen.Get(key)
		if err != nil {
			return fmt.Errorf("wds: sample keys: %w", err)
		}
		if seen {
			prev := loc.Shard
			e := &InputError{Source: "wds", Row: -1, File: s.shards[shard], Member: member, Offset: off, Hint: HintSortTar}
			if int(prev) == shard {
				e.Err = fmt.Errorf("sample %q reappears after other samples: WebDataset would split it in two", key)
			} else {
				e.Err = fmt.Errorf("sample %q was already in shard %s: WebDataset would yield it twice", key, s.shards[prev])
				e.Hint = HintShardPrefix
			}
			if err := s.problem(e, &s.splits, &s.firstSplit); err != nil {
				return err
			}
		}
		s.cur = row{key: key, shard: shard, cells: s.cur.cells[:0]}
		s.curSeen, s.open = seen, true
	}
	id, ok := s.fieldID[field]
	if !ok {
		id = len(s.fields)
		s.fieldID[field] = id
		s.fields = append(s.fields, field)
	}
	for _, c := range s.cur.cells {
		if c.field == id {
			e := &InputError{Source: "wds", Row: -1, File: s.shards[shard], Member: member, Offset: off,
				Err: fmt.Errorf("field %q appears twice in sample %q (WebDataset refuses the sample)", field, key)}
			if err := s.problem(e, &s.dupFields, &s.firstDup); err != nil {
				return err
			}
			return nil // keep the first, as a non-strict count
		}
	}
	s.cur.cells = append(s.cur.cells, cell{field: id, kind: kind, value: value})
	return nil
}

// endShard ends the current sample: samples never span shards.
func (s *sampler) endShard() error { return s.flush() }

// flush finishes the current sample.
func (s *sampler) flush() error {
	if !s.open {
		return nil
	}
	s.open = false
	if !s.curSeen {
		if err := s.seen.Put(s.cur.key, keyindex.Loc{Shard: int32(s.cur.shard)}); err != nil {
			return fmt.Errorf("wds: sample keys: %w", err)
		}
	}
	s.samples++
	if s.spool != nil {
		return s.spool.write(&s.cur)
	}
	return nil
}

// spoolWriter appends rows to a file so the samples table can be written
// once every field is known, with memory bounded by one batch.
type spoolWriter struct {
	f    *os.File
	w    *bufio.Writer
	rows int64
	buf  []byte
}

func createSpool(path string) (*spoolWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &spoolWriter{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// write appends a row: key, shard, cell count, then per cell its field,
// kind and value, lengths and numbers as uvarints.
func (s *spoolWriter) write(r *row) error {
	b := s.buf[:0]
	b = binary.AppendUvarint(b, uint64(len(r.key)))
	b = append(b, r.key...)
	b = binary.AppendUvarint(b, uint64(r.shard))
	b = binary.AppendUvarint(b, uint64(len(r.cells)))
	for _, c := range r.cells {
		b = binary.AppendUvarint(b, uint64(c.field))
		b = append(b, byte(c.kind))
		b = binary.AppendUvarint(b, uint64(len(c.value)))
		b = append(b, c.value...)
	}
	s.buf = b
	s.rows++
	_, err := s.w.Write(b)
	return err
}

// finish flushes the spool and returns a reader over its rows.
func (s *spoolWriter) finish() (*spoolReader, error) {
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return &spoolReader{r: bufio.NewReaderSize(s.f, 256<<10)}, nil
}

// Close closes and removes the spool file; later calls do nothing.
func (s *spoolWriter) Close() {
	if s.f == nil {
		return
	}
	s.f.Close()
	os.Remove(s.f.Name())
	s.f = nil
}

// spoolReader reads rows back in the order they were written.
type spoolReader struct {
	r   *bufio.Reader
	buf []byte // a string's bytes, before they become one
}

var errSpool = errors.New("samples spool is damaged")

// next reads the next row into r, reusing its cells; io.EOF after the last.
func (s *spoolReader) next(r *row) error {
	str := func() (string, error) {
		n, err := binary.ReadUvarint(s.r)
		if err != nil {
			return "", err
		}
		if uint64(cap(s.buf)) < n {
			s.buf = make([]byte, n)
		}
		b := s.buf[:n]
		if _, err := io.ReadFull(s.r, b); err != nil {
			return "", errSpool
		}
		return string(b), nil
	}
	num := func() (int, error) {
		n, err := binary.ReadUvarint(s.r)
		if err != nil {
			return 0, errSpool
		}
		return int(n), nil
	}
	key, err := str()
	if err == io.EOF {
		return io.EOF
	} else if err != nil {
		return errSpool
	}
	shard, err := num()
	if err != nil {
		return err
	}
	n, err := num()
	if err != nil {
		return err
	}
	r.key, r.shard, r.cells = key, shard, r.cells[:0]
	for range n {
		f, err := num()
		if err != nil {
			return err
		}
		k, err := s.r.ReadByte()
		if err != nil {
			return errSpool
		}
		v, err := str()
		if err != nil {
			return errSpool
		}
		r.cells = append(r.cells, cell{field: f, kind: cellKind(k), value: v})
	}
	return nil
}
