package lerobot

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestJoinFrames merges the frames tables of two parts, each holding the
// cells of one camera, renumbering references, and refuses parts that
// disagree on cameras or rows.
func TestJoinFrames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	dir := t.TempDir()
	eps := []frameEpisode{{episode: 0, first: 0, length: 2}, {episode: 1, first: 2, length: 3}}
	keys := []string{"cam.a", "cam.b"}
	var last framesResult
	write := func(name string, keys []string, eps []frameEpisode, cells map[cellKey]frameCell) string {
		p := filepath.Join(dir, name)
		var err error
		if last, err = writeFrames(ctx, mem, p, eps, keys, cells); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1 := write("p1.parquet", keys, eps, map[cellKey]frameCell{
		{0, "cam.a"}: {"zip://a0.mp4::media/pack-0000.zip", []int64{0, 33_333_334}},
		{1, "cam.a"}: {"zip://a1.mp4::media/pack-0000.zip", []int64{0, 33_333_334}}, // one frame short
	})
	// Null: episode 1's last frame of cam.a; cam.b's cells are another part's.
	if last != (framesResult{rows: 5, nulls: 1}) {
		t.Fatalf("part 1 written: %+v, want 5 rows, 1 null cell", last)
	}
	p2 := write("p2.parquet", keys, eps, map[cellKey]frameCell{
		{0, "cam.b"}: {"zip://b.mp4::media/pack-0000.zip", []int64{1_500_000_000, 1_533_333_334}},
		{1, "cam.b"}: {"zip://b.mp4::media/pack-0000.zip", []int64{1_566_666_667, 1_600_000_000, 1_633_333_334}},
	})
	rename := func(part int, ref string) (string, error) {
		return strings.Replace(ref, "pack-0000", []string{"pack-0000", "pack-0001", "pack-0002"}[part], 1), nil
	}
	out := filepath.Join(dir, "joined.parquet")
	// The middle part packed no camera file and wrote no table.
	if err := joinFrames(ctx, mem, out, []string{p1, "", p2}, rename); err != nil {
		t.Fatal(err)
	}
	cells := map[cellKey]frameCell{}
	gotKeys, gotEps, err := readFrames(ctx, mem, out, func(s string) (string, error) { return s, nil }, cells)
	if err != nil {
		t.Fatal(err)
	}
	want := map[cellKey]frameCell{
		{0, "cam.a"}: {"zip://a0.mp4::media/pack-0000.zip", []int64{0, 33_333_334}},
		{1, "cam.a"}: {"zip://a1.mp4::media/pack-0000.zip", []int64{0, 33_333_334}},
		{0, "cam.b"}: {"zip://b.mp4::media/pack-0002.zip", []int64{1_500_000_000, 1_533_333_334}},
		{1, "cam.b"}: {"zip://b.mp4::media/pack-0002.zip", []int64{1_566_666_667, 1_600_000_000, 1_633_333_334}},
	}
	if !reflect.DeepEqual(gotKeys, keys) || !reflect.DeepEqual(gotEps, eps) || !reflect.DeepEqual(cells, want) {
		t.Fatalf("joined: keys %v, episodes %v, cells %v", gotKeys, gotEps, cells)
	}

	for _, c := range []struct {
		name string
		part string
		want string
	}{
		{"other cameras", write("keys.parquet", keys[:1], eps, nil), "other cameras or rows"},
		{"other rows", write("rows.parquet", keys, eps[:1], nil), "other cameras or rows"},
	} {
		err := joinFrames(ctx, mem, filepath.Join(dir, c.name+".out"), []string{p1, c.part}, rename)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}
