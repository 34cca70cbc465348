package packcore

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// VerifyReport lists what Verify checked and every problem it found.
type VerifyReport struct {
	Shards   int      `json:"shards"`
	Members  int      `json:"members"`
	Bytes    int64    `json:"bytes"`
	Manifest bool     `json:"manifest_checked"`
	Problems []string `json:"problems"`
}

// OK reports whether no problem was found.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// shardCheck is the outcome of one shard's full check.
type shardCheck struct {
	dir      *Directory
	size     int64
	sha256   string
	problems []string
}

// Verify checks a pack directory, or a single shard file, at rest: every
// member STORED and unencrypted, local headers agreeing with the central
// directory, no overlaps, keys unique across shards, every CRC-32, and, when
// pack.manifest.json is present, every shard's size and SHA-256. Each shard
// is read once, sequentially. It reports every problem, not only the first;
// the error is for failures to run at all.
func Verify(ctx context.Context, path string) (*VerifyReport, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	dir, names := path, []string(nil)
	if st.IsDir() {
		names, err = ListShards(path)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: no *.zip shards", path)
		}
	} else {
		dir, names = filepath.Dir(path), []string{filepath.Base(path)}
	}
	rep := &VerifyReport{Problems: []string{}}
	var manifest *Manifest
	if st.IsDir() {
		manifest, err = ReadManifest(dir)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: unreadable (%v)", ManifestName, err))
		}
	}
	owner := make(map[string]string)
	present := make(map[string]bool)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		present[name] = true
		rep.Shards++
		res, err := verifyShard(ctx, filepath.Join(dir, name), true)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: unreadable (%v)", name, err))
			continue
		}
		rep.Problems = append(rep.Problems, res.problems...)
		for _, e := range res.dir.Entries {
			if err := ValidateKey(e.Name); err != nil {
				var ke *KeyError
				reason := err.Error()
				if errors.As(err, &ke) {
					reason = ke.Reason
				}
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s:%s: unusable key (%s)", name, quoteName(e.Name), reason))
			}
			if other, dup := owner[e.Name]; dup && other != name {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s:%s: duplicate key (also in %s)", name, e.Name, other))
				continue
			}
			owner[e.Name] = name
			rep.Members++
			rep.Bytes += e.Size
		}
		if manifest != nil {
			if m, ok := manifest.Shards[name]; !ok {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: not listed in manifest", name))
			} else if m.Bytes != res.size || m.SHA256 != res.sha256 {
				rep.Problems = append(rep.Problems, fmt.Sprintf("%s: does not match manifest (%d bytes, sha256 %s; manifest says %d bytes, %s)", name, res.size, res.sha256, m.Bytes, m.SHA256))
			}
		}
	}
	if manifest != nil {
		rep.Manifest = true
		var missing []string
		for name := range manifest.Shards {
			if !present[name] {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		for _, name := range missing {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: listed in manifest but missing", name))
		}
	}
	return rep, nil
}

// verifyShard parses a shard's directory, checks its structure, and reads
// the file once from start to end to hash it and check each member's local
// header and CRC-32.
func verifyShard(ctx context.Context, path string, crc bool) (*shardCheck, error) {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	dir, err := ReadDirectory(f, st.Size())
	if err != nil {
		return nil, err
	}
	res := &shardCheck{dir: dir, size: st.Size()}
	res.problems = structuralProblems(name, dir)

	order := make([]int, 0, len(dir.Entries))
	for i, e := range dir.Entries {
		if e.Method == methodStored && e.Flags&(flagEncrypted|flagStrongEnc) == 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		return dir.Entries[order[a]].HeaderOffset < dir.Entries[order[b]].HeaderOffset
	})
	sha := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(ctxReader{ctx, f}, sha), 4<<20)
	pos := int64(0)
	skip := func(to int64) error {
		n, err := br.Discard(int(to - pos))
		pos += int64(n)
		return err
	}
	for _, i := range order {
		e := dir.Entries[i]
		if e.HeaderOffset < pos {
			continue // overlapping member, already reported
		}
		if err := skip(e.HeaderOffset); err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: local header at offset %d unreadable (%v)", name, e.Name, e.HeaderOffset, err))
			break
		}
		var fixed [localLen]byte
		if _, err := io.ReadFull(br, fixed[:]); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: local header unreadable", name, e.Name))
			break
		}
		pos += localLen
		h, err := parseLocalHeader(fixed[:])
		if err != nil {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: no local header at offset %d", name, e.Name, e.HeaderOffset))
			continue
		}
		nameExtra := make([]byte, h.NameLen+h.ExtraLen)
		if _, err := io.ReadFull(br, nameExtra); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: local header unreadable", name, e.Name))
			break
		}
		pos += int64(len(nameExtra))
		if decodeName(nameExtra[:h.NameLen], h.Flags) != e.Name && !bytes.Equal(nameExtra[:h.NameLen], []byte(e.Name)) {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: local header name mismatch at offset %d", name, e.Name, e.HeaderOffset))
			continue
		}
		if h.Method != e.Method {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: local header disagrees with the central directory on compression method", name, e.Name))
			continue
		}
		if h.Flags&flagDataDesc != 0 {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: local header defers CRC and sizes to a data descriptor", name, e.Name))
		}
		if pos+e.Size > dir.Start {
			continue // reported as extending into the directory
		}
		if !crc {
			continue
		}
		c := crc32.NewIEEE()
		n, err := io.CopyN(c, br, e.Size)
		pos += n
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: payload unreadable after %d of %d bytes (%v)", name, e.Name, n, e.Size, err))
			break
		}
		if c.Sum32() != e.CRC32 {
			res.problems = append(res.problems, fmt.Sprintf("%s:%s: CRC mismatch", name, e.Name))
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return nil, err
	}
	res.sha256 = hex.EncodeToString(sha.Sum(nil))
	return res, nil
}

// quoteName shows a member name that is not a usable key so a reader can
// see it: quoted (control bytes, NUL and invalid UTF-8 escaped), and cut
// when long.
func quoteName(name string) string {
	if len(name) > 256 {
		name = name[:128] + "..." + name[len(name)-64:]
	}
	return strconv.Quote(name)
}
