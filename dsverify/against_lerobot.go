package dsverify

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/bpconvert/bpconvert/convert/lerobot"
	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/packcore"
)

// isLeRobotDataset reports whether dir looks like a LeRobot dataset (in
// the parquet layout or stored as Lance).
func isLeRobotDataset(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "meta", "info.json"))
	return err == nil
}

// againstLeRobot compares a converted LeRobot dataset with its source:
// every camera file packed whole with the file of the same path in the
// source, and the frames extracted from the tables as convert-parquet's
// are (see againstParquet). A camera file cut into one container per
// episode cannot be compared byte for byte (its packets are copied into new
// containers); its episodes are counted as not compared. The camera files
// of a source stored as Lance are the blobs of its videos.lance.
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
	f, err := os.Open(filepath.Join(v.root, videoindex.FileName))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	ix, err := videoindex.Read(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("--against: %s: %w", videoindex.FileName, err)
	}
	blobs, err := lerobot.LanceCameraFiles(v.ctx, src)
	if err != nil {
		return fmt.Errorf("--against: %w", err)
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
		sf, r, err := openCameraFile(src, key, blobs)
		if os.IsNotExist(err) {
			a.NotCompared++ // an episode container cut from a camera file
			continue
		}
		if err != nil {
			return fmt.Errorf("--against: %w", err)
		}
		n, reason, err := sameBytes(r, e.set, key)
		sf.Close()
		if err != nil {
			return err
		}
		v.compared(a, n, reason, p)
	}
	return nil
}

// openCameraFile opens the source camera file that a conversion packed
// whole as key: the file key under src, or with blobs (a source stored as
// Lance) the blob of that name. A key naming none matches os.ErrNotExist.
func openCameraFile(src, key string, blobs map[string]lerobot.SourceFile) (*os.File, io.Reader, error) {
	if blobs == nil {
		f, err := os.Open(filepath.Join(src, filepath.FromSlash(key)))
		return f, f, err
	}
	b, ok := blobs[key]
	if !ok {
		return nil, nil, os.ErrNotExist
	}
	f, err := os.Open(b.Path)
	if err != nil {
		return nil, nil, err
	}
	return f, io.NewSectionReader(f, b.Offset, b.Size), nil
}
