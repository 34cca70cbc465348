//go:build !linux

package offheap

// mapZeroed returns n zeroed bytes; off Linux they come from the heap.
func mapZeroed(n int) ([]byte, bool) { return make([]byte, n), false }

// remap returns b grown to n bytes with its contents kept.
func remap(b []byte, _ bool, n int) ([]byte, bool) {
	nb := make([]byte, n)
	copy(nb, b)
	return nb, false
}

func unmap([]byte) {}
