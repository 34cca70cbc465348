package lerobot

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// FramesFile is the frames table at the root of a converted dataset with
// videos: one row per data row (index, episode_index, frame_index) and, per
// camera, the frame as a MediaRef Spec 1.0 cell struct<uri: string,
// pts_ns: int64>. uri is the episode's reference as video_index.json gives
// it; pts_ns is the frame's presentation time on the referenced
// container's own stream axis, ceil(pts * 1e9 * time_base), read from the
// packets (never from the tables' float timestamps). A cell is null when
// the video holds fewer frames than the episode's length.
const FramesFile = "video_frames.parquet"

// framesBatch is how many rows one row group of the frames table holds.
const framesBatch = 1 << 16

// cellKey names one episode of one camera.
type cellKey struct {
	episode int64
	key     string
}

// frameCell is where one episode of one camera lives: its reference and
// the presentation time (ns) of each of its frames, in order.
type frameCell struct {
	ref string
	pts []int64
}

// mediaRefType is MediaRef Spec 1.0's Arrow form of a frame reference.
var mediaRefType = arrow.StructOf(
	arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true},
	arrow.Field{Name: "pts_ns", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
)

// framesSchema is the frames table's schema for the cameras keys.
func framesSchema(keys []string) *arrow.Schema {
	fields := []arrow.Field{
		{Name: "index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "frame_index", Type: arrow.PrimitiveTypes.Int64},
	}
	for _, k := range keys {
		fields = append(fields, arrow.Field{Name: k, Type: mediaRefType, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

// framesResult counts what writeFrames wrote: rows, and null cells.
type framesResult struct {
	rows, nulls int64
}

// frameEpisode is one episode's rows of the frames table: length rows with
// index first, first+1, ...
type frameEpisode struct {
	episode, first, length int64
}

// datasetEpisodes returns the rows of every episode of d in episode order,
// index counted from the episode's dataset_from_index (v3.0) or from the
// lengths of the episodes before it (v2.x), as LeRobot numbers data rows.
func datasetEpisodes(d *Dataset) []frameEpisode {
	var eps []frameEpisode
	var next int64 // the index after the previous episode's rows
	for _, e := range d.Episodes {
		first := next
		if e.From >= 0 {
			first = e.From
		}
		next = first + e.Length
		eps = append(eps, frameEpisode{episode: e.Index, first: first, length: e.Length})
	}
	return eps
}

// writeFrames writes the frames table to path (under a temporary name,
// renamed when complete): the rows of eps with the cameras keys' cells (a
// cell absent from cells is null: another part of a split run holds it).
// mem allocates the Arrow buffers.
func writeFrames(ctx context.Context, mem memory.Allocator, path string, eps []frameEpisode, keys []string, cells map[cellKey]frameCell) (framesResult, error) {
	var res framesResult
	schema := framesSchema(keys)
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return res, err
	}
	defer f.Abort()
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(framesBatch),
		parquet.WithAllocator(mem),
	)
	// The struct hides f's Close: the writer would close the file before
	// it could be synced.
	fw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return res, err
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	flush := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return fw.Write(rec)
	}
	for _, e := range eps {
		if err := ctx.Err(); err != nil {
			fw.Close()
			return res, err
		}
		for k := int64(0); k < e.length; k++ {
			b.Field(0).(*array.Int64Builder).Append(e.first + k)
			b.Field(1).(*array.Int64Builder).Append(e.episode)
			b.Field(2).(*array.Int64Builder).Append(k)
			for i, key := range keys {
				sb := b.Field(3 + i).(*array.StructBuilder)
				c, ok := cells[cellKey{e.episode, key}]
				if !ok || k >= int64(len(c.pts)) {
					sb.AppendNull()
					if ok {
						res.nulls++
					}
					continue
				}
				sb.Append(true)
				sb.FieldBuilder(0).(*array.StringBuilder).Append(c.ref)
				sb.FieldBuilder(1).(*array.Int64Builder).Append(c.pts[k])
			}
			res.rows++
			if res.rows%framesBatch == 0 {
				if err := flush(); err != nil {
					fw.Close()
					return res, err
				}
			}
		}
	}
	if res.rows%framesBatch != 0 || res.rows == 0 {
		if err := flush(); err != nil {
			fw.Close()
			return res, err
		}
	}
	if err := fw.Close(); err != nil {
		return res, err
	}
	return res, f.Commit()
}

var _ convert.TableJoiner = JoinFrames

// JoinFrames merges the frames tables of the parts of a split run into
// out: every part lists every row, with the cells of the camera files it
// packed; the joined table takes each cell from the part that holds it,
// its reference renumbered by rename, and is written as one run writes it.
func JoinFrames(ctx context.Context, out string, parts []string, rename func(part int, ref string) (string, error)) error {
	return joinFrames(ctx, memory.DefaultAllocator, out, parts, rename)
}

// joinFrames is JoinFrames with the allocator of the Arrow buffers.
func joinFrames(ctx context.Context, mem memory.Allocator, out string, parts []string, rename func(part int, ref string) (string, error)) error {
	var keys []string
	var eps []frameEpisode
	cells := map[cellKey]frameCell{}
	for i, p := range parts {
		if p == "" {
			continue
		}
		pk, pe, err := readFrames(ctx, mem, p, func(ref string) (string, error) { return rename(i, ref) }, cells)
		if err != nil {
			return fmt.Errorf("part %d: %w", i+1, err)
		}
		if keys == nil {
			keys, eps = pk, pe
		} else if !slices.Equal(keys, pk) || !slices.Equal(eps, pe) {
			return fmt.Errorf("part %d lists other cameras or rows than the first part", i+1)
		}
	}
	if keys == nil {
		return fmt.Errorf("no part has a frames table")
	}
	_, err := writeFrames(ctx, mem, out, eps, keys, cells)
	return err
}

// readFrames reads a frames table: its cameras, its episodes' rows, and
// into cells every non-null cell, its reference passed through rename.
func readFrames(ctx context.Context, mem memory.Allocator, p string, rename func(string) (string, error), cells map[cellKey]frameCell) ([]string, []frameEpisode, error) {
	f, err := srcfile.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return readFramesFrom(ctx, mem, f, p, rename, cells)
}

// readFramesFrom is readFrames of the table r, named p in errors.
func readFramesFrom(ctx context.Context, mem memory.Allocator, r parquet.ReaderAtSeeker, p string, rename func(string) (string, error), cells map[cellKey]frameCell) ([]string, []frameEpisode, error) {
	tbl, err := pqarrow.ReadTable(ctx, r, nil, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p, err)
	}
	defer tbl.Release()
	schema := tbl.Schema()
	for i, want := range framesSchema(nil).Fields() {
		if i >= schema.NumFields() || schema.Field(i).Name != want.Name || !arrow.TypeEqual(schema.Field(i).Type, want.Type) {
			return nil, nil, fmt.Errorf("%s: not a frames table: column %d is not %s %s", p, i, want.Name, want.Type)
		}
	}
	var keys []string
	for _, fd := range schema.Fields()[3:] {
		if !arrow.TypeEqual(fd.Type, mediaRefType) {
			return nil, nil, fmt.Errorf("%s: column %q is %s, not a frame reference", p, fd.Name, fd.Type)
		}
		keys = append(keys, fd.Name)
	}
	var eps []frameEpisode
	renamed := map[string]string{}
	tr := array.NewTableReader(tbl, framesBatch)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		index, episode, frame := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
		for r := 0; r < int(rec.NumRows()); r++ {
			e, k := episode.Value(r), frame.Value(r)
			if k == 0 {
				eps = append(eps, frameEpisode{episode: e, first: index.Value(r)})
			}
			if len(eps) == 0 || eps[len(eps)-1].episode != e || eps[len(eps)-1].length != k {
				return nil, nil, fmt.Errorf("%s: row %d: episode %d frame %d out of order", p, index.Value(r), e, k)
			}
			eps[len(eps)-1].length++
			for i, key := range keys {
				col := rec.Column(3 + i).(*array.Struct)
				if col.IsNull(r) {
					continue
				}
				uri, pts := col.Field(0).(*array.String), col.Field(1).(*array.Int64)
				ref, ok := renamed[uri.Value(r)]
				if !ok {
					if ref, err = rename(uri.Value(r)); err != nil {
						return nil, nil, fmt.Errorf("%s: episode %d, %s: %w", p, e, key, err)
					}
					renamed[uri.Value(r)] = ref
				}
				c := cells[cellKey{e, key}]
				if int64(len(c.pts)) != k {
					return nil, nil, fmt.Errorf("%s: episode %d, %s: frame %d after a null cell", p, e, key, k)
				}
				c.ref, c.pts = ref, append(c.pts, pts.Value(r))
				cells[cellKey{e, key}] = c
			}
		}
	}
	return keys, eps, tr.Err()
}
