package offheap

import "golang.org/x/sys/unix"

// mapZeroed returns n zeroed bytes from a private anonymous mapping, or
// from the heap when the system refuses one. n == 0 gives no memory.
func mapZeroed(n int) ([]byte, bool) {
	if n == 0 {
		return nil, false
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return make([]byte, n), false
	}
	return b, true
}

// remap returns b grown to n bytes with its contents kept: the mapping
// moved by mremap, or a new block with b copied in.
func remap(b []byte, mapped bool, n int) ([]byte, bool) {
	if mapped {
		if nb, err := unix.Mremap(b, n, unix.MREMAP_MAYMOVE); err == nil {
			return nb, true
		}
	}
	nb, nmapped := mapZeroed(n)
	copy(nb, b)
	if mapped {
		unmap(b)
	}
	return nb, nmapped
}

func unmap(b []byte) { _ = unix.Munmap(b) }
