package objstore

import (
	"errors"
	"fmt"
	"io"
)

// RangeReader reads an object as an io.ReadSeeker for a reader that skips
// much of what it passes (a tar reader listing headers): each read is
// served from a window of up to Window bytes fetched with one ranged read
// at the position it needs. Seeking costs nothing; reading where the window
// does not reach fetches a new window there. A pass over small members
// thus fetches the object once, in windows, and one over large members one
// window per member.
type RangeReader struct {
	obj    Object
	window int64
	buf    []byte
	bufOff int64 // object offset of buf[0]
	pos    int64
}

// NewRangeReader returns a RangeReader of obj with windows of window bytes
// (1 MiB when 0 or less).
func NewRangeReader(obj Object, window int64) *RangeReader {
	if window <= 0 {
		window = 1 << 20
	}
	return &RangeReader{obj: obj, window: window}
}

// Read implements io.Reader.
func (r *RangeReader) Read(p []byte) (int, error) {
	size := r.obj.Size()
	if r.pos >= size {
		return 0, io.EOF
	}
	if r.pos < r.bufOff || r.pos >= r.bufOff+int64(len(r.buf)) {
		n := min(r.window, size-r.pos)
		if int64(cap(r.buf)) < n {
			r.buf = make([]byte, n)
		}
		r.buf = r.buf[:n]
		got, err := r.obj.ReadAt(r.buf, r.pos)
		if int64(got) < n && err == nil {
			err = io.ErrUnexpectedEOF
		}
		if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
			r.buf = r.buf[:0]
			return 0, err
		}
		r.bufOff = r.pos
	}
	n := copy(p, r.buf[r.pos-r.bufOff:])
	r.pos += int64(n)
	return n, nil
}

// Seek implements io.Seeker.
func (r *RangeReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += r.pos
	case io.SeekEnd:
		off += r.obj.Size()
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if off < 0 {
		return 0, fmt.Errorf("seek: negative position %d", off)
	}
	r.pos = off
	return off, nil
}
