package lerobotverify

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/bpconvert/bpconvert/dsverify"
	"github.com/bpconvert/bpconvert/lancefmt"
)

// This file finds the camera files of a LeRobot dataset stored as Lance
// for verify --against, from LeRobot's Lance layout, not through
// convert/lerobot: videos.lance holds one row per camera file, named by
// its video_key, chunk_index and file_index, its bytes a blob of the
// video_bytes column; meta/info.json's video_path names where the file
// of a key, chunk and file lies in the parquet layout, the name a
// conversion packs it under when it keeps it whole.

// lanceStorage is meta/info.json's storage_format of a LeRobot
// dataset stored as Lance.
const lanceStorage = "lance"

// videosTable is the table of camera files, videoBytes its blob column.
const (
	videosTable = "videos.lance"
	videoBytes  = "video_bytes"
)

// cameraBlob is where a camera file's bytes lie: Size bytes from Offset of
// the file (or s3:// object) File.
type cameraBlob struct {
	File         dsverify.File
	Offset, Size int64
}

// cameraBlobs maps every camera file of videos.lance under src to
// its blob, by the path videoPath gives it.
func cameraBlobs(c *dsverify.Check, sp dsverify.Place, videoPath string) (map[string]cameraBlob, error) {
	loc := sp.File(videosTable).String()
	ds, err := c.OpenLance(sp, videosTable, lancefmt.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	names, err := videoNames(c.Context(), ds, loc, videoPath)
	if err != nil {
		return nil, err
	}
	bs, err := ds.Blobs(c.Context(), videoBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: column %s: %w", loc, videoBytes, err)
	}
	defer bs.Close()
	out := make(map[string]cameraBlob, len(names))
	row := 0
	for ; bs.Next(); row++ {
		if row >= len(names) {
			return nil, fmt.Errorf("%s: column %s: more blobs than rows (%d)", loc, videoBytes, len(names))
		}
		b := bs.Blob()
		if b.Null {
			return nil, fmt.Errorf("%s: row %d: column %s: null", loc, row, videoBytes)
		}
		rel, ok := sp.RelOf(b.Location.Path)
		if !ok {
			return nil, fmt.Errorf("%s: row %d: column %s: the blob lies in %s, outside the dataset", loc, row, videoBytes, b.Location.Path)
		}
		out[names[row]] = cameraBlob{File: sp.File(rel), Offset: b.Location.Offset, Size: b.Location.Size}
	}
	if err := bs.Err(); err != nil {
		return nil, fmt.Errorf("%s: column %s: %w", loc, videoBytes, err)
	}
	if row != len(names) {
		return nil, fmt.Errorf("%s: column %s: %d blobs for %d rows", loc, videoBytes, row, len(names))
	}
	return out, nil
}

// videoNames reads, row by row, the path videoPath gives the camera
// file of each row of videos.lance.
func videoNames(ctx context.Context, ds *lancefmt.Dataset, loc, videoPath string) ([]string, error) {
	cols := []string{"video_key", "chunk_index", "file_index"}
	sc, err := ds.Scan(ctx, lancefmt.ScanOptions{Columns: cols})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	defer sc.Close()
	var names []string
	for sc.Next() {
		rec := sc.RecordBatch()
		keys, ok := rec.Column(0).(*array.String)
		if !ok {
			return nil, fmt.Errorf("%s: column video_key: %s, not a string", loc, rec.Column(0).DataType())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := len(names)
			chunk, cerr := intAt(rec.Column(1), i)
			file, ferr := intAt(rec.Column(2), i)
			if err := errors.Join(cerr, ferr); err != nil || keys.IsNull(i) || keys.Value(i) == "" {
				return nil, fmt.Errorf("%s: row %d: no video_key, chunk_index or file_index (%v)", loc, row, err)
			}
			name, err := pyFormat(videoPath, map[string]any{"video_key": keys.Value(i), "chunk_index": chunk, "file_index": file})
			if err != nil {
				return nil, fmt.Errorf("meta/info.json: video_path: %w", err)
			}
			names = append(names, name)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return names, nil
}

// intAt returns the integer at row i of a, an integer column.
func intAt(a arrow.Array, i int) (int64, error) {
	if a.IsNull(i) {
		return 0, errors.New("null")
	}
	switch c := a.(type) {
	case *array.Int64:
		return c.Value(i), nil
	case *array.Int32:
		return int64(c.Value(i)), nil
	case *array.Int16:
		return int64(c.Value(i)), nil
	case *array.Int8:
		return int64(c.Value(i)), nil
	case *array.Uint64:
		return int64(c.Value(i)), nil
	case *array.Uint32:
		return int64(c.Value(i)), nil
	case *array.Uint16:
		return int64(c.Value(i)), nil
	case *array.Uint8:
		return int64(c.Value(i)), nil
	}
	return 0, fmt.Errorf("%s, not an integer", a.DataType())
}

// pyFormat fills a path template the way Python's str.format fills
// LeRobot's (videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4):
// {name}, {name:d} and {name:0Nd} fields, {{ and }} for braces. The
// result must be a clean relative path.
func pyFormat(tmpl string, vals map[string]any) (string, error) {
	var b strings.Builder
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		if (c == '{' || c == '}') && i+1 < len(tmpl) && tmpl[i+1] == c {
			b.WriteByte(c)
			i++
			continue
		}
		if c == '}' {
			return "", fmt.Errorf("%q: a single }", tmpl)
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(tmpl[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q: a { not closed", tmpl)
		}
		name, spec, _ := strings.Cut(tmpl[i+1:i+end], ":")
		val, ok := vals[name]
		if !ok {
			return "", fmt.Errorf("%q: no field %q", tmpl, name)
		}
		s, err := pyFormatValue(val, spec)
		if err != nil {
			return "", fmt.Errorf("%q: field %q: %w", tmpl, name, err)
		}
		b.WriteString(s)
		i += end
	}
	p := b.String()
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("%q gives %q, not a clean path inside the dataset", tmpl, p)
	}
	return p, nil
}

// pyFormatValue formats one value with a format spec: "" or, for an
// integer, d and 0Nd.
func pyFormatValue(val any, spec string) (string, error) {
	switch x := val.(type) {
	case string:
		if spec != "" && spec != "s" {
			return "", fmt.Errorf("format spec %q for a string", spec)
		}
		return x, nil
	case int64:
		if spec == "" || spec == "d" {
			return strconv.FormatInt(x, 10), nil
		}
		w, ok := strings.CutSuffix(spec, "d")
		if !ok || !strings.HasPrefix(w, "0") {
			return "", fmt.Errorf("format spec %q", spec)
		}
		width, err := strconv.Atoi(w)
		if err != nil {
			return "", fmt.Errorf("format spec %q", spec)
		}
		return fmt.Sprintf("%0*d", width, x), nil
	}
	return "", fmt.Errorf("a %T", val)
}
