package lancefmt

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/bpconvert/bpconvert/lancefmt/internal/wire"
)

// bufferAlign is the alignment of every buffer a writer places in a data
// file (2.1+ readers require 64; 2.0 files use it too).
const bufferAlign = 64

// srcFile is a v2 data file opened for page copying: its footer numbers and
// the raw and decoded metadata of every column.
type srcFile struct {
	name         string // relative path, for errors
	f            File
	size         int64
	major, minor uint16
	numGlobal    uint32
	rawCols      [][]byte
	cols         []columnInfo
}

// openSrcFile opens the v2 data file at path of d's storage and reads its
// column metadata.
func openSrcFile(ctx context.Context, d *Dataset, path, name string) (*srcFile, error) {
	f, err := d.openFile(ctx, path)
	if err != nil {
		return nil, err
	}
	s := &srcFile{name: name, f: f, size: f.Size()}
	if err := s.readMeta(); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// close closes the file.
func (s *srcFile) close() { s.f.Close() }

// readMeta reads the footer, the column metadata offsets table and the raw
// column metadata.
func (s *srcFile) readMeta() error {
	if s.size < fileFooterBytes {
		return fmt.Errorf("%w: data file of %d bytes is too short", errCorrupt, s.size)
	}
	var foot [fileFooterBytes]byte
	if _, err := s.f.ReadAt(foot[:], s.size-fileFooterBytes); err != nil {
		return fmt.Errorf("read footer: %w", err)
	}
	if string(foot[36:]) != "LANC" {
		return fmt.Errorf("%w: data file lacks the LANC magic", errCorrupt)
	}
	le := binary.LittleEndian
	colMetaStart, cmoStart, gboStart := le.Uint64(foot[0:]), le.Uint64(foot[8:]), le.Uint64(foot[16:])
	s.numGlobal = le.Uint32(foot[24:])
	numCols := uint64(le.Uint32(foot[28:]))
	s.major, s.minor = le.Uint16(foot[32:]), le.Uint16(foot[34:])
	if s.major == 0 && s.minor < 3 || s.major == 1 {
		return fmt.Errorf("%w: footer says file version %d.%d, not a v2 file", errCorrupt, s.major, s.minor)
	}
	if s.major > 2 || s.major == 2 && s.minor > 2 {
		return fmt.Errorf("file version %d.%d is not supported (2.3 is unstable; 2.0, 2.1 and 2.2 are)", s.major, s.minor)
	}
	end := uint64(s.size - fileFooterBytes)
	start := min(colMetaStart, cmoStart, gboStart)
	if start > end || end-start > maxMetadataBytes || cmoStart > end || numCols > (end-cmoStart)/16 {
		return fmt.Errorf("%w: metadata tables outside the file", errCorrupt)
	}
	tail := make([]byte, end-start)
	if _, err := s.f.ReadAt(tail, int64(start)); err != nil {
		return fmt.Errorf("read metadata: %w", err)
	}
	cmo := tail[cmoStart-start:]
	for i := uint64(0); i < numCols; i++ {
		pos, n := le.Uint64(cmo[16*i:]), le.Uint64(cmo[16*i+8:])
		if pos < start || pos > end || n > end-pos {
			return fmt.Errorf("%w: column %d metadata at %d+%d outside the metadata region", errCorrupt, i, pos, n)
		}
		raw := tail[pos-start : pos-start+n]
		ci, err := parseColumnMetadata(raw)
		if err != nil {
			return fmt.Errorf("column %d metadata: %w", i, err)
		}
		for _, p := range ci.pages {
			for k, off := range p.bufOffsets {
				if off > uint64(s.size) || p.bufSizes[k] > uint64(s.size)-off {
					return fmt.Errorf("%w: column %d: page buffer at %d+%d outside the file of %d bytes", errCorrupt, i, off, p.bufSizes[k], s.size)
				}
			}
		}
		for k, off := range ci.bufOffsets {
			if k >= len(ci.bufSizes) || off > uint64(s.size) || ci.bufSizes[k] > uint64(s.size)-off {
				return fmt.Errorf("%w: column %d: column buffer outside the file", errCorrupt, i)
			}
		}
		s.rawCols = append(s.rawCols, raw)
		s.cols = append(s.cols, ci)
	}
	return nil
}

// fileWriter writes a v2 data file: aligned buffers, then the file
// descriptor, the column metadata, the offset tables and the footer.
type fileWriter struct {
	f      *os.File
	w      *bufio.Writer
	pos    uint64
	cols   [][]byte // column metadata messages
	copied uint64   // page bytes copied from source files
}

// createFileWriter creates the data file at path.
func createFileWriter(path string) (*fileWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &fileWriter{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// write appends b.
func (w *fileWriter) write(b []byte) error {
	n, err := w.w.Write(b)
	w.pos += uint64(n)
	return err
}

// align pads the file to a multiple of bufferAlign.
func (w *fileWriter) align() error {
	var zero [bufferAlign]byte
	if r := w.pos % bufferAlign; r != 0 {
		return w.write(zero[:bufferAlign-r])
	}
	return nil
}

// writeBuffer writes an aligned buffer and returns its offset.
func (w *fileWriter) writeBuffer(b []byte) (uint64, error) {
	if err := w.align(); err != nil {
		return 0, err
	}
	off := w.pos
	return off, w.write(b)
}

// copyBuffer copies n bytes at off of r as an aligned buffer and returns
// its new offset. Only a copy buffer's worth of bytes is in memory.
func (w *fileWriter) copyBuffer(r io.ReaderAt, off, n uint64) (uint64, error) {
	if err := w.align(); err != nil {
		return 0, err
	}
	at := w.pos
	c, err := io.Copy(w.w, io.NewSectionReader(r, int64(off), int64(n)))
	w.pos += uint64(c)
	if err == nil && uint64(c) != n {
		err = fmt.Errorf("%w: buffer at %d+%d truncated after %d bytes", errCorrupt, off, n, c)
	}
	return at, err
}

// copyColumn copies column ci of src: its page and column buffers byte for
// byte, and its metadata with the new buffer offsets.
func (w *fileWriter) copyColumn(ctx context.Context, src *srcFile, ci int) error {
	col := &src.cols[ci]
	pageOffs := make([][]uint64, len(col.pages))
	for pi := range col.pages {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := &col.pages[pi]
		for k, off := range p.bufOffsets {
			at, err := w.copyBuffer(src.f, off, p.bufSizes[k])
			if err != nil {
				return fmt.Errorf("column %d page %d: %w", ci, pi, err)
			}
			w.copied += p.bufSizes[k]
			pageOffs[pi] = append(pageOffs[pi], at)
		}
	}
	var colOffs []uint64
	for k, off := range col.bufOffsets {
		at, err := w.copyBuffer(src.f, off, col.bufSizes[k])
		if err != nil {
			return fmt.Errorf("column %d buffer %d: %w", ci, k, err)
		}
		w.copied += col.bufSizes[k]
		colOffs = append(colOffs, at)
	}
	meta, err := rewriteColumnMeta(src.rawCols[ci], pageOffs, colOffs)
	if err != nil {
		return fmt.Errorf("column %d: %w", ci, err)
	}
	w.cols = append(w.cols, meta)
	return nil
}

// rewriteColumnMeta re-encodes a ColumnMetadata message with new page and
// column buffer offsets, keeping every other field as it is.
func rewriteColumnMeta(raw []byte, pageOffs [][]uint64, colOffs []uint64) ([]byte, error) {
	out := pbuf(nil)
	pi := 0
	err := wire.Walk(raw, func(f wire.Field) error {
		switch f.Num {
		case columnPages:
			if pi >= len(pageOffs) {
				return fmt.Errorf("%w: more pages than expected", errCorrupt)
			}
			p := pbuf(nil).packed(pageBufferOffsets, pageOffs[pi])
			pi++
			if err := wire.Walk(f.B, func(g wire.Field) error {
				if g.Num != pageBufferOffsets {
					p = p.raw(g)
				}
				return nil
			}); err != nil {
				return err
			}
			out = out.bytes(columnPages, p)
		case columnBufferOffsets:
		default:
			out = out.raw(f)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if pi != len(pageOffs) {
		return nil, fmt.Errorf("%w: %d pages rewritten of %d", errCorrupt, pi, len(pageOffs))
	}
	return out.packed(columnBufferOffsets, colOffs), nil
}

// pageWriter returns an emit function that writes each page's buffers at
// once and keeps only its metadata, and a function finishing the column.
func (w *fileWriter) pageWriter() (emit func(outPage) error, done func()) {
	meta := pbuf(nil).bytes(columnEncoding, columnValuesEncoding)
	emit = func(p outPage) error {
		var offs, sizes []uint64
		for _, b := range p.buffers {
			at, err := w.writeBuffer(b)
			if err != nil {
				return err
			}
			offs = append(offs, at)
			sizes = append(sizes, uint64(len(b)))
		}
		meta = meta.bytes(2, pageMessage(offs, sizes, p.length, p.encoding, p.priority))
		return nil
	}
	done = func() { w.cols = append(w.cols, meta) }
	return emit, done
}

// finish writes the file descriptor (global buffer 0), the column metadata,
// the offset tables and the footer, then syncs and closes the file. It
// returns the file size.
func (w *fileWriter) finish(descriptor []byte, major, minor uint16) (uint64, error) {
	gb, err := w.writeBuffer(descriptor)
	if err != nil {
		return 0, err
	}
	colStart := w.pos
	cmo := make([]byte, 0, 16*len(w.cols))
	le := binary.LittleEndian
	for _, c := range w.cols {
		cmo = le.AppendUint64(cmo, w.pos)
		cmo = le.AppendUint64(cmo, uint64(len(c)))
		if err := w.write(c); err != nil {
			return 0, err
		}
	}
	cmoStart := w.pos
	if err := w.write(cmo); err != nil {
		return 0, err
	}
	gboStart := w.pos
	var gbo []byte
	gbo = le.AppendUint64(gbo, gb)
	gbo = le.AppendUint64(gbo, uint64(len(descriptor)))
	if err := w.write(gbo); err != nil {
		return 0, err
	}
	var foot []byte
	foot = le.AppendUint64(foot, colStart)
	foot = le.AppendUint64(foot, cmoStart)
	foot = le.AppendUint64(foot, gboStart)
	foot = le.AppendUint32(foot, 1)
	foot = le.AppendUint32(foot, uint32(len(w.cols)))
	foot = le.AppendUint16(foot, major)
	foot = le.AppendUint16(foot, minor)
	foot = append(foot, "LANC"...)
	if err := w.write(foot); err != nil {
		return 0, err
	}
	if err := w.w.Flush(); err != nil {
		return 0, err
	}
	if err := w.f.Sync(); err != nil {
		return 0, err
	}
	return w.pos, w.f.Close()
}

// abort closes the file after a failure.
func (w *fileWriter) abort() { w.f.Close() }
