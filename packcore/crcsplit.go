package packcore

import (
	"context"
	"hash/crc32"
	"io"
	"sync"
)

// CRC-32 (IEEE) of a concatenation from the CRCs of its parts. The CRC of
// A followed by B is crc(A)·x^(8·len(B)) + crc(B) modulo the polynomial
// (the initial and final inversions cancel out), so parts of a file can be
// checksummed on several cores and joined. Polynomials are 32-bit words in
// the reflected order CRC-32 uses: bit 31 is the coefficient of x^0.

// crcOne is the polynomial 1 in reflected order.
const crcOne = 1 << 31

// crcMulMod returns a·b modulo the CRC-32 polynomial.
func crcMulMod(a, b uint32) uint32 {
	var p uint32
	for m := uint32(crcOne); m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		// b times x
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}

// crcShift returns x^(8n) modulo the CRC-32 polynomial: what a CRC is
// multiplied by when n bytes follow it.
func crcShift(n int64) uint32 {
	r, sq := uint32(crcOne), uint32(crcOne>>8) // 1, x^8
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			r = crcMulMod(r, sq)
		}
		sq = crcMulMod(sq, sq)
	}
	return r
}

// crcJoin returns the CRC-32 of A followed by B from crc(A), crc(B) and
// len(B).
func crcJoin(crcA, crcB uint32, lenB int64) uint32 {
	return crcMulMod(crcShift(lenB), crcA) ^ crcB
}

// splitCRCMin is the smallest range fileRangeCRC divides among the cores:
// below it, starting goroutines costs more than it saves.
const splitCRCMin = 16 << 20

// fileRangeCRC returns the CRC-32 of size bytes of f from off. A range of
// splitCRCMin or more is divided into up to parts parts (one a core, for
// the caller), checksummed at once and joined, so that the pass before a
// large member is copied (see Writer.fileCRC) takes a fraction of the time
// it took on one core, during which the hasher, waiting for the member,
// has little to do. buf is the caller's chunk buffer, for the first part;
// the others get their own where the file cannot be mapped.
func fileRangeCRC(ctx context.Context, f io.ReaderAt, off, size int64, parts int, buf []byte) (uint32, error) {
	n := min(int64(parts), size/(splitCRCMin/2))
	if size < splitCRCMin || n < 2 {
		return rangeCRC(ctx, f, off, size, buf)
	}
	per := size / n
	length := func(i int64) int64 { // the last part takes the remainder
		if i == n-1 {
			return size - i*per
		}
		return per
	}
	crcs := make([]uint32, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := int64(1); i < n; i++ {
		wg.Go(func() { crcs[i], errs[i] = rangeCRC(ctx, f, off+i*per, length(i), nil) })
	}
	crcs[0], errs[0] = rangeCRC(ctx, f, off, per, buf)
	wg.Wait()
	crc := crcs[0]
	for i := int64(1); i < n; i++ {
		crc = crcJoin(crc, crcs[i], length(i))
	}
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return crc, nil
}

// rangeCRC returns the CRC-32 of size bytes of f from off: through a
// memory mapping where it can (mappedCRC), read in chunks of len(buf)
// otherwise (of copyBuf, in a new buffer, when buf is nil).
func rangeCRC(ctx context.Context, f io.ReaderAt, off, size int64, buf []byte) (uint32, error) {
	if crc, ok, err := mappedCRC(ctx, f, off, size); ok {
		return crc, err
	}
	if buf == nil {
		buf = make([]byte, copyBuf)
	}
	var crc uint32
	for end := off + size; off < end; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		chunk := buf[:min(int64(len(buf)), end-off)]
		if _, err := f.ReadAt(chunk, off); err != nil {
			return 0, err
		}
		crc = crc32.Update(crc, crc32.IEEETable, chunk)
		off += int64(len(chunk))
	}
	return crc, nil
}
