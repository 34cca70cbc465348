package lance

import "testing"

func TestAppendBits(t *testing.T) {
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

func TestUnpackFastLanes(t *testing.T) {
	// Pack 1024 values with the FastLanes layout described in the format
	// notes, then check that unpacking restores them.
	for _, tc := range []struct{ w, t int }{{3, 8}, {1, 16}, {5, 32}, {17, 32}, {33, 64}, {8, 8}, {0, 32}} {
		vals := make([]uint64, 1024)
		mask := uint64(1)<<uint(tc.w) - 1
		for i := range vals {
			vals[i] = (uint64(i)*2654435761 + 12345) & mask
		}
		lanes := 1024 / tc.t
		packed := make([]byte, 1024*tc.w/8)
		for lane := 0; lane < lanes; lane++ {
			for row := 0; row < tc.t; row++ {
				v := vals[flOrder[row/8]*16+(row%8)*128+lane]
				bit := row * tc.w
				wi, sh := bit/tc.t, bit%tc.t
				for k := 0; k < tc.w; k++ {
					if v&(1<<uint(k)) == 0 {
						continue
					}
					pos := sh + k
					word := lanes*(wi+pos/tc.t) + lane
					bi := word*tc.t + pos%tc.t
					packed[bi/8] |= 1 << (bi % 8)
				}
			}
		}
		out := make([]byte, 1024*tc.t/8)
		if err := unpackFastLanes(packed, tc.w, tc.t, out); err != nil {
			t.Fatal(err)
		}
		for i, want := range vals {
			if got := readWord(out, i, tc.t); got != want {
				t.Fatalf("w=%d t=%d: value %d = %d, want %d", tc.w, tc.t, i, got, want)
			}
		}
	}
}
