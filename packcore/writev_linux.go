package packcore

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// writev writes a and then b to f with as few system calls as the kernel
// allows (one, for a regular file), without joining them in memory first.
func writev(f *os.File, a, b []byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	iov := make([][]byte, 0, 2)
	for _, v := range [][]byte{a, b} {
		if len(v) > 0 {
			iov = append(iov, v)
		}
	}
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		for len(iov) > 0 {
			n, err := unix.Writev(int(fd), iov)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				werr = &os.PathError{Op: "write", Path: f.Name(), Err: err}
				return true
			}
			if n == 0 {
				werr = io.ErrShortWrite
				return true
			}
			for n > 0 && len(iov) > 0 {
				k := min(n, len(iov[0]))
				iov[0] = iov[0][k:]
				n -= k
				if len(iov[0]) == 0 {
					iov = iov[1:]
				}
			}
		}
		return true
	}); err != nil {
		return err
	}
	return werr
}
