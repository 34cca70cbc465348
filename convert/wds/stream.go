package wds

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
)

// Compression names, as plans and errors show them.
const (
	CompressionNone  = "none"
	CompressionGzip  = "gzip"
	CompressionBzip2 = "bzip2"
	CompressionXz    = "xz"
	CompressionZstd  = "zstd"
)

// readBuffer is the read-ahead buffer between a shard file (or standard
// input) and the tar or decompression reader.
const readBuffer = 32 << 10

// detectCompression names the compression of a stream from its first bytes.
// Anything unrecognised is taken to be a plain tar; the tar reader then
// rejects what is not one.
func detectCompression(magic []byte) string {
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		return CompressionGzip
	case len(magic) >= 4 && bytes.HasPrefix(magic, []byte("BZh")) && magic[3] >= '1' && magic[3] <= '9':
		return CompressionBzip2
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		return CompressionXz
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return CompressionZstd
	case len(magic) >= 4 && magic[0]&0xf0 == 0x50 && bytes.Equal(magic[1:4], []byte{0x2a, 0x4d, 0x18}):
		return CompressionZstd // a zstd skippable frame first
	}
	return CompressionNone
}

// Decompress returns the uncompressed stream of br, whose compression it
// detects from the first bytes (gzip, multi-member included; bzip2; xz;
// zstd, a leading skippable frame included; otherwise none, br itself),
// the compression's name and a function that releases the decompressor.
// convert-wds and verify --against read shards through it, so both accept
// the same files.
func Decompress(br *bufio.Reader) (r io.Reader, comp string, release func(), err error) {
	magic, _ := br.Peek(6)
	comp, release = detectCompression(magic), func() {}
	switch comp {
	case CompressionNone:
		return br, comp, release, nil
	case CompressionGzip:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, comp, release, err
		}
		return zr, comp, func() { zr.Close() }, nil
	case CompressionBzip2:
		return bzip2.NewReader(br), comp, release, nil
	case CompressionXz:
		xr, err := xz.NewReader(br)
		if err != nil {
			return nil, comp, release, err
		}
		return xr, comp, release, nil
	default: // CompressionZstd
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, comp, release, err
		}
		return zr, comp, zr.Close, nil
	}
}

// countReader counts the bytes read through it: n is the position (moved
// by seeks too, see seekCountReader), read the bytes actually read.
type countReader struct {
	r    io.Reader
	n    int64
	read int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.read += int64(n)
	return n, err
}

// seekCountReader is a countReader over a file, so the tar reader can seek
// past payloads; n is then the absolute position.
type seekCountReader struct {
	countReader
	s io.Seeker
}

func (c *seekCountReader) Seek(off int64, whence int) (int64, error) {
	n, err := c.s.Seek(off, whence)
	if err == nil {
		c.n = n
	}
	return n, err
}

// shardStream reads the members of one shard and knows where in the
// uncompressed tar stream each one starts.
type shardStream struct {
	src  shardSource
	comp string

	file   *os.File      // nil for standard input and remote shards
	remote io.ReadCloser // a shard streamed from object storage
	raw    *countReader  // bytes taken from the file or standard input
	dec    io.Reader     // the uncompressed tar stream
	close  func()        // releases the decompressor

	pos *countReader // position in the uncompressed tar stream
	tr  *tar.Reader

	// nextHdr is where the next member's first header block starts, or -1
	// once a sparse member makes the physical layout unknown.
	nextHdr int64
	// last and lastOff name the previous member, for errors found while
	// skipping its payload.
	last    string
	lastOff int64
}

// remoteWindow is the most a header pass over a tar in object storage
// fetches with one ranged read.
const remoteWindow = 1 << 20

