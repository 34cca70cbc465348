package sniff

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Reader lets a converter sniff a stream while copying it: it buffers the first
// [PrefixLen] bytes, hands them out through [Reader.Prefix] and [Reader.Kind], and then
// reads the whole stream, those bytes included, through Read or WriteTo. It never holds
// more than PrefixLen bytes of the payload. A Reader can be reused with [Reader.Reset],
// which keeps its buffer; it is not safe for concurrent use.
type Reader struct {
	br      *bufio.Reader
	started bool // Read or WriteTo was called since the last reset
}

// errStarted is returned by Prefix once the stream has been read from.
var errStarted = errors.New("sniff: prefix requested after reading")

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader {
	// Always a buffer of our own: NewReaderSize would hand back r itself when r is a
	// large enough *bufio.Reader, and Reset would then reset the caller's reader.
	br := bufio.NewReaderSize(nil, PrefixLen)
	br.Reset(r)
	return &Reader{br: br}
}

// Reset makes the Reader read from src, forgetting any buffered bytes.
func (r *Reader) Reset(src io.Reader) {
	r.br.Reset(src)
	r.started = false
}

// Prefix returns the first PrefixLen bytes of the stream, or all of it when it is
// shorter, without consuming them. The slice is valid until the next Read, WriteTo or
// Reset. It must be called before reading; afterwards it returns an error. Reaching the
// end of a short stream is not an error.
func (r *Reader) Prefix() ([]byte, error) {
	if r.started {
		return nil, errStarted
	}
	p, err := r.br.Peek(PrefixLen)
	if err == io.EOF {
		err = nil
	}
	return p, err
}

// Kind sniffs the prefix of the stream; see [Detect].
func (r *Reader) Kind() (Kind, error) {
	p, err := r.Prefix()
	if err != nil {
		return Kind{}, err
	}
	return Detect(p), nil
}

// Read reads the stream from its start, the sniffed prefix included.
func (r *Reader) Read(p []byte) (int, error) {
	r.started = true
	return r.br.Read(p)
}

// WriteTo copies the rest of the stream to w, so io.Copy needs no extra buffer.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	r.started = true
	return r.br.WriteTo(w)
}

// Peek reads up to PrefixLen bytes from r and returns them together with a reader that
// yields the same bytes followed by the rest of r. A stream shorter than PrefixLen is not
// an error. It allocates a fresh prefix on every call; a loop over many payloads can use
// a [Reader] instead.
func Peek(r io.Reader) (prefix []byte, replay io.Reader, err error) {
	buf := make([]byte, PrefixLen)
	n, err := io.ReadFull(r, buf)
	buf = buf[:n]
	switch err {
	case nil:
		return buf, io.MultiReader(bytes.NewReader(buf), r), nil
	case io.EOF, io.ErrUnexpectedEOF:
		return buf, bytes.NewReader(buf), nil
	default:
		return buf, nil, err
	}
}
