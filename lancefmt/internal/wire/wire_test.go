package wire

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestWalk(t *testing.T) {
	t.Parallel()
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 300)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("name"))
	b = protowire.AppendTag(b, 3, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 7)
	b = protowire.AppendTag(b, 4, protowire.BytesType) // packed 1, 2, 300
	b = protowire.AppendBytes(b, protowire.AppendVarint(protowire.AppendVarint(protowire.AppendVarint(nil, 1), 2), 300))
	b = protowire.AppendTag(b, 4, protowire.VarintType) // and one unpacked
	b = protowire.AppendVarint(b, 9)
	b = protowire.AppendTag(b, 5, protowire.VarintType)
	minus2 := int64(-2)
	b = protowire.AppendVarint(b, uint64(minus2))

	var got []uint64
	var name string
	var fixed uint64
	var neg int32
	err := Walk(b, func(f Field) error {
		var err error
		switch f.Num {
		case 1:
			got = append(got, f.U)
		case 2:
			name = string(f.B)
		case 3:
			fixed = f.U
		case 4:
			got, err = PackedUints(got, f)
		case 5:
			neg = Int32(f.U)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{300, 1, 2, 300, 9}
	if len(got) != len(want) || name != "name" || fixed != 7 || neg != -2 {
		t.Fatalf("got %v %q %d %d", got, name, fixed, neg)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestWalkCorrupt(t *testing.T) {
	t.Parallel()
	for _, b := range [][]byte{
		{0x0a, 0x05, 'a'}, // bytes field longer than the message
		{0x08},            // varint missing
		{0x80},            // truncated tag
	} {
		if err := Walk(b, func(Field) error { return nil }); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Walk(%x): got %v, want ErrCorrupt", b, err)
		}
	}
	stop := errors.New("stop")
	if err := Walk([]byte{0x08, 0x01}, func(Field) error { return stop }); err != stop {
		t.Fatalf("got %v, want the callback's error", err)
	}
}
