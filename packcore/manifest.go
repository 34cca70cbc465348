package packcore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// ManifestName is the file name of a pack's manifest.
const ManifestName = "pack.manifest.json"

// Manifest records every shard's size and SHA-256 digest.
type Manifest struct {
	Algorithm string                   `json:"algorithm"`
	Shards    map[string]ManifestShard `json:"shards"`
}

// ManifestShard is one shard's entry in a manifest.
type ManifestShard struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// EncodeManifest renders a manifest the way the reference tool writes it:
// JSON indented by one space, keys sorted, a trailing newline.
func EncodeManifest(shards []ShardInfo) ([]byte, error) {
	m := Manifest{Algorithm: "sha256", Shards: make(map[string]ManifestShard, len(shards))}
	for _, s := range shards {
		m.Shards[s.Name] = ManifestShard{Bytes: s.Bytes, SHA256: s.SHA256}
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteManifest writes dir/pack.manifest.json atomically.
func WriteManifest(dir string, shards []ShardInfo) error {
	b, err := EncodeManifest(shards)
	if err != nil {
		return fmt.Errorf("pack %s: manifest: %w", dir, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, ManifestName), b, 0o644); err != nil {
		return fmt.Errorf("pack %s: manifest: %w", dir, err)
	}
	return nil
}

// ReadManifest reads dir/pack.manifest.json (a regular file of at most
// 256 MiB). A missing manifest returns (nil, nil).
func ReadManifest(dir string) (*Manifest, error) {
	b, err := srcfile.ReadFile(filepath.Join(dir, ManifestName), maxManifest)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, srcfile.Named("read", filepath.Join(dir, ManifestName), err)
	}
	m, err := DecodeManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestName), err)
	}
	return m, nil
}

// DecodeManifest decodes a manifest read whole.
func DecodeManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.Algorithm != "sha256" {
		return nil, fmt.Errorf("unsupported algorithm %q", m.Algorithm)
	}
	return &m, nil
}

// HashShards computes size and SHA-256 of every shard in dir by reading them,
// for packs written without a manifest.
func HashShards(ctx context.Context, dir string) ([]ShardInfo, error) {
	names, err := ListShards(dir)
	if err != nil {
		return nil, err
	}
	out := make([]ShardInfo, 0, len(names))
	for _, n := range names {
		f, err := srcfile.Open(filepath.Join(dir, n))
		if err != nil {
			return nil, srcfile.Named("open", filepath.Join(dir, n), err)
		}
		h := sha256.New()
		size, err := io.Copy(h, ctxReader{ctx, f})
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, ShardInfo{Name: n, Bytes: size, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	return out, nil
}

// ListShards returns the *.zip files directly inside dir in shard order. A
// directory named *.zip beside them is refused, naming it: a pack read
// without one of its shards would be read in part, silently.
func ListShards(dir string) ([]string, error) {
	names, irregular, err := listShards(dir)
	if err != nil {
		return nil, err
	}
	if len(irregular) > 0 && len(names) > 0 {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(dir, irregular[0]), Err: srcfile.CheckMode(fs.ModeDir)}
	}
	return names, nil
}

// ShardEntries returns every entry directly inside dir named like a shard
// (*.zip, not hidden), whatever its type, in shard order: what Verify
// checks, so that a directory named like a shard is reported as a problem
// of the pack, and the other shards are still checked.
func ShardEntries(dir string) ([]string, error) {
	names, irregular, err := listShards(dir)
	if err != nil {
		return nil, err
	}
	names = append(names, irregular...)
	sortShardNames(names)
	return names, nil
}

// listShards returns the *.zip files directly inside dir in shard order,
// and the directories named *.zip there.
func listShards(dir string) (names, dirs []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".zip") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.IsDir() {
			dirs = append(dirs, e.Name())
			continue
		}
		names = append(names, e.Name())
	}
	sortShardNames(names)
	sortShardNames(dirs)
	return names, dirs, nil
}

// ctxReader stops a copy when its context is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

var shardRE = regexp.MustCompile(`^(.+)-([0-9]+)\.zip$`)

// sortShardNames orders shard file names by prefix and then numerically by
// index, so pack-10000.zip follows pack-9999.zip; other names sort last by
// name.
func sortShardNames(names []string) {
	type k struct {
		prefix string
		idx    int
		ok     bool
	}
	key := func(s string) k {
		m := shardRE.FindStringSubmatch(s)
		if m == nil {
			return k{}
		}
		n, err := strconv.Atoi(m[2])
		return k{m[1], n, err == nil}
	}
	sort.SliceStable(names, func(i, j int) bool {
		a, b := key(names[i]), key(names[j])
		if a.ok != b.ok {
			return a.ok
		}
		if a.ok && (a.prefix != b.prefix || a.idx != b.idx) {
			if a.prefix != b.prefix {
				return a.prefix < b.prefix
			}
			return a.idx < b.idx
		}
		return names[i] < names[j]
	})
}
