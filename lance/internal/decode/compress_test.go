package decode

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestDecompressAppendZstd: values compressed by a real zstd encoder
// (klauspost/compress) decode through decompressAppend to the same bytes as
// through the decoder, whether the frame holds only stored blocks (taken
// by appendStoredZstd) or not, with Lance's 8-byte size prefix or a bare
// frame, appended after what dst already holds.
func TestDecompressAppendZstd(t *testing.T) {
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
		if want < 0 || want > 1<<20 {
			return
		}
		out, ok := appendStoredZstd([]byte("x"), frame, want)
		if !ok {
			if string(out) != "x" {
				t.Fatalf("declined but dst changed to %d bytes", len(out))
			}
			return
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
