package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/stage"
	flag "github.com/spf13/pflag"
)

type unpackResult struct {
	Dst     string `json:"dst"`
	Members int    `json:"members"`
	Bytes   int64  `json:"bytes"`
	// Warnings name keys that differ only in case or Unicode normalization.
	Warnings []string `json:"warnings"`
	// fetched says what reading an s3:// pack took.
	*fetched
}

func cmdUnpack(e *env, fset *flag.FlagSet) runFunc {
	return func(ctx context.Context, pos []string) (any, error) {
		d, err := convert.ParseDest(pos[1], "")
		if err != nil {
			return nil, err
		}
		if d.Remote() {
			return nil, &usageError{msg: fmt.Sprintf("unpack: %s: unpack writes files into a directory on this machine", objstore.RedactLocation(pos[1])),
				hint: "unpack into a local directory; bpconvert pack SRC s3://BUCKET/PREFIX writes a pack into a bucket"}
		}
		if err := checkDestParent("unpack", d, pos[1]); err != nil {
			return nil, err
		}
		loc, err := openPackLoc(ctx, "unpack", pos[0])
		if err != nil {
			return nil, err
		}
		set, err := loc.openSet(ctx, "", packcore.SetOptions{RefBase: "."})
		if err != nil {
			return nil, err
		}
		defer set.Close()
		// Members are extracted by key: a key in two shards would be two files
		// of one name.
		if err := set.Unique(); err != nil {
			return nil, &inputError{err: fmt.Errorf("unpack: %s: %w", pos[0], err)}
		}
		// Check every key before writing anything: each must be a safe relative
		// path, and no key may be a directory of another. The set's index is
		// the only index of keys: no list of members is built (for 200,000
		// members, lists and maps of them were most of the run's memory).
		var count, total int64
		names := make([]string, 0, set.Len())
		for m := range set.Members() {
			if err := packcore.ValidateKey(m.Key); err != nil {
				return nil, &inputError{err: fmt.Errorf("unpack: %s: refusing to extract unsafe member: %w", m.Shard, err)}
			}
			names = append(names, m.Key)
			count++
			total += m.Size
		}
		// Keys that differ only in case or normalization are distinct files
		// here, but not on macOS or Windows: say so before extracting.
		warnings := []string{}
		twinOf := map[string][]string{}
		for _, tw := range packcore.FindTwins(names) {
			warnings = append(warnings, tw.String())
			e.infof("bpconvert: warning: unpack: %s", tw)
			for _, k := range tw.Keys {
				twinOf[k] = tw.Keys
			}
		}
		for m := range set.Members() {
			for d := filepath.Dir(m.Key); d != "."; d = filepath.Dir(d) {
				if set.Has(filepath.ToSlash(d)) {
					return nil, &inputError{err: fmt.Errorf("unpack: member %q collides with member %q, which would have to be a directory", convert.Cut(d), convert.Cut(m.Key))}
				}
			}
		}
		absDst := d.Location()
		st, err := stage.Begin(absDst)
		if err != nil {
			return nil, err
		}
		defer st.Abort()
		prog := e.newProgress("unpack")
		prog.SetTotal(count, total)
		one := func(m packcore.Member) error {
			target := filepath.Join(st.Dir, filepath.FromSlash(m.Key))
			if !strings.HasPrefix(target, st.Dir+string(filepath.Separator)) {
				return &inputError{err: fmt.Errorf("unpack: member escapes destination: %q", convert.Cut(m.Key))}
			}
			if err := extract(set, m, target); err != nil {
				switch {
				case errors.Is(err, fs.ErrExist):
					return &inputError{err: fmt.Errorf("unpack: %s:%s: collides with a file already extracted: this file system does not tell apart %s", m.Shard, convert.Cut(m.Key), strings.Join(quoteAll(twinOf[m.Key]), " and ")),
						hint: "unpack onto a case-sensitive file system that does not normalize names (Linux ext4, for example)"}
				case errors.Is(err, packcore.ErrFormat):
					return fmt.Errorf("unpack: %w", err) // names shard and member already
				}
				return fmt.Errorf("unpack: %s:%s: %w", m.Shard, convert.Cut(m.Key), err)
			}
			return nil
		}
		if !loc.tree.Remote() {
			for m := range set.Members() {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if err := one(m); err != nil {
					return nil, err
				}
				prog.Add(1, m.Size)
			}
		} else if err := extractConcurrently(ctx, set, remoteUnpackWorkers, one, prog); err != nil {
			return nil, err
		}
		if err := st.Commit(); err != nil {
			return nil, err
		}
		e.infof("unpacked %s blobs into %s", plan.Thousands(count), pos[1])
		return unpackResult{Dst: absDst, Members: int(count), Bytes: total, Warnings: warnings, fetched: loc.fetched()}, nil
	}
}

// remoteUnpackWorkers is how many members an unpack from object storage
// fetches at once: each is a request of its own, so they overlap.
const remoteUnpackWorkers = 8

// extractConcurrently runs one for every member of set on workers
// goroutines. On failure it stops handing out members and returns the error
// of the first member, in set order, that failed.
func extractConcurrently(ctx context.Context, set *packcore.Set, workers int, one func(packcore.Member) error, prog progress.Counter) error {
	type job struct {
		i int
		m packcore.Member
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan job)
	var (
		mu       sync.Mutex
		firstI   = -1
		firstErr error
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				err := one(j.m)
				mu.Lock()
				if err != nil && (firstI < 0 || j.i < firstI) {
					firstI, firstErr = j.i, err
					cancel()
				} else if err == nil {
					prog.Add(1, j.m.Size)
				}
				mu.Unlock()
			}
		}()
	}
	i := 0
feed:
	for m := range set.Members() {
		select {
		case jobs <- job{i, m}:
			i++
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

func quoteAll(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strconv.Quote(convert.Cut(k))
	}
	return out
}

// extract writes one member to target, checking its CRC-32 as the bytes
// pass; a mismatch is an error wrapping packcore.ErrChecksum.
func extract(set *packcore.Set, m packcore.Member, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	r, err := set.OpenChecked(packcore.FormatRef(m.Key, m.Shard))
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
