package packcore

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// crcWindow is how much of a file mappedCRC maps at a time: the resident
// set grows by at most this much a core while a file is checksummed.
const crcWindow = 2 << 20

// mappedCRC returns the CRC-32 of size bytes of f from off, read through
// memory mappings of the file, window by window, instead of copied out of
// the page cache (a copy cost as much CPU as the CRC itself). ok is false
// where f cannot be mapped (not an *os.File, or the kernel refuses): the
// caller reads instead. A file cut short while it is mapped (or a page
// the disk fails to give) makes the access fault; that fault is returned
// as an error, not a crash.
func mappedCRC(ctx context.Context, r io.ReaderAt, off, size int64) (crc uint32, ok bool, err error) {
	f, isFile := r.(*os.File)
	if !isFile || size == 0 {
		return 0, false, nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	var fd int
	if err := rc.Control(func(u uintptr) { fd = int(u) }); err != nil {
		return 0, false, nil
	}
	var cur []byte
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if cur != nil {
			_ = unix.Munmap(cur)
		}
		if r := recover(); r != nil {
			// A fault carries the address; any other panic is a bug, not
			// the file's doing.
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			crc, ok, err = 0, true, fmt.Errorf("%s: the file could not be read through its mapping (cut short while it was read, or a read error)", f.Name())
		}
	}()
	page := int64(os.Getpagesize())
	for end := off + size; off < end; {
		if err := ctx.Err(); err != nil {
			return 0, true, err
		}
		lo := off &^ (page - 1)
		n := min(end, lo+crcWindow) - lo
		m, err := unix.Mmap(fd, lo, int(n), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			if off == end-size {
				return 0, false, nil // nothing mapped yet: read instead
			}
			return 0, true, fmt.Errorf("%s: map: %w", f.Name(), err)
		}
		cur = m
		crc = crc32.Update(crc, crc32.IEEETable, m[off-lo:])
		cur = nil
		if err := unix.Munmap(m); err != nil {
			return 0, true, fmt.Errorf("%s: unmap: %w", f.Name(), err)
		}
		off = lo + n
	}
	return crc, true, nil
}
