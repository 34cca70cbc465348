package lerobot

// A LeRobot v3.0 dataset stored as Lance (meta/info.json "storage_format":
// "lance", the layout LeRobot's Lance storage backend reads and the
// lerobot-lancedb converter writes) has no data/ and no videos/:
//
//	meta/          as in the parquet layout (info.json, episodes/, tasks,
//	               stats), info.json saying storage_format "lance"
//	frames.lance   one row per frame, row N being frame N of the dataset:
//	               the columns of the data tables, dots in their names
//	               replaced by underscores, list columns stored as
//	               fixed-size lists
//	videos.lance   one row per camera file: video_key, chunk_index,
//	               file_index, file_size, moov_offset, moov_size,
//	               kf_indices, kf_positions and video_bytes, a blob column
//	               holding the mp4 file's bytes verbatim
//	meta.lance     one row per file under meta/: path (relative to meta/)
//	               and data, the file's bytes, for readers of remote
//	               copies that have no meta/ directory
//
// Episodes find their camera file as in the parquet layout, through the
// videos/KEY/chunk_index and file_index columns of the episode metadata,
// which name the videos.lance row with that video_key, chunk_index and
// file_index; their frames are the rows [dataset_from_index,
// dataset_to_index) of frames.lance.
//
// Conversion writes what the parquet twin of the dataset converts to:
// camera files cut or packed from the blobs, read in place (a blob is a
// range of a Lance data or sidecar file), the tables written from
// frames.lance where data_path puts them, meta/ copied. meta.lance is not
// copied: it repeats meta/ (a difference is reported as a warning).
//
// A dataset in a bucket is read the same way, through the source tree
// listed once: the Lance tables by manifest, file metadata and pages
// (lancefmt/lancestore), each blob as a section of the object that holds
// it, whose ranged reads and read-ahead stay inside the blob.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/lancefmt/lancestore"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"
)

// Storage formats of a LeRobot dataset (meta/info.json's storage_format).
const (
	StorageParquet = "parquet"
	StorageLance   = "lance"
)

// The tables and columns of a dataset stored as Lance.
const (
	framesTable      = "frames.lance"
	videosTable      = "videos.lance"
	metaTable        = "meta.lance"
	videoBytesColumn = "video_bytes"
)

// videoColumnsLance are the columns of videos.lance read besides the blob.
var videoColumnsLance = []string{"video_key", "chunk_index", "file_index", "file_size", "moov_offset", "moov_size"}

// lanceStore is what the Lance tables of a dataset say, read by Open.
type lanceStore struct {
	d         *Dataset
	frames    *lancefmt.Dataset
	frameRows int64
	// videos are the rows of videos.lance in order, byID the same by
	// (video_key, chunk_index, file_index).
	videos []*lanceVideo
	byID   map[videoID]*lanceVideo
	// tables are the files and bytes of each table directory present.
	tables map[string]fileCount
	// warnings are inconsistencies that do not stop the conversion.
	warnings []string
}

// videoID names a camera file as the episode metadata does.
type videoID struct {
	key         string
	chunk, file int64
}

// lanceVideo is one row of videos.lance.
type lanceVideo struct {
	row      int64
	id       videoID
	fileSize int64
	loc      lancefmt.BlobLocation
	kind     lancefmt.BlobKind
	used     bool
}

// lanceInvalid blames row (or -1) and column (or "") of a Lance table.
func lanceInvalid(table string, row int64, column string, err error) error {
	ie := convert.Invalid("lerobot", table, err)
	ie.Row, ie.Column = row, column
	return ie
}

