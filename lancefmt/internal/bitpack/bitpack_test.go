package bitpack

import "testing"

func TestUnpackFastLanes(t *testing.T) {
	t.Parallel()
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
		if err := UnpackFastLanes(packed, tc.w, tc.t, out); err != nil {
			t.Fatal(err)
		}
		for i, want := range vals {
			if got := ReadWord(out, i, tc.t); got != want {
				t.Fatalf("w=%d t=%d: value %d = %d, want %d", tc.w, tc.t, i, got, want)
			}
		}
	}
}
