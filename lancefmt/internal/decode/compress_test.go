package decode

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// TestDecompressAppendZstd: values compressed by a real zstd encoder
// (klauspost/compress) decode through decompressAppend to the same bytes as
// through the decoder, whether the frame holds only stored blocks (taken
// by appendStoredZstd) or not, with Lance's 8-byte size prefix or a bare
// frame, appended after what dst already holds.
func TestDecompressAppendZstd(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	values := map[string][]byte{
		"random 100 KiB":  random(100 << 10),
		"random 300 KiB":  random(300 << 10), // several stored blocks
		"random 1 byte":   random(1),
		"zeros 200 KiB":   make([]byte, 200<<10),
		"text":            bytes.Repeat([]byte("alpha bravo charlie delta "), 4000),
		"empty":           {},
		"random + zeros ": append(random(70<<10), make([]byte, 70<<10)...),
	}
	for _, checksum := range []bool{false, true} {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(checksum), zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range values {
			frame := enc.EncodeAll(v, nil)
			prefixed := binary.LittleEndian.AppendUint64(nil, uint64(len(v)))
			prefixed = append(prefixed, frame...)
			for _, in := range [][]byte{frame, prefixed} {
				dst := append(make([]byte, 0, 16), "head"...)
				out, err := decompressAppend(schemeZstd, dst, in)
				if err != nil {
					t.Fatalf("%s (checksum %v): %v", name, checksum, err)
				}
				if string(out[:4]) != "head" || !bytes.Equal(out[4:], v) {
					t.Fatalf("%s (checksum %v): %d bytes decoded, want %d equal to the input", name, checksum, len(out)-4, len(v))
				}
			}
			// A frame cut short is refused, never taken as shorter content.
			if got, err := decompressAppend(schemeZstd, nil, frame[:len(frame)-3]); err == nil && len(v) > 0 && bytes.Equal(got, v) {
				t.Fatalf("%s: a truncated frame decoded to the whole value", name)
			}
		}
		enc.Close()
	}
}

// TestAppendStoredZstd: the stored-block path takes a frame of raw blocks
// and declines compressed blocks, checksums and trailing bytes.
func TestAppendStoredZstd(t *testing.T) {
	t.Parallel()
	v := make([]byte, 50<<10)
	for i := range v {
		v[i] = byte(i*7919 + i>>8*31)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range v {
		v[i] ^= byte(rng.Uint32())
	}
	plain, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(false))
	crc, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	frame := plain.EncodeAll(v, nil)
	if out, ok := appendStoredZstd(nil, frame, len(v)); !ok || !bytes.Equal(out, v) {
		t.Fatalf("a frame of stored blocks was not taken (ok %v)", ok)
	}
	for name, f := range map[string][]byte{
		"checksum":    crc.EncodeAll(v, nil),
		"compressed":  plain.EncodeAll(bytes.Repeat([]byte("abc"), 20000), nil),
		"trailing":    append(append([]byte(nil), frame...), 0),
		"truncated":   frame[:len(frame)-1],
		"wrong size":  frame,
		"not a frame": v[:100],
		"header only": frame[:6],
	} {
		want := len(v)
		if name == "compressed" {
			want = 60000
		}
		if name == "wrong size" {
			want = len(v) - 1
		}
		if out, ok := appendStoredZstd([]byte("x"), f, want); ok || string(out) != "x" {
			t.Fatalf("%s: taken (ok %v) or dst changed (%d bytes)", name, ok, len(out))
		}
	}
}