// tableDir returns the real path of the table directory rel, which must be
// a directory inside the dataset; a missing one matches fs.ErrNotExist.
func (d *Dataset) tableDir(rel string) (string, error) {
	real, err := srcfile.Resolve(d.rootReal, filepath.Join(d.Root, rel))
	if err != nil {
		return "", srcfile.Cause(err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", srcfile.Cause(err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("is %s, not a Lance dataset directory", srcfile.Kind(fi.Mode()))
	}
	return real, nil
}

// openLanceStore opens frames.lance and videos.lance (when the dataset has
// video features), reads every row of videos.lance but the bytes of its
// blobs, and compares meta.lance, when present, with meta/.
func openLanceStore(ctx context.Context, d *Dataset) (*lanceStore, error) {
	ls := &lanceStore{d: d, byID: map[videoID]*lanceVideo{}, tables: map[string]fileCount{}}
	open := func(rel string, required bool) (*lancefmt.Dataset, error) {
		if d.tree.Remote() {
			return ls.openRemote(ctx, rel, required)
		}
		dir, err := d.tableDir(rel)
		if errors.Is(err, fs.ErrNotExist) {
			if !required {
				return nil, nil
			}
			return nil, missingTable(d, rel)
		}
		if err != nil {
			return nil, invalid(rel, err)
		}
		c, err := countFiles(dir)
		if err != nil {
			return nil, invalid(rel, err)
		}
		ls.tables[rel] = c
		ds, err := lancefmt.Open(ctx, dir, lancefmt.OpenOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, invalid(rel, err)
		}
		return ds, nil
	}
	var err error
	if ls.frames, err = open(framesTable, true); err != nil {
		return nil, err
	}
	ls.frameRows = int64(ls.frames.NumRows())
	if len(d.VideoKeys) > 0 {
		videos, err := open(videosTable, true)
		if err != nil {
			return nil, err
		}
		if err := ls.readVideos(ctx, videos); err != nil {
			return nil, err
		}
	}
	meta, err := open(metaTable, false)
	if err != nil {
		return nil, err
	}
	if meta == nil {
		ls.warnings = append(ls.warnings, metaTable+" is missing: LeRobot's Lance reader needs it only for copies without meta/ (object storage), and meta/ is converted")
	} else if err := ls.compareMeta(ctx, d, meta); err != nil {
		return nil, err
	}
	return ls, nil
}

// missingTable says that the table directory rel of a dataset stored as
// Lance is missing.
func missingTable(d *Dataset, rel string) error {
	return &convert.InputError{Source: "lerobot", File: rel, Offset: -1, Row: -1,
		Err:  fmt.Errorf("is missing from %s, which meta/info.json says is stored as Lance", d.Root),
		Hint: "a LeRobot dataset stored as Lance holds frames.lance, videos.lance and meta.lance beside meta/; copy the whole dataset"}
}

// openRemote opens the table directory rel of a dataset in a bucket (nil
// when it is not required and missing): through the source tree, listed
// already, so a table costs its manifest and what is read of it.
func (ls *lanceStore) openRemote(ctx context.Context, rel string, required bool) (*lancefmt.Dataset, error) {
	d := ls.d
	if ok, err := d.tree.IsDir(rel); err != nil {
		return nil, invalid(rel, err)
	} else if !ok {
		if !required {
			return nil, nil
		}
		return nil, missingTable(d, rel)
	}
	c, err := d.countFiles(ctx, rel)
	if err != nil {
		return nil, invalid(rel, err)
	}
	ls.tables[rel] = c
	ds, err := lancestore.OpenIn(ctx, d.tree, rel, lancefmt.OpenOptions{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, invalid(rel, err)
	}
	return ds, nil
}

// blobSection opens the blob of videos.lance that is the size bytes from
// off of the Lance data or sidecar file at loc, as a file of its own,
// through the dataset's tree: loc is a path under the real root of a local
// dataset (a regular file, its links inside the dataset), or the s3://
// location of an object under the prefix of a dataset in a bucket, whose
// ranged reads then stay inside the blob (a sidecar file holds many). A
// blob that passes the end of its file is refused.
func (d *Dataset) blobSection(ctx context.Context, loc string, off, size int64) (srctree.File, error) {
	var rel string
	if d.tree.Remote() {
		r, ok := strings.CutPrefix(loc, d.tree.Location()+"/")
		if !ok {
			return nil, fmt.Errorf("%s lies outside %s", loc, d.Root)
		}
		rel = r
	} else {
		r, err := filepath.Rel(d.rootReal, loc)
		if err != nil || !filepath.IsLocal(r) {
			return nil, fmt.Errorf("%s lies outside %s", loc, d.Root)
		}
		rel = filepath.ToSlash(r)
	}
	return d.tree.OpenSection(ctx, rel, off, size)
}

// readVideos reads the rows of videos.lance: their identity and
// file_size, and where each blob's bytes are. A row without bytes, whose
// bytes are not file_size long or that repeats another's identity is
// refused; moov_offset and moov_size that do not name the moov box only
// warn (LeRobot's reader uses them to prefetch).
func (ls *lanceStore) readVideos(ctx context.Context, ds *lancefmt.Dataset) error {
	for _, name := range append(slices.Clone(videoColumnsLance), videoBytesColumn) {
		f := ds.Schema().Field(name)
		if f == nil {
			return lanceInvalid(videosTable, -1, name, fmt.Errorf("no such column; LeRobot's Lance layout has %s and %s", strings.Join(videoColumnsLance, ", "), videoBytesColumn))
		}
		if name == videoBytesColumn && !f.IsBlob() {
			return lanceInvalid(videosTable, -1, name, errors.New("not a blob column"))
		}
	}
	sc, err := ds.Scan(ctx, lancefmt.ScanOptions{Columns: videoColumnsLance})
	if err != nil {
		return invalid(videosTable, err)
	}
	type meta struct {
		id                       videoID
		fileSize, moovOff, moovN int64
		moov                     bool
	}
	var rows []meta
	for sc.Next() {
		rec := sc.RecordBatch()
		keys := rec.Column(0)
		ints := make([][]*float64, len(videoColumnsLance))
		for c := 1; c < len(videoColumnsLance); c++ {
			if ints[c], err = numbers(arrow.NewChunked(rec.Column(c).DataType(), []arrow.Array{rec.Column(c)})); err != nil {
				sc.Close()
				return lanceInvalid(videosTable, -1, videoColumnsLance[c], err)
			}
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := int64(len(rows))
			key, ok := stringAt(keys, i)
			if !ok || key == "" {
				sc.Close()
				return lanceInvalid(videosTable, row, "video_key", errors.New("null or empty"))
			}
			var v [6]int64
			for c := 1; c < len(videoColumnsLance); c++ {
				p := ints[c][i]
				if p == nil {
					if c >= 4 { // moov_offset, moov_size: prefetch hints
						v[c] = -1
						continue
					}
					sc.Close()
					return lanceInvalid(videosTable, row, videoColumnsLance[c], errors.New("null"))
				}
				v[c] = int64(*p)
			}
			rows = append(rows, meta{id: videoID{key, v[1], v[2]}, fileSize: v[3], moovOff: v[4], moovN: v[5], moov: v[4] >= 0 && v[5] >= 0})
		}
	}
	err = sc.Err()
	sc.Close()
	if err != nil {
		return invalid(videosTable, err)
	}

	bs, err := ds.Blobs(ctx, videoBytesColumn)
	if err != nil {
		return invalid(videosTable, err)
	}
	defer bs.Close()
	n := int64(0)
	for ; bs.Next(); n++ {
		if n >= int64(len(rows)) {
			return lanceInvalid(videosTable, n, videoBytesColumn, fmt.Errorf("more blobs than rows (%d)", len(rows)))
		}
		b, m := bs.Blob(), rows[n]
		if b.Null {
			return lanceInvalid(videosTable, n, videoBytesColumn, fmt.Errorf("null: the row for %s chunk %d file %d holds no bytes", m.id.key, m.id.chunk, m.id.file))
		}
		if b.Size != m.fileSize {
			return lanceInvalid(videosTable, n, videoBytesColumn, fmt.Errorf("the blob of %s chunk %d file %d is %d bytes, file_size says %d", m.id.key, m.id.chunk, m.id.file, b.Size, m.fileSize))
		}
		v := &lanceVideo{row: n, id: m.id, fileSize: m.fileSize, loc: b.Location, kind: b.Kind}
		if prev := ls.byID[m.id]; prev != nil {
			return lanceInvalid(videosTable, n, "", fmt.Errorf("%s chunk %d file %d appears twice (rows %d and %d)", m.id.key, m.id.chunk, m.id.file, prev.row, n))
		}
		ls.byID[m.id] = v
		ls.videos = append(ls.videos, v)
		if m.moov {
			if ok, err := v.moovAt(ctx, ls.d, m.moovOff, m.moovN); err != nil {
				return lanceInvalid(videosTable, n, videoBytesColumn, err)
			} else if !ok {
				ls.warnings = append(ls.warnings, fmt.Sprintf("%s: row %d: moov_offset %d and moov_size %d do not name the file's moov box (LeRobot's Lance reader prefetches by them; the conversion does not use them)", videosTable, n, m.moovOff, m.moovN))
			}
		}
	}
	if err := bs.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return invalid(videosTable, err)
	}
	if n != int64(len(rows)) {
		return lanceInvalid(videosTable, -1, videoBytesColumn, fmt.Errorf("%d blobs for %d rows", n, len(rows)))
	}
	return nil
}

// open opens the blob as a file of its own; the caller closes it.
func (v *lanceVideo) open(ctx context.Context, d *Dataset) (srctree.File, error) {
	f, err := d.blobSection(ctx, v.loc.Path, v.loc.Offset, v.loc.Size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.loc.Path, srcfile.Cause(err))
	}
	return f, nil
}