// openShard opens a shard for reading. With seek set and a plain tar file,
// the tar reader seeks past payloads instead of reading them (a header-only
// pass); otherwise it reads the stream sequentially through a buffer.
//
// Standard input is read through a reader that ctx cancels, so a signal
// ends the run even while a read on a pipe is blocked. A shard that is not
// a regular file (a FIFO, a device) is refused before any read.
func openShard(ctx context.Context, src shardSource, stdin io.Reader, seek bool) (*shardStream, error) {
	s := &shardStream{src: src, close: func() {}}
	in := stdin
	if stdin != nil && ctx.Done() != nil {
		in = &cancelReader{ctx: ctx, r: stdin}
	}
	if src.remote() {
		// The version the tree found: a shard replaced since fails its
		// reads (objstore.ErrChanged).
		st, prefix := src.tree.Store()
		obj, err := objstore.OpenListed(ctx, st, objstore.Info{Name: prefix + src.rel, Size: src.Size, ETag: src.etag})
		if err != nil {
			// The store's error names the object.
			return nil, fmt.Errorf("wds: %w", err)
		}
		if seek {
			// A header pass over a plain tar reads each header through a
			// ranged read, skipping what lies between (RangeReader).
			var magic [6]byte
			n, err := obj.ReadAt(magic[:], 0)
			if err != nil && !errors.Is(err, io.EOF) {
				obj.Close()
				return nil, fmt.Errorf("wds: %w", err)
			}
			if s.comp = detectCompression(magic[:n]); s.comp == CompressionNone {
				rr := objstore.NewRangeReader(obj, remoteWindow)
				sc := &seekCountReader{countReader: countReader{r: rr}, s: rr}
				s.raw, s.pos, s.dec = &sc.countReader, &sc.countReader, rr
				s.tr = tar.NewReader(sc)
				s.close = func() { obj.Close() }
				return s, nil
			}
		}
		s.remote = objstore.NewSeqReader(ctx, obj, objstore.SeqOptions{})
		in = s.remote
	} else if src.Path != "" {
		f, err := srcfile.Open(src.Path)
		if err != nil {
			return nil, &InputError{Source: "wds", Row: -1, File: src.Name, Offset: -1, Err: pathCause(err)}
		}
		s.file, in = f, f
	}
	if seek && s.file != nil {
		var magic [6]byte
		n, err := s.file.ReadAt(magic[:], 0)
		if err != nil && err != io.EOF {
			s.file.Close()
			return nil, &InputError{Source: "wds", Row: -1, File: src.Name, Offset: 0, Err: err}
		}
		if s.comp = detectCompression(magic[:n]); s.comp == CompressionNone {
			sc := &seekCountReader{countReader: countReader{r: s.file}, s: s.file}
			s.raw, s.pos, s.dec = &sc.countReader, &sc.countReader, s.file
			s.tr = tar.NewReader(sc)
			return s, nil
		}
	}
	s.raw = &countReader{r: in}
	br := bufio.NewReaderSize(s.raw, readBuffer)
	var err error
	s.dec, s.comp, s.close, err = Decompress(br)
	if err != nil {
		s.closeFile()
		return nil, &InputError{Source: "wds", Row: -1, File: src.Name, Offset: -1, Err: fmt.Errorf("corrupt %s stream: %w", s.comp, err), Hint: HintTruncated}
	}
	s.pos = &countReader{r: s.dec}
	s.tr = tar.NewReader(s.pos)
	return s, nil
}

// Close releases the shard.
func (s *shardStream) Close() {
	s.close()
	s.closeFile()
}

func (s *shardStream) closeFile() {
	if s.file != nil {
		s.file.Close()
	}
	if s.remote != nil {
		s.remote.Close()
	}
}

