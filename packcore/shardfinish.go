// Shard finishing: the central directory and end records, the sync and
// rename into place, the digests, and the checks of what was written.

package packcore

import (
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

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
		s.sha.sendWritten(batch, s.off-int64(len(batch)))
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
		if w.opts.Publish == nil {
			// Synced and hashed: nothing reads it again but the check of
			// its directory at Close. A pack larger than the memory
			// would otherwise have the kernel reclaim these pages while
			// the next shards are written, at the cost of CPU time the
			// writer and the hasher need (and of the source's pages).
			dropCache(s.f)
		}
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
