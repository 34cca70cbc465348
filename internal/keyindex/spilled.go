package keyindex

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"runtime"

	"github.com/bpconvert/bpconvert/internal/offheap"
)

// Spilled maps keys to where they went, like Index, for runs whose keys
// would not fit in memory (the pack writer's, millions of keys): the keys
// and their locations are appended to a temporary file, and memory holds
// only a hash table of 5-byte slots (the key's number and 8 bits of its
// hash) at a load of 1/2 to 3/4, and one file offset every 16 keys: about
// 7 to 10 bytes a key, 2,000,000 keys in under 20 MB, whatever their
// length. A lookup reads the file only where a slot's 8 bits match (about
// one absent key in 30) and for a key that is there; the page cache holds
// what was just written. Growing the table reads the file back once.
//
// The file is made in a directory the caller chooses (the pack writer's
// is the pack directory, on the disk the output goes to) and, on Unix,
// removed from it at once: nothing is left behind whatever ends the
// process, and nothing shows in the directory. Elsewhere it is made in the
// system's temporary directory and removed by Close, or once the index is
// unreachable.
//
// A Spilled is not safe for concurrent use.
type Spilled struct {
	dir, pattern string
	f            *os.File
	seed         maphash.Seed
	set          *offheap.Set
	numsR, tagsR *offheap.Region
	nums         []uint32 // key number + 1; 0 is empty
	tags         []uint8  // 8 bits of the key's hash, by slot
	n            int      // keys
	// blocks holds the file offset of every 16th key's record.
	blocks offheap.Table[int64]
	// written is how much of the file is written; wbuf holds the records
	// that follow, not yet written.
	written int64
	wbuf    []byte
	// rbuf holds records read back, from file offset rOff; lookups in
	// the order keys were put (a table of references) decode from it.
	rbuf   []byte
	rOff   int64
	closed bool
}

// recordsPerBlock is how many records follow one offset in blocks.
const recordsPerBlock = 16

// spillBuffer is how many bytes of records gather before they are written.
const spillBuffer = 64 << 10

// maxLoad is the highest load, as a fraction num/den, before the table grows
// by half again.
const maxLoadNum, maxLoadDen = 3, 4

// NewSpilled returns an empty index whose file is created, when the first
// key is put, in dir with a name made from pattern (see os.CreateTemp).
func NewSpilled(dir, pattern string) *Spilled {
	x := &Spilled{dir: dir, pattern: pattern, seed: maphash.MakeSeed()}
	x.set = offheap.NewSet(x)
	x.blocks = offheap.NewTable[int64](x.set)
	return x
}

// Len returns the number of keys.
func (x *Spilled) Len() int { return x.n }

// Close releases the index's file (and removes it where it was not
// removed when made). The index is empty afterwards.
func (x *Spilled) Close() error {
	x.closed = true
	x.n = 0
	x.nums, x.tags = nil, nil
	x.blocks.S = x.blocks.S[:0]
	if x.f == nil {
		return nil
	}
	err := closeSpill(x.f)
	x.f = nil
	return err
}

// pos returns the home slot and tag of hash h.
func (x *Spilled) pos(h uint64) (int, uint8) {
	return int(uint64(uint32(h)) * uint64(len(x.nums)) >> 32), uint8(h >> 56)
}

// Get returns where key went.
func (x *Spilled) Get(key string) (Loc, bool, error) {
	if x.n == 0 {
		return Loc{}, false, nil
	}
	j, tag := x.pos(maphash.String(x.seed, key))
	for {
		num := x.nums[j]
		if num == 0 {
			return Loc{}, false, nil
		}
		if x.tags[j] == tag {
			k, loc, err := x.record(int(num - 1))
			if err != nil {
				return Loc{}, false, err
			}
			if string(k) == key {
				return loc, true, nil
			}
		}
		if j++; j == len(x.nums) {
			j = 0
		}
	}
}

// Put records where key went. The key must not be in the index (Get says
// so): Put does not look for it.
func (x *Spilled) Put(key string, loc Loc) error {
	if x.closed {
		return errors.New("keyindex: put after close")
	}
	if x.f == nil {
		f, err := createSpill(x.dir, x.pattern)
		if err != nil {
			return fmt.Errorf("keyindex: %w", err)
		}
		x.f = f
		runtime.AddCleanup(x, func(f *os.File) { closeSpill(f) }, f)
	}
	if x.n%recordsPerBlock == 0 {
		x.blocks.Push(x.written + int64(len(x.wbuf)))
	}
	x.wbuf = binary.AppendUvarint(x.wbuf, uint64(len(key)))
	x.wbuf = append(x.wbuf, key...)
	x.wbuf = binary.AppendVarint(x.wbuf, loc.Size)
	x.wbuf = binary.AppendVarint(x.wbuf, int64(loc.Shard))
	if len(x.wbuf) >= spillBuffer {
		if err := x.flush(); err != nil {
			return err
		}
	}
	x.n++
	if maxLoadDen*x.n > maxLoadNum*len(x.nums) {
		return x.grow()
	}
	x.place(maphash.String(x.seed, key), x.n)
	return nil
}

