package parquet

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fakePack records what would be packed and returns "row[-sub]:len:name".
func fakePack(got *[]string) packFunc {
	return func(path []string, id elemID, data []byte, srcName string, fromPath bool) (string, error) {
		var b strings.Builder
		if len(path) > 1 {
			fmt.Fprintf(&b, "%s@", dotted(path))
		}
		fmt.Fprintf(&b, "%d", id.row)
		for _, s := range id.sub {
			fmt.Fprintf(&b, "-%d", s)
		}
		if fromPath {
			fmt.Fprintf(&b, ":file:%s", srcName)
		} else {
			fmt.Fprintf(&b, ":%d:%s", len(data), srcName)
		}
		*got = append(*got, b.String())
		return b.String(), nil
	}
}

// strs renders a string array, "<null>" for nulls.
func strs(a arrow.Array) []string {
	var out []string
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			out = append(out, "<null>")
			continue
		}
		out = append(out, a.ValueStr(i))
	}
	return out
}

func TestParquetRewriteArrays(t *testing.T) {
	t.Parallel()
	type maker func(mem memory.Allocator) arrow.Array
	vals := [][]byte{[]byte("abcd"), nil, []byte("wxyz"), []byte("1234")}
	binaryOf := func(b array.Builder) arrow.Array {
		for _, v := range vals {
			switch bb := b.(type) {
			case *array.BinaryBuilder:
				if v == nil {
					bb.AppendNull()
				} else {
					bb.Append(v)
				}
			case *array.FixedSizeBinaryBuilder:
				if v == nil {
					bb.AppendNull()
				} else {
					bb.Append(v)
				}
			}
		}
		return b.NewArray()
	}
	cases := []struct {
		name  string
		make  maker
		node  *selNode
		o     outOpts
		first int64
		want  []string
	}{
		{
			name: "binary",
			make: func(mem memory.Allocator) arrow.Array {
				return binaryOf(array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary))
			},
			node: &selNode{leaf: true}, first: 10,
			want: []string{"10:4:", "<null>", "12:4:", "13:4:"},
		},
		{
			name: "large binary",
			make: func(mem memory.Allocator) arrow.Array {
				return binaryOf(array.NewBinaryBuilder(mem, arrow.BinaryTypes.LargeBinary))
			},
			node: &selNode{leaf: true},
			want: []string{"0:4:", "<null>", "2:4:", "3:4:"},
		},
		{
			name: "fixed size binary",
			make: func(mem memory.Allocator) arrow.Array {
				return binaryOf(array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: 4}))
			},
			node: &selNode{leaf: true},
			want: []string{"0:4:", "<null>", "2:4:", "3:4:"},
		},
		{
			name: "sliced binary keeps row numbers from first",
			make: func(mem memory.Allocator) arrow.Array {
				a := binaryOf(array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary))
				defer a.Release()
				return array.NewSlice(a, 2, 4)
			},
			node: &selNode{leaf: true}, first: 100,
			want: []string{"100:4:", "101:4:"},
		},
		{
			name: "media struct: bytes, path only, nothing, null",
			make: func(mem memory.Allocator) arrow.Array {
				st := arrow.StructOf(arrow.Field{Name: "bytes", Type: arrow.BinaryTypes.Binary, Nullable: true},
					arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true})
				b := array.NewStructBuilder(mem, st)
				defer b.Release()
				by := b.FieldBuilder(0).(*array.BinaryBuilder)
				pa := b.FieldBuilder(1).(*array.StringBuilder)
				b.Append(true)
				by.Append([]byte("xy"))
				pa.Append("a.PNG")
				b.Append(true)
				by.AppendNull()
				pa.Append("images/b.jpg")
				b.Append(true)
				by.AppendNull()
				pa.AppendNull()
				b.AppendNull()
				by.AppendNull()
				pa.AppendNull()
				return b.NewArray()
			},
			node: &selNode{leaf: true},
			want: []string{"0:2:a.PNG", "1:file:images/b.jpg", "<null>", "<null>"},
		},
		{
			name: "list of binary: null list, empty list, null element",
			make: func(mem memory.Allocator) arrow.Array {
				b := array.NewListBuilder(mem, arrow.BinaryTypes.Binary)
				defer b.Release()
				vb := b.ValueBuilder().(*array.BinaryBuilder)
				b.Append(true)
				vb.Append([]byte("a"))
				vb.AppendNull()
				vb.Append([]byte("ccc"))
				b.AppendNull()
				b.Append(true)
				b.Append(true)
				vb.Append([]byte("dd"))
				return b.NewArray()
			},
			node: &selNode{leaf: true},
			want: []string{`["0-0:1:",null,"0-2:3:"]`, "<null>", "[]", `["3-0:2:"]`},
		},
		{
			name: "struct field under a null parent is not packed",
			make: func(mem memory.Allocator) arrow.Array {
				tb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
				defer tb.Release()
				tb.Append([]byte("t0"))
				tb.Append([]byte("hidden")) // a value under a null parent
				tb.AppendNull()
				nb := array.NewInt32Builder(mem)
				defer nb.Release()
				nb.AppendValues([]int32{7, 0, 9}, []bool{true, false, true})
				th, n := tb.NewArray(), nb.NewArray()
				defer th.Release()
				defer n.Release()
				valid := memory.NewResizableBuffer(mem)
				defer valid.Release()
				valid.Resize(1)
				valid.Bytes()[0] = 0b101
				st, err := array.NewStructArrayWithNulls([]arrow.Array{th, n}, []string{"thumb", "n"}, valid, 1, 0)
				if err != nil {
					panic(err)
				}
				return st
			},
			node: &selNode{children: map[string]*selNode{"thumb": {leaf: true}}},
			want: []string{`{"n":7,"thumb":"col.thumb@0:2:"}`, "<null>", `{"n":9,"thumb":null}`},
		},
		{
			name: "two fields of one struct keep their own paths",
			make: func(mem memory.Allocator) arrow.Array {
				st := arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.Binary, Nullable: true},
					arrow.Field{Name: "b", Type: arrow.BinaryTypes.LargeBinary, Nullable: true})
				b := array.NewStructBuilder(mem, st)
				defer b.Release()
				b.Append(true)
				b.FieldBuilder(0).(*array.BinaryBuilder).Append([]byte("x"))
				b.FieldBuilder(1).(*array.BinaryBuilder).Append([]byte("yy"))
				return b.NewArray()
			},
			node: &selNode{children: map[string]*selNode{"a": {leaf: true}, "b": {leaf: true}}},
			want: []string{`{"a":"col.a@0:1:","b":"col.b@0:2:"}`},
		},
		{
			name: "media structs kept, their source paths beside them",
			make: func(mem memory.Allocator) arrow.Array {
				st := arrow.StructOf(arrow.Field{Name: "img", Type: hfType, Nullable: true},
					arrow.Field{Name: "frames", Type: arrow.ListOf(hfType), Nullable: true})
				b := array.NewStructBuilder(mem, st)
				defer b.Release()
				img := b.FieldBuilder(0).(*array.StructBuilder)
				fr := b.FieldBuilder(1).(*array.ListBuilder)
				frv := fr.ValueBuilder().(*array.StructBuilder)
				add := func(sb *array.StructBuilder, data, path string) {
					sb.Append(true)
					if data == "" {
						sb.FieldBuilder(0).AppendNull()
					} else {
						sb.FieldBuilder(0).(*array.BinaryBuilder).Append([]byte(data))
					}
					if path == "" {
						sb.FieldBuilder(1).AppendNull()
					} else {
						sb.FieldBuilder(1).(*array.StringBuilder).Append(path)
					}
				}
				b.Append(true)
				add(img, "abc", "cat.png")
				fr.Append(true)
				add(frv, "x", "f0.png")
				add(frv, "", "f1.png")
				b.Append(true)
				img.AppendNull()
				fr.AppendNull()
				return b.NewArray()
			},
			node: &selNode{children: map[string]*selNode{"img": {leaf: true}, "frames": {leaf: true}}},
			o:    outOpts{keepMedia: true, keepPath: true},
			want: []string{
				`{"frames":[{"bytes":null,"path":"col.frames@0-0:1:f0.png"},{"bytes":null,"path":"col.frames@0-1:file:f1.png"}],"frames_path":["f0.png","f1.png"],"img":{"bytes":null,"path":"col.img@0:3:cat.png"},"img_path":"cat.png"}`,
				`{"frames":null,"frames_path":null,"img":null,"img_path":null}`,
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			arr := tc.make(mem)
			defer arr.Release()
			var packed []string
			r := &rewriter{mem: mem, pack: fakePack(&packed), o: tc.o}
			ids := make([]elemID, arr.Len())
			for i := range ids {
				ids[i] = elemID{row: tc.first + int64(i)}
			}
			out, err := r.rewrite(arr, outType(arr.DataType(), tc.node, tc.o), tc.node, []string{"col"}, ids, allLive(arr.Len()), true)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			if err := out.(interface{ ValidateFull() error }).ValidateFull(); err != nil {
				t.Fatalf("invalid output array: %v", err)
			}
			got := strs(out)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			for _, p := range packed {
				if strings.Contains(p, "hidden") || strings.HasPrefix(p, "1:6") {
					t.Errorf("packed a value under a null parent: %s", p)
				}
			}
		})
	}
}

