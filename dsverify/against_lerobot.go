package dsverify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/packcore"
)

// isLeRobotDataset reports whether the source, a local directory or a
// prefix in a bucket, looks like a LeRobot dataset (in the parquet layout
// or stored as Lance).
func (v *verifier) isLeRobotDataset() bool {
	p, file, err := v.source()
	return err == nil && file == "" && p.file("meta/info.json").exists()
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
func (v *verifier) againstLeRobot(src string) error {
	if len(v.pq) > 0 {
		if err := v.againstParquet(src); err != nil {
			return err
		}
	}
	a := v.rep.Against
	if a == nil {
		a = &Against{}
		v.rep.Against = a
	}
	a.Source, a.Format = src, "lerobot"
	b, err := v.out.file(videoindex.FileName).readAll(v.ctx, maxIndexBytes)
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
	sp, _, err := v.source()
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	var blobs map[string]cameraBlob
	if lance, videoPath, err := v.storedAsLance(sp); err != nil {
		return err
	} else if lance {
		if blobs, err = v.leRobotCameraBlobs(sp, videoPath); err != nil {
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
		if err := v.ctx.Err(); err != nil {
			return err
		}
		i := first[ref]
		p := Problem{Table: videoindex.FileName, Row: int64(i), Column: "ref", Ref: ref}
		key, shardPath, err := packcore.ParseRef(ref)
		if err != nil {
			continue // reported by the table check
		}
		shardPath, _ = v.shardRel(shardPath)
		e := v.set(packcore.CleanRefBase(filepath.ToSlash(filepath.Dir(shardPath))))
		if e.err != nil {
			continue // reported by the table check
		}
		r, err := v.openCameraFile(sp, key, blobs)
		if errors.Is(err, fs.ErrNotExist) {
			a.NotCompared++ // an episode container cut from a camera file
			continue
		}
		if err != nil {
			return fmt.Errorf("--against: %w", err)
		}
		n, reason, err := sameBytes(r, e.set, key)
		r.Close()
		if err != nil {
			return err
		}
		v.compared(a, n, reason, p)
	}
	return nil
}

// maxIndexBytes bounds the video_index.json read.
const maxIndexBytes = 1 << 30

// storedAsLance reports whether the LeRobot source src is stored as Lance
// (meta/info.json's storage_format), with the video_path template of its
// camera files, reading that file alone.
func (v *verifier) storedAsLance(sp place) (bool, string, error) {
	info := sp.file("meta/info.json")
	b, err := info.readAll(v.ctx, 64<<20)
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
	return doc.StorageFormat == leRobotLanceStorage, doc.VideoPath, nil
}

// openCameraFile opens the source camera file that a conversion packed
// whole as key: the file or object key under src, or with blobs (a source
// stored as Lance) the blob of that name. A key naming none matches
// fs.ErrNotExist.
func (v *verifier) openCameraFile(sp place, key string, blobs map[string]cameraBlob) (io.ReadCloser, error) {
	if blobs == nil {
		return sp.file(key).stream(v.ctx)
	}
	b, ok := blobs[key]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return b.File.section(v.ctx, b.Offset, b.Size)
}
