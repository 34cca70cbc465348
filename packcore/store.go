package packcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/bpconvert/bpconvert/objstore"
)

// Reading packs from a store (objstore: a local directory or an S3 prefix).
// Every read of an object is a request there, so the readers keep them few:
// a set opens with one listing and, per shard, one ranged read of its last
// 64 KiB (end records and a directory of up to about 800 members of
// converter-length keys; a larger directory takes one more read of the part
// before), and a member is one ranged read of local header and payload.

// maxManifest bounds the manifest read from a store (a manifest lists one
// line per shard).
const maxManifest = 256 << 20

// storeName names an object of a store for messages.
func storeName(s objstore.Store, name string) string {
	return strings.TrimSuffix(s.Location(), "/") + "/" + name
}

// ListShardsIn returns the *.zip objects directly inside dir (a
// slash-separated name relative to the store's root; "" for the root) in
// shard order, from one listing.
func ListShardsIn(ctx context.Context, s objstore.Store, dir string) ([]objstore.Info, error) {
	prefix := ""
	if dir != "" {
		prefix = strings.Trim(dir, "/") + "/"
	}
	byName := map[string]objstore.Info{}
	var names []string
	err := s.List(ctx, prefix, func(in objstore.Info) error {
		rest := strings.TrimPrefix(in.Name, prefix)
		if !strings.Contains(rest, "/") && strings.HasSuffix(rest, ".zip") && !strings.HasPrefix(rest, ".") {
			names = append(names, rest)
			byName[rest] = in
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortShardNames(names)
	out := make([]objstore.Info, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out, nil
}

// ReadManifestIn reads dir/pack.manifest.json from a store. A missing
// manifest returns (nil, nil).
func ReadManifestIn(ctx context.Context, s objstore.Store, dir string) (*Manifest, error) {
	name := objstore.Join(dir, ManifestName)
	b, err := objstore.ReadAll(ctx, s, name, maxManifest)
	if errors.Is(err, objstore.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", storeName(s, name), err)
	}
	if m.Algorithm != "sha256" {
		return nil, fmt.Errorf("%s: unsupported algorithm %q", storeName(s, name), m.Algorithm)
	}
	return &m, nil
}

// shardsAt resolves name in a store to a pack directory's shards or one
// shard: a name ending in .zip that is an object is a single shard, else a
// directory whose shards are listed. It returns the directory and its
// shards.
func shardsAt(ctx context.Context, s objstore.Store, name string) (dir string, shards []objstore.Info, single bool, err error) {
	name = strings.Trim(name, "/")
	var statErr error
	if strings.HasSuffix(name, ".zip") {
		in, err := s.Stat(ctx, name)
		if err == nil {
			return path.Dir(name), []objstore.Info{in}, true, nil
		}
		if !errors.Is(err, objstore.ErrNotExist) {
			return "", nil, false, err
		}
		// not an object: a directory, or nothing (the listing says which)
		statErr = err
	}
	shards, err = ListShardsIn(ctx, s, name)
	if err != nil {
		return "", nil, false, err
	}
	if len(shards) == 0 && statErr != nil {
		return "", nil, false, statErr
	}
	if len(shards) == 0 {
		return "", nil, false, fmt.Errorf("%s: %w: no *.zip shards there", storeName(s, name), objstore.ErrNotExist)
	}
	return name, shards, false, nil
}

// cleanDir maps path.Dir's "." to the store's root.
func cleanDir(d string) string {
	if d == "." {
		return ""
	}
	return d
}

// OpenSetIn opens a pack directory, or a single shard, in a store (name is
// relative to the store's root; "" is the root) and indexes every member,
// as OpenSet does for a local path. Reads go through the store's objects;
// from S3, opening takes one listing (a HEAD for a single shard) and one
// ranged read per shard for a directory of up to 64 KiB, and a member's
// read is one ranged read. ctx bounds every later read of the set too.
func OpenSetIn(ctx context.Context, s objstore.Store, name string, opts SetOptions) (*Set, error) {
	dir, shards, _, err := shardsAt(ctx, s, name)
	if err != nil {
		return nil, err
	}
	dir = cleanDir(dir)
	refBase := opts.RefBase
	if refBase == "" {
		refBase = path.Base(strings.TrimSuffix(objstore.Join(s.Location(), dir), "/"))
	}
	_, remote := s.(*objstore.S3)
	set := &Set{dir: dir, refBase: CleanRefBase(refBase), byName: map[string]*shardFile{}}
	for _, in := range shards {
		obj, err := objstore.OpenListed(ctx, s, in)
		if err != nil {
			set.Close()
			return nil, err
		}
		base := path.Base(in.Name)
		sf, err := newShardFile(base, obj, obj.Size(), remote)
		if err != nil {
			obj.Close()
			set.Close()
			return nil, fmt.Errorf("%s: %w", storeName(s, in.Name), err)
		}
		sf.closer = obj
		set.shards = append(set.shards, sf)
		set.byName[base] = sf
	}
	set.indexMembers()
	return set, nil
}

// verifyChunk is the read size of a shard streamed from object storage for
// a check; two such reads are in flight ahead of the check.
const verifyChunk = 4 << 20

// VerifyIn is Verify for a pack directory, or a single shard, in a store.
// Each shard is read once, front to back, with reads fetched ahead, after
// one ranged read of its tail for the directory.
func VerifyIn(ctx context.Context, s objstore.Store, name string) (*VerifyReport, error) {
	dir, shards, single, err := shardsAt(ctx, s, name)
	if err != nil {
		return nil, err
	}
	dir = cleanDir(dir)
	var manifest *Manifest
	var manifestErr error
	if !single {
		manifest, manifestErr = ReadManifestIn(ctx, s, dir)
	}
	_, remote := s.(*objstore.S3)
	names := make([]string, len(shards))
	infos := make(map[string]objstore.Info, len(shards))
	for i, in := range shards {
		names[i] = path.Base(in.Name)
		infos[names[i]] = in
	}
	return verifyShards(ctx, names, manifest, manifestErr, func(ctx context.Context, name string) (*openedShard, error) {
		obj, err := objstore.OpenListed(ctx, s, infos[name])
		if err != nil {
			return nil, err
		}
		if !remote {
			return &openedShard{r: obj, size: obj.Size(), close: obj.Close, seq: func(ctx context.Context) io.ReadCloser {
				return io.NopCloser(ctxReader{ctx, io.NewSectionReader(obj, 0, obj.Size())})
			}}, nil
		}
		// The tail read for the directory is kept and ends the stream,
		// so no byte of the shard is fetched twice but the part of a large
		// directory that lies before the tail.
		tc := &tailCache{Object: obj}
		return &openedShard{r: tc, size: obj.Size(), close: obj.Close, seq: tc.stream}, nil
	})
}

// tailCache keeps a copy of the read that reached an object's end (the
// directory's tail read), for stream to serve instead of fetching it again.
type tailCache struct {
	objstore.Object
	off  int64
	tail []byte
}

func (t *tailCache) ReadAt(p []byte, off int64) (int, error) {
	n, err := t.Object.ReadAt(p, off)
	if (err == nil || errors.Is(err, io.EOF)) && off+int64(n) == t.Size() && n == len(p) && t.tail == nil {
		t.off, t.tail = off, bytes.Clone(p[:n])
	}
	return n, err
}

// stream reads the object front to back: the bytes before the kept tail
// with reads fetched ahead, then the tail from memory.
func (t *tailCache) stream(ctx context.Context) io.ReadCloser {
	if t.tail == nil {
		return objstore.NewSeqReader(ctx, t.Object, objstore.SeqOptions{Chunk: verifyChunk})
	}
	head := objstore.NewSeqReader(ctx, sectionObject{io.NewSectionReader(t.Object, 0, t.off)}, objstore.SeqOptions{Chunk: verifyChunk})
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(head, bytes.NewReader(t.tail)), head}
}