// FuzzParquetInspect feeds arbitrary bytes to Inspect as a parquet file: it must
// return an error wrapping ErrInvalidInput or a result, never panic, and
// release all memory. Seeds are the DuckDB fixtures when node is available.
func FuzzParquetInspect(f *testing.F) {
	f.Add([]byte("PAR1"))
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	// Fuzz worker processes are stopped without running TestMain's clean-up,
	// so only the coordinating process generates the fixture seeds.
	if w := flag.Lookup("test.fuzzworker"); nodeReady() == "" && (w == nil || w.Value.String() != "true") {
		root := fixtureRoot(f)
		for _, rel := range []string{"hf/data/frames/seq.parquet", "hf/data/audio/clips.parquet", "bad/truncated.parquet", "escape/data/t.parquet"} {
			if b, err := os.ReadFile(filepath.Join(root, rel)); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "t.parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ins, err := Inspect(context.Background(), p, Options{Allocator: mem})
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %v does not wrap ErrInvalidInput", err)
			}
			return
		}
		if len(ins.Tables) != 1 {
			t.Fatalf("%d tables", len(ins.Tables))
		}
	})
}

// hfType is a Hugging Face media struct as datasets writes it.
var hfType = arrow.StructOf(arrow.Field{Name: "bytes", Type: arrow.BinaryTypes.Binary, Nullable: true},
	arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true})