// next returns the next member's header and the offset of its first header
// block. It returns io.EOF after the last member, once the end-of-archive
// marker was seen.
func (s *shardStream) next() (*tar.Header, int64, error) {
	hdrOff := s.nextHdr
	h, err := s.tr.Next()
	if errors.Is(err, tar.ErrInsecurePath) && h != nil {
		err = nil // names are checked by the converter, with a better message
	}
	if err == io.EOF {
		if s.pos.n == 0 {
			return nil, 0, &InputError{Source: "wds", Row: -1, File: s.src.Name, Offset: 0, Err: errors.New("empty shard: not a tar archive"), Hint: HintTruncated}
		}
		if s.nextHdr >= 0 && s.pos.n < s.nextHdr && s.last != "" {
			// The stream ended inside the last member's payload or the
			// padding after it: the tar reader reports that as the end of
			// the archive; GNU tar and Python call it an unexpected EOF.
			return nil, 0, &InputError{Source: "wds", Row: -1, File: s.src.Name, Member: s.last, Offset: s.lastOff, Hint: HintTruncated,
				Err: fmt.Errorf("truncated: unexpected EOF at offset %d, inside the member's data or padding (it ends at %d)", s.eofOffset(), s.nextHdr)}
		}
		if s.nextHdr >= 0 && s.pos.n == s.nextHdr {
			e := &InputError{Source: "wds", Row: -1, File: s.src.Name, Offset: s.pos.n, Hint: HintTruncated,
				Err: errors.New("truncated: the shard ends without the end-of-archive marker")}
			if s.last != "" {
				e.Err = fmt.Errorf("truncated: the shard ends after member %q without the end-of-archive marker", s.last)
			}
			return nil, 0, e
		}
		return nil, 0, io.EOF
	}
	if err != nil {
		return nil, 0, s.readError(err)
	}
	dataOff := s.pos.n
	if isSparse(h) || s.nextHdr < 0 {
		s.nextHdr = -1
		hdrOff = -1
	} else {
		s.nextHdr = dataOff + (h.Size+511)/512*512
	}
	s.last, s.lastOff = h.Name, hdrOff
	return h, hdrOff, nil
}

// eofOffset is where the stream ended, for truncation errors: the position
// read to, or the file's size when the tar reader sought past its end.
func (s *shardStream) eofOffset() int64 {
	if s.comp == CompressionNone && s.src.Size >= 0 && s.pos.n > s.src.Size {
		return s.src.Size
	}
	return s.pos.n
}

// isSparse reports whether a member is stored sparse, so its payload in the
// archive is shorter than its size.
func isSparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// readError turns an error from the tar or decompression reader into an
// *InputError that says where reading stopped.
func (s *shardStream) readError(err error) error {
	e := &InputError{Source: "wds", Row: -1, File: s.src.Name, Offset: s.pos.n}
	// An error before the next header block was reached came from skipping
	// the previous member's payload.
	if s.last != "" && (s.nextHdr < 0 || s.pos.n < s.nextHdr) {
		e.Member = s.last
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		e.Err, e.Hint = fmt.Errorf("truncated: %w", err), HintTruncated
		if s.comp != CompressionNone {
			e.Err = fmt.Errorf("truncated %s stream: %w", s.comp, err)
		}
	case errors.Is(err, tar.ErrFieldTooLong):
		if s.nextHdr >= 0 {
			e.Offset = s.nextHdr
		}
		e.Member = s.headerName(e.Offset)
		e.Err = errors.New("its extended header (PAX records or a GNU long name) is larger than 1 MiB, the most this reader accepts (as Go's archive/tar)")
	case errors.Is(err, tar.ErrHeader):
		if s.nextHdr >= 0 {
			e.Offset = s.nextHdr
		}
		// Garbage from a corrupt compressed stream reaches the tar reader
		// before the decompressor's checksum fails: blame the stream when
		// its checksum does fail.
		if derr := s.drainCheck(); derr != nil {
			e.Err, e.Hint = fmt.Errorf("corrupt %s stream: decompression failed: %w", s.comp, derr), HintTruncated
			if errors.Is(derr, io.ErrUnexpectedEOF) {
				e.Err = fmt.Errorf("truncated %s stream: %w", s.comp, derr)
			}
			break
		}
		switch {
		case s.nextHdr == 0 && s.comp == CompressionNone:
			e.Err = errors.New("not a tar archive (nor gzip, bzip2, xz or zstd compressed)")
		case s.nextHdr == 0:
			e.Err = fmt.Errorf("%s stream holds no tar archive (it decompresses without error)", s.comp)
		default:
			e.Err = fmt.Errorf("corrupt tar header: %w", err)
		}
	case s.comp != CompressionNone && !isIOError(err):
		e.Err = fmt.Errorf("corrupt %s stream: %w", s.comp, err)
	default:
		return fmt.Errorf("wds: %s: at offset %d: %w", s.src.Name, s.pos.n, err)
	}
	// A seek past the end of a plain file succeeds; the read after it
	// fails. Report where the file ends.
	if s.comp == CompressionNone && s.src.Size >= 0 && e.Offset > s.src.Size {
		e.Offset = s.src.Size
	}
	return e
}

