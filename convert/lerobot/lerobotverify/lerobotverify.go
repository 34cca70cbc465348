// Package lerobotverify is convert-lerobot's comparison for verify
// --against: it compares a converted LeRobot dataset with its source, every
// camera file packed whole with the file of the same path in the source
// (the blob of videos.lance for a source stored as Lance), and the frames
// extracted from the tables as convert-parquet's comparison compares a
// rewritten table (parquetverify).
//
// It reads the source on its own, never through convert/lerobot: a
// converter that misread a source would otherwise agree with itself
// (docs/architecture.md, "The verify principle"). What it takes from the
// conversion is the video index the conversion wrote
// (convert/lerobot/videoindex), which says which pack member holds which
// camera file.
package lerobotverify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/convert/parquet/parquetverify"
	"github.com/bpconvert/bpconvert/dsverify"
)

// Comparer compares a dataset with a LeRobot dataset it was converted from
// (unless the dataset has a Lance table convert-lance wrote and the source
// is a Lance dataset: that is Lance's to compare).
var Comparer = dsverify.Comparer{
	Claims: func(c *dsverify.Check, src string) bool {
		return !c.LanceSource() && c.LeRobotSource()
	},
	Compare: compare,
}

// againstLeRobot compares a converted LeRobot dataset with its source:
// every camera file packed whole with the file of the same path in the
// source, and the frames extracted from the tables as convert-parquet's
// are (see againstParquet). A camera file cut into one container per
// episode cannot be compared byte for byte (its packets are copied into new
// containers); its episodes are counted as not compared. The camera files
// of a source stored as Lance are the blobs of its videos.lance. Either
// side may be in object storage (the source's camera files, or blobs, are
// then streamed with read-ahead).
func compare(c *dsverify.Check, src string) error {
	if err := parquetverify.CompareTables(c, src); err != nil {
		return err
	}
	a := c.Report().Against
	if a == nil {
		a = &dsverify.Against{}
		c.Report().Against = a
	}
	a.Source, a.Format = src, "lerobot"
	ctx := c.Context()
	b, err := c.Dataset().File(videoindex.FileName).ReadAll(ctx, maxIndexBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	ix, err := videoindex.Read(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("--against: %s: %w", videoindex.FileName, err)
	}
	sp, _, err := c.Source()
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	var blobs map[string]cameraBlob
	if lance, videoPath, err := storedAsLance(c, sp); err != nil {
		return err
	} else if lance {
		if blobs, err = cameraBlobs(c, sp, videoPath); err != nil {
			return fmt.Errorf("--against: %w", err)
		}
	}
	// Each packed blob once, with the first entry that names it.
	first := map[string]int{}
	for i, e := range ix.Episodes {
		if _, ok := first[e.Ref]; !ok {
			first[e.Ref] = i
		}
	}
	refs := make([]string, 0, len(first))
	for r := range first {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return first[refs[i]] < first[refs[j]] })
	for _, ref := range refs {
		if err := ctx.Err(); err != nil {
			return err
		}
		i := first[ref]
		p := dsverify.Problem{Table: videoindex.FileName, Row: int64(i), Column: "ref", Ref: ref}
		set, key, ok := c.RefSet(ref)
		if !ok {
			continue // reported by the table check
		}
		r, err := openCameraFile(ctx, sp, key, blobs)
		if errors.Is(err, fs.ErrNotExist) {
			a.NotCompared++ // an episode container cut from a camera file
			continue
		}
		if err != nil {
			return fmt.Errorf("--against: %w", err)
		}
		n, reason, err := dsverify.SameBytes(r, set, key)
		r.Close()
		if err != nil {
			return err
		}
		c.Compared(a, n, reason, p)
	}
	return nil
}

// maxIndexBytes bounds the video_index.json read.
const maxIndexBytes = 1 << 30

// storedAsLance reports whether the LeRobot source src is stored as Lance
// (meta/info.json's storage_format), with the video_path template of its
// camera files, reading that file alone.
func storedAsLance(c *dsverify.Check, sp dsverify.Place) (bool, string, error) {
	info := sp.File("meta/info.json")
	b, err := info.ReadAll(c.Context(), 64<<20)
	if err != nil {
		return false, "", fmt.Errorf("--against: %w", err)
	}
	var doc struct {
		StorageFormat string `json:"storage_format"`
		VideoPath     string `json:"video_path"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return false, "", fmt.Errorf("--against: %s: %w", info, err)
	}
	return doc.StorageFormat == lanceStorage, doc.VideoPath, nil
}

// openCameraFile opens the source camera file that a conversion packed
// whole as key: the file or object key under src, or with blobs (a source
// stored as Lance) the blob of that name. A key naming none matches
// fs.ErrNotExist.
func openCameraFile(ctx context.Context, sp dsverify.Place, key string, blobs map[string]cameraBlob) (io.ReadCloser, error) {
	if blobs == nil {
		return sp.File(key).Stream(ctx)
	}
	b, ok := blobs[key]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return b.File.Section(ctx, b.Offset, b.Size)
}