// TestVerbatimZstd: a frame of one raw block, as a real zstd encoder
// (klauspost/compress) stores an incompressible value of up to 128 KiB,
// bare or behind Lance's 8-byte size prefix, is handed out as the part of
// the frame that holds the value, without a copy; every other frame
// (several blocks, compressed or RLE blocks, a checksum, bytes cut or
// added, a prefix that disagrees) is declined (TestDecompressAppendZstd
// decodes such frames).
func TestVerbatimZstd(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	plain, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1))
	crc, _ := zstd.NewWriter(nil, zstd.WithEncoderCRC(true), zstd.WithEncoderConcurrency(1))
	prefix := func(n int, f []byte) []byte { return append(binary.LittleEndian.AppendUint64(nil, uint64(n)), f...) }
	v100 := random(100 << 10)
	f100 := plain.EncodeAll(v100, nil)
	for _, tc := range []struct {
		name  string
		frame []byte
		value []byte // nil: declined
	}{
		{"random 100 KiB", f100, v100},
		{"random 100 KiB, size prefix", prefix(len(v100), f100), v100},
		{"random 128 KiB", nil, random(128 << 10)},
		{"random 300 KiB: three blocks", plain.EncodeAll(random(300<<10), nil), nil},
		{"checksum", crc.EncodeAll(v100, nil), nil},
		{"compressed", plain.EncodeAll(bytes.Repeat([]byte("abc"), 20000), nil), nil},
		{"zeros: RLE", plain.EncodeAll(make([]byte, 50<<10), nil), nil},
		{"trailing byte", append(append([]byte(nil), f100...), 0), nil},
		{"cut short", f100[:len(f100)-1], nil},
		{"prefix disagrees", prefix(len(v100)-1, f100), nil},
		{"not a frame", v100[:100], nil},
	} {
		frame := tc.frame
		if frame == nil {
			frame = plain.EncodeAll(tc.value, nil)
		}
		got, ok := verbatimZstd(frame)
		if ok != (tc.value != nil) || !bytes.Equal(got, tc.value) {
			t.Fatalf("%s: ok %v, %d bytes; want ok %v", tc.name, ok, len(got), tc.value != nil)
		}
		if ok && (unsafe.SliceData(got) != &frame[len(frame)-len(got)] || cap(got) != len(got)) {
			t.Fatalf("%s: not the frame's own bytes (or room to append into them)", tc.name)
		}
	}
}

// FuzzStoredZstd: for any bytes, appendStoredZstd either declines, leaving
// dst as it was, or appends exactly what the zstd decoder decodes.
func FuzzStoredZstd(f *testing.F) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false))
	if err != nil {
		f.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	random := make([]byte, 1000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, v := range [][]byte{random, make([]byte, 300), []byte("abcabcabcabc"), {}} {
		f.Add(enc.EncodeAll(v, nil), len(v))
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, frame []byte, want int) {
		if b, ok := verbatimZstd(frame); ok {
			// Handed out in place: the decoder must give the same bytes,
			// from the frame behind Lance's size prefix where there is
			// one.
			bare := frame
			if !isZstdFrame(frame) {
				bare = frame[8:]
			}
			ref, err := dec.DecodeAll(bare, nil)
			if err != nil || !bytes.Equal(b, ref) {
				t.Fatalf("verbatim: %d bytes, the decoder gives %d (%v)", len(b), len(ref), err)
			}
		}
		if want < 0 || want > 1<<20 {
			return
		}
		out, ok := appendStoredZstd([]byte("x"), frame, want)
		in := rawBlocksOnly(frame, want)
		if in && !ok {
			// In-place decoding relies on it: what rawBlocksOnly lets in
			// (raw blocks; not RLE ones, which grow), appendStoredZstd
			// takes.
			t.Fatalf("rawBlocksOnly took a frame appendStoredZstd declines")
		}
		if !ok {
			if string(out) != "x" {
				t.Fatalf("declined but dst changed to %d bytes", len(out))
			}
			return
		}
		if !in {
			return
		}
		// Decoded in place, behind a 4-byte prefix as in a full-zip page,
		// the frame gives the same bytes.
		page := append([]byte{1, 2, 3, 4}, frame...)
		got, ok := appendInPlace(schemeZstd, page[:0:len(page)], page[4:])
		if !ok || !bytes.Equal(got, out[1:]) {
			t.Fatalf("in place: ok %v, %d bytes, want %d", ok, len(got), len(out)-1)
		}
		ref, err := dec.DecodeAll(frame, nil)
		if err != nil {
			t.Fatalf("taken (%d bytes) but the decoder refuses it: %v", len(out)-1, err)
		}
		if !bytes.Equal(out[1:], ref) {
			t.Fatalf("%d bytes, the decoder gives %d", len(out)-1, len(ref))
		}
	})
}

