package decode

import "testing"

func TestAppendBits(t *testing.T) {
	t.Parallel()
	get := func(b []byte, i int) bool { return b[i/8]&(1<<(i%8)) != 0 }
	for _, tc := range []struct {
		n, m int
	}{{0, 5}, {3, 5}, {8, 3}, {5, 16}, {7, 9}, {13, 1}} {
		// dst holds n bits 1,0,1,0… plus set padding bits; src holds m bits 1,1,0,….
		dst := make([]byte, (tc.n+7)/8)
		for i := range dst {
			dst[i] = 0xff
		}
		for i := 0; i < tc.n; i += 2 {
			dst[i/8] &^= 1 << (i % 8)
		}
		src := make([]byte, (tc.m+7)/8)
		for i := 0; i < tc.m; i++ {
			if i%3 != 2 {
				src[i/8] |= 1 << (i % 8)
			}
		}
		got := appendBits(dst, tc.n, src, tc.m)
		for i := 0; i < tc.n+tc.m; i++ {
			want := i%2 == 1
			if i >= tc.n {
				want = (i-tc.n)%3 != 2
			}
			if get(got, i) != want {
				t.Fatalf("n=%d m=%d: bit %d = %v, want %v", tc.n, tc.m, i, get(got, i), want)
			}
		}
	}
}
