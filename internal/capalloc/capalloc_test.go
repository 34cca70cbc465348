package capalloc

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// step is one request to an Allocator: alloc makes buffer buf of size
// bytes, realloc resizes it, free returns it. refused says the request
// must panic with an *Error whose Buffer field is buffer.
type step struct {
	op      string
	buf     int
	size    int
	refused bool
	buffer  bool
}

// TestLimits runs request sequences against each kind of limit and checks
// which are refused, that refused ones reach the wrapped allocator not at
// all, and that every buffer served is freed back to it.
func TestLimits(t *testing.T) {
	cases := []struct {
		name   string
		limits Limits
		steps  []step
	}{
		{"no limits", Limits{}, []step{
			{op: "alloc", buf: 0, size: 1 << 20},
			{op: "realloc", buf: 0, size: 2 << 20},
			{op: "free", buf: 0},
		}},
		{"buffer", Limits{Buffer: 100}, []step{
			{op: "alloc", buf: 0, size: 100},
			{op: "alloc", buf: 1, size: 100},
			{op: "alloc", buf: 2, size: 101, refused: true, buffer: true},
			{op: "realloc", buf: 0, size: 101, refused: true, buffer: true},
			{op: "realloc", buf: 0, size: 50},
			{op: "free", buf: 0},
			{op: "free", buf: 1},
		}},
		{"total", Limits{Total: 100}, []step{
			{op: "alloc", buf: 0, size: 60},
			{op: "alloc", buf: 1, size: 40},
			{op: "alloc", buf: 2, size: 1, refused: true},
			{op: "free", buf: 1},
			{op: "alloc", buf: 1, size: 30},
			{op: "realloc", buf: 0, size: 70},
			{op: "free", buf: 1},
			{op: "realloc", buf: 0, size: 100},
			{op: "free", buf: 0},
			{op: "alloc", buf: 0, size: 100},
			{op: "free", buf: 0},
		}},
		{"total refuses a negative size", Limits{Total: 100}, []step{
			{op: "alloc", buf: 0, size: -1, refused: true},
		}},
		{"both", Limits{Buffer: 50, Total: 80}, []step{
			{op: "alloc", buf: 0, size: 51, refused: true, buffer: true},
			{op: "alloc", buf: 0, size: 50},
			{op: "alloc", buf: 1, size: 40, refused: true},
			{op: "alloc", buf: 1, size: 20},
			{op: "free", buf: 0},
			{op: "free", buf: 1},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			a := New(mem, c.limits)
			bufs := map[int][]byte{}
			for i, s := range c.steps {
				before := mem.CurrentAlloc()
				got, err := run(a, bufs, s)
				if s.refused {
					if err == nil {
						t.Fatalf("step %d (%s %d): served, want refused", i, s.op, s.size)
					}
					if err.Buffer != s.buffer || err.Size != int64(s.size) {
						t.Fatalf("step %d: refused with %+v, want Buffer %v, Size %d", i, *err, s.buffer, s.size)
					}
					if mem.CurrentAlloc() != before {
						t.Fatalf("step %d: a refused request changed the wrapped allocator's bytes from %d to %d", i, before, mem.CurrentAlloc())
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d (%s %d): refused (%v), want served", i, s.op, s.size, err)
				}
				if s.op != "free" && len(got) != s.size {
					t.Fatalf("step %d: buffer of %d bytes, want %d", i, len(got), s.size)
				}
			}
			mem.AssertSize(t, 0)
		})
	}
}

// run makes one request and returns the buffer served, or the *Error the
// allocator panicked with.
func run(a *Allocator, bufs map[int][]byte, s step) (b []byte, refused *Error) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(*Error)
			if !ok {
				panic(p)
			}
			refused = e
		}
	}()
	switch s.op {
	case "alloc":
		b = a.Allocate(s.size)
	case "realloc":
		b = a.Reallocate(s.size, bufs[s.buf])
	case "free":
		a.Free(bufs[s.buf])
		delete(bufs, s.buf)
		return nil, nil
	}
	bufs[s.buf] = b
	return b, nil
}

// TestErrorText checks the messages a recovered panic is reported with.
func TestErrorText(t *testing.T) {
	cases := []struct {
		err  *Error
		want string
	}{
		{&Error{Size: 1 << 40, Buffer: true}, "a buffer of 1099511627776 bytes, more than a file of this size can hold"},
		{&Error{Size: 10}, "allocation limit exceeded"},
	}
	for _, c := range cases {
		var err error = c.err
		var e *Error
		if !errors.As(err, &e) || err.Error() != c.want {
			t.Errorf("%+v: %q, want %q", *c.err, err.Error(), c.want)
		}
	}
}
