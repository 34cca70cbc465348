package objstore

import "io"

// Section returns the n bytes of o from off as an object of their own:
// reads past its end give io.EOF, and none reaches o's bytes beyond it
// (a blob of an object that holds many, streamed with NewSeqReader,
// fetches none of its neighbours' bytes). Closing it closes o.
func Section(o Object, off, n int64) Object { return &section{Object: o, off: off, size: n} }

// section is the range [off, off+size) of an object.
type section struct {
	Object
	off, size int64
}

func (s *section) Size() int64 { return s.size }

func (s *section) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	if rest := s.size - off; int64(len(p)) > rest {
		n, err := s.Object.ReadAt(p[:rest], s.off+off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return s.Object.ReadAt(p, s.off+off)
}
