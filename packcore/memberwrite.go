// Member streaming: a member's local header and payload, its CRC-32, its
// central directory entry, and the hand-over of what is written to the
// hasher and to writeback.

package packcore

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
)

// smallMember is the largest payload the writer reads whole before writing
// it: such members are gathered with their headers into a lent buffer,
// written to the shard in one call when it is full, and hashed back from
// the page cache.
// Larger members are streamed.
const smallMember = 1 << 20

// copyBuf is the chunk size for streamed members.
const copyBuf = 1 << 20

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
// queues them for the hasher, to be read back.
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
	s.sha.sendWritten(b, s.off-int64(len(b)))
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
// pass reads the file's pages (warm after it) at CRC-32 speed, a large
// member's parts on every core at once (fileRangeCRC).
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
	crc, err := fileRangeCRC(w.ctx, f, pos, size, runtime.GOMAXPROCS(0), w.copyBuf())
	return crc, err == nil
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
	s.sha.send(hdr)
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
			s.sha.send(chunk[:m])
			n += int64(m)
			s.writebackTo(hdrOff + int64(len(hdr)) + n)
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
	n, err := w.copyData(io.MultiWriter(&writebackWriter{s: s, at: hdrOff + hdrLen}, h), r, size)
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
	s.writebackTo(s.off - int64(len(s.batch)))
}

// writebackTo is startWriteback for a shard written up to end, which a
// member being streamed has passed (s.off moves only once it is whole):
// writeback starts every writebackChunk of it, not once for the whole
// member at its end, so a large member's blocks are allocated and sent to
// the disk while it is copied (a 500 MB member left for the end took one
// sync_file_range of about 235 ms).
func (s *shardWriter) writebackTo(end int64) {
	n := end - s.flushed
	if n < writebackChunk {
		return
	}
	s.sync.writeback(s.flushed, n)
	s.flushed = end
}

// writebackWriter writes to a shard being streamed into, starting
// writeback as it goes (writebackTo); at is the shard offset of the next
// byte.
type writebackWriter struct {
	s  *shardWriter
	at int64
}

func (w *writebackWriter) Write(p []byte) (int, error) {
	n, err := w.s.f.Write(p)
	w.at += int64(n)
	w.s.writebackTo(w.at)
	return n, err
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
	s.flushed = min(s.flushed, hdrOff)
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