// place puts key number num-1 of hash h into the table.
func (x *Spilled) place(h uint64, num int) {
	j, tag := x.pos(h)
	for x.nums[j] != 0 {
		if j++; j == len(x.nums) {
			j = 0
		}
	}
	x.nums[j], x.tags[j] = uint32(num), tag
}

// flush writes the gathered records.
func (x *Spilled) flush() error {
	if len(x.wbuf) == 0 {
		return nil
	}
	if _, err := x.f.WriteAt(x.wbuf, x.written); err != nil {
		return fmt.Errorf("keyindex: %w", err)
	}
	x.written += int64(len(x.wbuf))
	x.wbuf = x.wbuf[:0]
	return nil
}

// grow makes the table half as large again and places every key again,
// read back from the file: the old table is freed first, so growing never
// holds two.
func (x *Spilled) grow() error {
	size := max(1024, len(x.nums)+len(x.nums)/2)
	if x.numsR != nil {
		x.set.Release(x.numsR)
		x.set.Release(x.tagsR)
	}
	if size > 1<<32 {
		return errors.New("keyindex: more than 3 x 2^30 keys")
	}
	x.numsR, x.tagsR = x.set.Alloc(4*size), x.set.Alloc(size)
	x.nums = offheap.View[uint32](x.numsR.Bytes(), size)
	x.tags = x.tagsR.Bytes()[:size]
	if err := x.flush(); err != nil {
		return err
	}
	br := bufio.NewReaderSize(io.NewSectionReader(x.f, 0, x.written), 256<<10)
	var key []byte
	for num := 1; num <= x.n; num++ {
		var err error
		if key, _, err = readRecord(br, key); err != nil {
			return fmt.Errorf("keyindex: reading back key %d of %d: %w", num, x.n, err)
		}
		x.place(maphash.Bytes(x.seed, key), num)
	}
	return nil
}

// readRecord reads one record from br, its key into buf.
func readRecord(br *bufio.Reader, buf []byte) ([]byte, Loc, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return buf, Loc{}, unexpected(err)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(br, buf); err != nil {
		return buf, Loc{}, unexpected(err)
	}
	size, err := binary.ReadVarint(br)
	if err != nil {
		return buf, Loc{}, unexpected(err)
	}
	shard, err := binary.ReadVarint(br)
	if err != nil {
		return buf, Loc{}, unexpected(err)
	}
	return buf, Loc{Shard: int32(shard), Size: size}, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Key returns key number i (in the order keys were put, from 0).
func (x *Spilled) Key(i int) (string, error) {
	if i < 0 || i >= x.n {
		return "", fmt.Errorf("keyindex: key %d of %d", i, x.n)
	}
	k, _, err := x.record(i)
	return string(k), err
}

// record returns key number i and where it went; the key's bytes are valid
// until the next call.
func (x *Spilled) record(i int) ([]byte, Loc, error) {
	off := x.blocks.S[i/recordsPerBlock]
	if off >= x.rOff && off < x.rOff+int64(len(x.rbuf)) {
		if key, loc, ok := decodeRecord(x.rbuf[off-x.rOff:], i%recordsPerBlock); ok {
			return key, loc, nil
		}
	}
	// A block's records are usually a few hundred bytes: read 16 KiB (the
	// blocks after it too), and more only for long keys.
	for n := 16 << 10; ; n *= 2 {
		b, err := x.window(off, n)
		if err != nil {
			x.rbuf = x.rbuf[:0]
			return nil, Loc{}, fmt.Errorf("keyindex: reading back key %d: %w", i, err)
		}
		x.rbuf, x.rOff = b, off
		key, loc, ok := decodeRecord(b, i%recordsPerBlock)
		if ok {
			return key, loc, nil
		}
		if len(b) < n {
			return nil, Loc{}, fmt.Errorf("keyindex: reading back key %d: %w", i, io.ErrUnexpectedEOF)
		}
	}
}

// decodeRecord returns record number r of b, or false when b ends before it
// does (or holds no record there).
func decodeRecord(b []byte, r int) ([]byte, Loc, bool) {
	p := 0
	for ; ; r-- {
		l, m := binary.Uvarint(b[p:])
		if m <= 0 || uint64(len(b)-p-m) < l {
			return nil, Loc{}, false
		}
		p += m
		key := b[p : p+int(l)]
		p += int(l)
		size, m := binary.Varint(b[p:])
		if m <= 0 {
			return nil, Loc{}, false
		}
		p += m
		shard, m := binary.Varint(b[p:])
		if m <= 0 {
			return nil, Loc{}, false
		}
		p += m
		if r == 0 {
			return key, Loc{Shard: int32(shard), Size: size}, true
		}
	}
}

// window returns up to n bytes of records from off: from the file and from
// those not yet written, into the read buffer.
func (x *Spilled) window(off int64, n int) ([]byte, error) {
	end := x.written + int64(len(x.wbuf))
	n = int(min(int64(n), end-off))
	b := x.rbuf[:0]
	if cap(b) < n {
		b = make([]byte, n)
	}
	b = b[:n]
	k := 0
	if off < x.written {
		k = int(min(int64(n), x.written-off))
		if _, err := x.f.ReadAt(b[:k], off); err != nil {
			return nil, err
		}
	}
	if k < n {
		copy(b[k:], x.wbuf[off+int64(k)-x.written:])
	}
	return b, nil
}
