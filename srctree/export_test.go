package srctree

// Buffers returns how many buffers the remote files of t fetched spans
// into, and how many of those were buffers of spans let go of before.
func Buffers(t *Tree) (handed, reused int64) {
	t.cache.mu.Lock()
	defer t.cache.mu.Unlock()
	return t.cache.fetched, t.cache.reused
}

// SampleKept returns how many bytes of exact reads t keeps.
func SampleKept(t *Tree) int64 {
	t.cache.mu.Lock()
	defer t.cache.mu.Unlock()
	return t.cache.keptN
}

// Kept returns how many bytes of its own spans the remote file f keeps.
func Kept(f File) int64 {
	h := f.(*handle)
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	for _, s := range h.spans {
		n += int64(len(s.b))
	}
	return n
}
