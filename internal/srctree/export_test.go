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
