package dsverify

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/packcore"
)

// isLeRobotDataset reports whether dir looks like a LeRobot dataset.
func isLeRobotDataset(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "meta", "info.json"))
	return err == nil
}

// againstLeRobot compares a converted LeRobot dataset with its source:
// every camera file packed whole with the file of the same path in the
// source, and the frames extracted from the tables as convert-parquet's
// are (see againstParquet). A camera file cut into one container per
// episode cannot be compared byte for byte (its packets are copied into new
// containers); its episodes are counted as not compared.
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
		sf, err := os.Open(filepath.Join(src, filepath.FromSlash(key)))
		if os.IsNotExist(err) {
			a.NotCompared++ // an episode container cut from a camera file
			continue
		}
		if err != nil {
			return fmt.Errorf("--against: %w", err)
		}
		n, reason, err := sameBytes(sf, e.set, key)
		sf.Close()
		if err != nil {
			return err
		}
		v.compared(a, n, reason, p)
	}
	return nil
}