// drainLimit bounds how much of a compressed stream drainCheck reads to
// find out whether the decompressor fails (a bzip2 block is at most 900 kB
// of text, and its checksum is checked at its end).
const drainLimit = 16 << 20

// drainCheck reads on in a compressed stream whose tar bytes are corrupt
// and returns the decompressor's error, if it reports one within
// drainLimit bytes; nil for a plain stream.
func (s *shardStream) drainCheck() error {
	if s.comp == CompressionNone {
		return nil
	}
	_, err := io.Copy(io.Discard, io.LimitReader(s.dec, drainLimit))
	return err
}

// headerName names the member whose extended header starts at off in a
// plain shard file: the name a GNU long-name header begins with, or the
// path record of a PAX header when it comes within its first 4 KiB;
// otherwise the header block's own placeholder name ("././@PaxHeader").
// It returns "" when the file cannot be read there.
func (s *shardStream) headerName(off int64) string {
	if s.file == nil || s.comp != CompressionNone || off < 0 {
		return ""
	}
	buf := make([]byte, 512+4096)
	n, _ := s.file.ReadAt(buf, off)
	if n < 512 {
		return ""
	}
	hdr, data := buf[:512], buf[512:n]
	cstr := func(b []byte) string {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return string(b[:i])
		}
		return string(b)
	}
	switch hdr[156] {
	case 'L': // GNU long name: the data is the name
		if name := cstr(data); name != "" {
			return name + "…"
		}
	case 'x': // PAX records: "LEN key=value\n"
		for len(data) > 0 {
			sp := bytes.IndexByte(data, ' ')
			if sp <= 0 {
				break
			}
			l, err := strconv.Atoi(string(data[:sp]))
			if err != nil || l <= sp {
				break
			}
			if l > len(data) { // a record longer than what was read
				if v, ok := bytes.CutPrefix(data[sp+1:], []byte("path=")); ok {
					return string(v) + "…"
				}
				break
			}
			rec := data[sp+1 : l-1]
			if k, v, ok := bytes.Cut(rec, []byte("=")); ok && string(k) == "path" {
				return string(v)
			}
			data = data[l:]
		}
	}
	return cstr(hdr[:100])
}

// cancelReader reads from r (standard input) on a goroutine so that a
// cancelled ctx ends a blocked read: Read then returns the context's error,
// and the goroutine is left to finish when the process exits.
type cancelReader struct {
	ctx context.Context
	r   io.Reader
	res chan readResult
	buf []byte
}

type readResult struct {
	n   int
	err error
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if c.res == nil {
		c.res = make(chan readResult, 1)
	}
	if len(c.buf) < len(p) {
		c.buf = make([]byte, len(p))
	}
	buf := c.buf[:len(p)]
	go func() {
		n, err := c.r.Read(buf)
		c.res <- readResult{n, err}
	}()
	select {
	case r := <-c.res:
		copy(p, buf[:r.n])
		return r.n, r.err
	case <-c.ctx.Done():
		// The pending read owns buf now; later reads must not share it.
		c.buf, c.res = nil, nil
		return 0, c.ctx.Err()
	}
}

// isIOError reports whether err came from the operating system rather than
// from the bytes (a read failure, not corruption).
func isIOError(err error) bool {
	var pe *os.PathError
	var se *os.SyscallError
	return errors.As(err, &pe) || errors.As(err, &se)
}

// finish is called after the last member: it reads a compressed stream to
// its end so its checksums are verified (the tar reader stops at the
// end-of-archive marker, before the compressor's trailer).
func (s *shardStream) finish() error {
	if s.comp == CompressionNone {
		return nil
	}
	if _, err := io.Copy(io.Discard, s.pos); err != nil {
		// Bytes after the last gzip member that are not another member
		// (zero padding, say) are ignored, as gzip -d and GNU tar do: every
		// member before them passed its CRC check.
		if s.comp == CompressionGzip && errors.Is(err, gzip.ErrHeader) {
			return nil
		}
		return s.readError(err)
	}
	return nil
}

// payloadError turns an error met while a member's payload was read into an
// *InputError for that member.
func (s *shardStream) payloadError(member string, err error) error {
	e := s.readError(err)
	if ie, ok := e.(*InputError); ok {
		ie.Member = member
	}
	return e
}