// moovAt reports whether the box at off in the blob is a moov box of size
// n.
func (v *lanceVideo) moovAt(ctx context.Context, d *Dataset, off, n int64) (bool, error) {
	if off < 0 || off+8 > v.loc.Size {
		return false, nil
	}
	r, err := v.open(ctx, d)
	if err != nil {
		return false, err
	}
	defer r.Close()
	var hdr [16]byte
	if _, err := r.ReadAt(hdr[:8], off); err != nil {
		return false, fmt.Errorf("%s: %w", v.loc.Path, err)
	}
	size := int64(uint32(hdr[0])<<24 | uint32(hdr[1])<<16 | uint32(hdr[2])<<8 | uint32(hdr[3]))
	if size == 1 && off+16 <= v.loc.Size {
		if _, err := r.ReadAt(hdr[8:16], off+8); err != nil {
			return false, fmt.Errorf("%s: %w", v.loc.Path, err)
		}
		size = 0
		for _, c := range hdr[8:16] {
			size = size<<8 | int64(c)
		}
	}
	return string(hdr[4:8]) == "moov" && size == n, nil
}

// maxMetaBytes bounds one row of meta.lance compared with meta/.
const maxMetaBytes = 1 << 30

// compareMeta compares the rows of meta.lance with the files under meta/,
// adding a warning for each file that differs or is only on one side (up
// to maxProblems). A path that is not a clean relative path is refused.
func (ls *lanceStore) compareMeta(ctx context.Context, d *Dataset, ds *lancefmt.Dataset) error {
	for _, name := range []string{"path", "data"} {
		if ds.Schema().Field(name) == nil {
			return lanceInvalid(metaTable, -1, name, errors.New("no such column; LeRobot's Lance layout has path and data"))
		}
	}
	sc, err := ds.Scan(ctx, lancefmt.ScanOptions{Columns: []string{"path", "data"}, BatchSize: 16})
	if err != nil {
		return invalid(metaTable, err)
	}
	defer sc.Close()
	var diffs []string
	seen := map[string]bool{}
	row := int64(0)
	for sc.Next() {
		rec := sc.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i, row = i+1, row+1 {
			p, ok := stringAt(rec.Column(0), i)
			if !ok || p == "" || strings.Contains(p, `\`) || !filepath.IsLocal(filepath.FromSlash(p)) || path.Clean(p) != p {
				return lanceInvalid(metaTable, row, "path", fmt.Errorf("%q is not a clean path inside meta/", p))
			}
			data, ok := bytesAt(rec.Column(1), i)
			seen[p] = true
			rel := "meta/" + p
			_, err := d.file(rel)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				diffs = append(diffs, fmt.Sprintf("%s is not under meta/", p))
			case err != nil:
				return invalid(rel, err)
			case !ok:
				diffs = append(diffs, fmt.Sprintf("%s is null in %s", p, metaTable))
			default:
				b, err := d.tree.ReadFile(ctx, rel, maxMetaBytes)
				if err != nil {
					return invalid(rel, srcfile.Cause(err))
				}
				if string(b) != string(data) {
					diffs = append(diffs, fmt.Sprintf("%s differs from meta/%s", p, p))
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return invalid(metaTable, err)
	}
	err = d.tree.Walk(ctx, "meta", func(e srctree.Entry) error {
		if e.Mode.IsDir() {
			return nil
		}
		if rel := strings.TrimPrefix(e.Name, "meta/"); !seen[rel] {
			diffs = append(diffs, fmt.Sprintf("meta/%s has no row", rel))
		}
		return nil
	})
	if err != nil {
		return invalid("meta", err)
	}
	if len(diffs) > 0 {
		if len(diffs) > maxProblems {
			diffs = append(diffs[:maxProblems], fmt.Sprintf("and %d more", len(diffs)-maxProblems))
		}
		ls.warnings = append(ls.warnings, fmt.Sprintf("%s does not repeat meta/, which is what is converted (LeRobot reads meta/ too, %s only for copies without it): %s", metaTable, metaTable, strings.Join(diffs, "; ")))
	}
	return nil
}

// stringAt returns a string column's value at i.
func stringAt(a arrow.Array, i int) (string, bool) {
	if a.IsNull(i) {
		return "", false
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i), true
	case *array.LargeString:
		return a.Value(i), true
	case *array.StringView:
		return a.Value(i), true
	}
	return "", false
}

// bytesAt returns a binary column's value at i.
func bytesAt(a arrow.Array, i int) ([]byte, bool) {
	if a.IsNull(i) {
		return nil, false
	}
	switch a := a.(type) {
	case *array.Binary:
		return a.Value(i), true
	case *array.LargeBinary:
		return a.Value(i), true
	case *array.BinaryView:
		return a.Value(i), true
	}
	return nil, false
}

// video returns the row of videos.lance that holds key's camera file
// (chunk, file) and marks it used.
func (ls *lanceStore) video(key string, chunk, file int64) *lanceVideo {
	v := ls.byID[videoID{key, chunk, file}]
	if v != nil {
		v.used = true
	}
	return v
}

// unused returns a warning for the rows of videos.lance no episode names.
func (ls *lanceStore) unused() []string {
	var rows []string
	for _, v := range ls.videos {
		if !v.used {
			rows = append(rows, fmt.Sprintf("row %d (%s chunk %d file %d)", v.row, v.id.key, v.id.chunk, v.id.file))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if len(rows) > maxProblems {
		rows = append(rows[:maxProblems], fmt.Sprintf("and %d more", len(rows)-maxProblems))
	}
	return []string{fmt.Sprintf("%s: no episode names %s; not converted", videosTable, strings.Join(rows, ", "))}
}

// SourceFile is where the bytes of one camera file are: Size bytes of
// Path from Offset.
type SourceFile struct {
	Path         string
	Offset, Size int64
}

// LanceCameraFiles returns, for the LeRobot dataset stored as Lance at
// src (a directory, or s3://BUCKET/PREFIX read with o), every camera file
// of videos.lance by the path video_path gives it (the member name a
// conversion packs it under when it keeps it whole), for tools that
// compare a conversion with its source; a Path is then an s3:// location
// for a dataset in a bucket. For a dataset in the parquet layout, whose
// camera files are files under src, it returns nil. Problems with the
// dataset are *convert.InputError values.
func LanceCameraFiles(ctx context.Context, src string, o objstore.Options) (map[string]SourceFile, error) {
	t, err := openTree(ctx, src, o)
	if err != nil {
		return nil, err
	}
	d, err := OpenTree(ctx, t)
	if err != nil || d.lance == nil {
		return nil, err
	}
	out := map[string]SourceFile{}
	for _, v := range d.lance.videos {
		rel, err := formatTemplate(d.VideoPath, map[string]any{"video_key": v.id.key, "chunk_index": v.id.chunk, "file_index": v.id.file})
		if err != nil {
			return nil, invalid("meta/info.json", fmt.Errorf("video_path: %w", err))
		}
		out[rel] = SourceFile{Path: v.loc.Path, Offset: v.loc.Offset, Size: v.loc.Size}
	}
	return out, nil
}