// TestInPlace: values that growsNot accepts (plain ones, zstd frames of raw
// blocks, with or without Lance's size prefix) decode by appendInPlace into
// the memory they are read from, written behind the reading position as a
// full-zip page lays them out (a length prefix before each), to the bytes
// the decoder gives; values that grow (RLE or compressed blocks, lz4) are
// declined by both.
func TestInPlace(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	prefixed := func(v []byte) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, uint64(len(v))), enc.EncodeAll(v, nil)...)
	}
	type value struct {
		scheme  int
		stored  []byte
		decoded []byte
		inPlace bool
	}
	var vals []value
	// A zstd value decodes in place when the stored-block path takes its
	// frame (single segment, raw blocks only): the encoder makes such
	// frames of incompressible data, at least at these sizes.
	stored := func(frame []byte, n int) bool { _, ok := appendStoredZstd(nil, frame, n); return ok }
	for _, n := range []int{0, 1, 1000, 100 << 10, 300 << 10} {
		v := random(n)
		f := enc.EncodeAll(v, nil)
		vals = append(vals,
			value{schemeNone, v, v, true},
			value{schemeZstd, f, v, stored(f, n)},
			value{schemeZstd, prefixed(v), v, stored(f, n)},
		)
		if n >= 100<<10 && !stored(f, n) {
			t.Fatalf("%d random bytes: the encoder's frame is not stored blocks", n)
		}
	}
	zeros := make([]byte, 200<<10)
	text := bytes.Repeat([]byte("alpha bravo charlie "), 3000)
	vals = append(vals,
		value{schemeZstd, enc.EncodeAll(zeros, nil), zeros, false},
		value{schemeZstd, prefixed(text), text, false},
		value{schemeLz4, append(binary.LittleEndian.AppendUint32(nil, 3), 0x30, 'a', 'b', 'c'), []byte("abc"), false},
	)
	// The page: a 4-byte length prefix before each value that decodes in
	// place, as in a full-zip page.
	var page []byte
	var want []byte
	for _, v := range vals {
		if got := growsNot(v.scheme, v.stored, len(v.decoded)); got != v.inPlace {
			t.Fatalf("growsNot(%d, %d stored bytes) = %v, want %v", v.scheme, len(v.stored), got, v.inPlace)
		}
		if !v.inPlace {
			if _, ok := appendInPlace(v.scheme, nil, v.stored); ok {
				t.Fatalf("appendInPlace took a value that grows (scheme %d)", v.scheme)
			}
			continue
		}
		page = binary.LittleEndian.AppendUint32(page, uint32(len(v.stored)))
		page = append(page, v.stored...)
		want = append(want, v.decoded...)
	}
	dst := page[:0:len(page)]
	pos := 0
	for _, v := range vals {
		if !v.inPlace {
			continue
		}
		n := int(binary.LittleEndian.Uint32(page[pos:]))
		pos += 4
		var ok bool
		if dst, ok = appendInPlace(v.scheme, dst, page[pos:pos+n]); !ok {
			t.Fatalf("appendInPlace declined a value growsNot took (scheme %d, %d bytes)", v.scheme, n)
		}
		pos += n
	}
	if &dst[0] != &page[0] || !bytes.Equal(dst, want) {
		t.Fatalf("in place: %d bytes (same memory: %v), want %d", len(dst), &dst[0] == &page[0], len(want))
	}
}
