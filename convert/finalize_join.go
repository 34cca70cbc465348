package convert

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bpconvert/bpconvert/packcore"
)

// partStore is where Finalize reads the committed parts of a split
// conversion: directories on this machine, or prefixes in a bucket. The
// join itself (joinParts) is written once over it; a store only lists,
// places and fetches.
type partStore interface {
	// location names part pi (0-based) in messages.
	location(pi int) string
	// shards lists part pi's pack shards in shard order, each with the
	// member names and payload bytes of its central directory; its errors
	// name the pack directory or shard (one matching fs.ErrNotExist when
	// the part has no pack directory).
	shards(ctx context.Context, pi int) ([]partShard, error)
	// manifest reads part pi's pack manifest; nil when it has none.
	manifest(ctx context.Context, pi int) (*packcore.Manifest, error)
	// place puts each moved shard into the joined output's pack directory
	// under its new name, copying no payload byte through this machine (a
	// hard link; a server-side copy).
	place(ctx context.Context, moves []shardMove) error
	// files returns a local directory that holds part pi's files other than
	// its packs (its tables, fetched when the part is in a bucket).
	files(ctx context.Context, pi int) (string, error)
}

// partShard is one shard of a part.
type partShard struct {
	name  string   // file name in the part's pack directory
	keys  []string // member names
	bytes int64    // payload bytes
	id    string   // what the store needs to place it (its object name)
}

// shardMove is one shard of a part placed into the joined output.
type shardMove struct {
	part    int
	shard   partShard
	newName string
}

// joinParts joins n parts into out, a local directory: the parts' shards
// are placed under new numbers (checking that no key is in two parts), the
// manifests merge into out's pack directory, the tables that have joiners
// are joined with their references renumbered, and every other file is
// linked into out (it must be the same in each part that has it). refBase
// is what the parts' references call the dataset root (see CheckRefBase);
// the joined references keep it. res counts what was joined.
func joinParts(ctx context.Context, ps partStore, n int, out string, joiners func(rel string) TableJoiner, refBase string, res *FinalizeResult) error {
	renames := make([]map[string]string, n) // old shard name -> new, per part
	owner := map[string]int{}               // key -> part index
	var moves []shardMove
	var manifest []packcore.ShardInfo
	withManifest := true
	for pi := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		pm := ps.location(pi) + "/" + MediaDir
		shards, err := ps.shards(ctx, pi)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("finalize: %w", err)
		}
		m, err := ps.manifest(ctx, pi)
		if err != nil {
			return fmt.Errorf("finalize: %s: %w", pm, err)
		}
		if m == nil && len(shards) > 0 {
			withManifest = false
		}
		renames[pi] = map[string]string{}
		ext := PartExtent{Part: Part{I: pi + 1, N: n}.String(), First: res.Shards, Shards: len(shards)}
		for _, s := range shards {
			newName := shardName(res.Shards)
			res.Shards++
			renames[pi][s.name] = newName
			for _, k := range s.keys {
				if other, dup := owner[k]; dup && other != pi {
					return Invalid("finalize", pm+"/"+s.name, fmt.Errorf("key %q is also in part %d/%d: %w", k, other+1, n, packcore.ErrDuplicateKey))
				}
				owner[k] = pi
			}
			res.Members += int64(len(s.keys))
			res.Bytes += s.bytes
			ext.Members += int64(len(s.keys))
			ext.Bytes += s.bytes
			moves = append(moves, shardMove{part: pi, shard: s, newName: newName})
			if m != nil {
				e, ok := m.Shards[s.name]
				if !ok {
					return fmt.Errorf("finalize: %s: manifest has no entry for %s", pm, s.name)
				}
				manifest = append(manifest, packcore.ShardInfo{Name: newName, Bytes: e.Bytes, SHA256: e.SHA256})
			}
		}
		res.Extents = append(res.Extents, ext)
	}
	media := filepath.Join(out, MediaDir)
	if err := os.MkdirAll(media, 0o755); err != nil {
		return err
	}
	if err := ps.place(ctx, moves); err != nil {
		return err
	}
	if withManifest && len(manifest) > 0 {
		if err := packcore.WriteManifest(media, manifest); err != nil {
			return err
		}
	}
	dirs := make([]string, n)
	for pi := range n {
		d, err := ps.files(ctx, pi)
		if err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
		dirs[pi] = d
	}
	refs := refDir(refBase, MediaDir)
	rename := func(part int, ref string) (string, error) {
		key, name, err := shardIn(ref, refs)
		if err != nil {
			return "", err
		}
		newName, ok := renames[part][name]
		if !ok {
			return "", fmt.Errorf("reference %q names no shard of part %d/%d", ref, part+1, n)
		}
		return packcore.FormatRef(key, packcore.JoinShardPath(refs, newName)), nil
	}
	return joinFiles(ctx, out, dirs, joiners, rename)
}

// localParts are parts committed in directories on this machine; their
// shards are hard-linked into media, the joined output's pack directory
// (which joinParts makes before placing them).
type localParts struct {
	dirs  []string
	media string
}

func (p localParts) location(pi int) string { return p.dirs[pi] }

func (p localParts) shards(_ context.Context, pi int) ([]partShard, error) {
	pm := filepath.Join(p.dirs[pi], MediaDir)
	names, err := packcore.ListShards(pm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pm, err)
	}
	out := make([]partShard, len(names))
	for i, name := range names {
		path := filepath.Join(pm, name)
		keys, n, err := shardKeys(path)
		if err != nil {
			return nil, err
		}
		out[i] = partShard{name: name, keys: keys, bytes: n, id: path}
	}
	return out, nil
}

func (p localParts) manifest(_ context.Context, pi int) (*packcore.Manifest, error) {
	return packcore.ReadManifest(filepath.Join(p.dirs[pi], MediaDir))
}

func (p localParts) place(ctx context.Context, moves []shardMove) error {
	for _, m := range moves {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := os.Link(m.shard.id, filepath.Join(p.media, m.newName)); err != nil {
			return fmt.Errorf("finalize: %w", err)
		}
	}
	return nil
}

func (p localParts) files(_ context.Context, pi int) (string, error) { return p.dirs[pi], nil }
