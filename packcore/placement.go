// Placement and rollover: which shard a member goes into, and when the open
// shard is complete and the next one opens.

package packcore

import (
	"fmt"
	"os"
	"path/filepath"
)

// startGroup reports whether a member of group starts a new placement
// group, and if so closes the figures of the one before.
func (w *Writer) startGroup(group string) bool {
	if group == "" || group == w.group {
		return false
	}
	w.groupMax = max(w.groupMax, w.groupLen)
	w.groupMaxBytes = max(w.groupMaxBytes, w.groupBytes)
	w.groupLen, w.groupBytes = 0, 0
	return true
}

// countInGroup counts a member into the current group's figures.
func (w *Writer) countInGroup(group, key string, size int64) {
	if group != "" {
		w.group = group
		w.groupLen++
		w.groupBytes += memberBytes(key, size)
	}
}

// Replay records a member that a reused shard already holds, when a run
// resumes an interrupted one and skips the members it had written: the
// placement decisions after it are then the ones an uninterrupted run makes
// (they depend on the groups seen so far).
func (w *Writer) Replay(key string, size int64, group string) {
	w.startGroup(group)
	w.countInGroup(group, key, size)
}

// EndShard completes the open shard, if it holds a member, and waits until
// every finished shard is in place (OnShard called); the next member opens
// a new shard. A caller that must read a shard back before it adds more (as
// links to earlier members do) calls it.
func (w *Writer) EndShard() error {
	if w.closed {
		return ErrClosed
	}
	if w.cur != nil && w.cur.count > 0 {
		if err := w.finishShard(); err != nil {
			return err
		}
	}
	return w.settle()
}

// groupStartsShard says whether a member starting a new placement group
// opens a new shard (see WriterOptions.GroupFill).
func (w *Writer) groupStartsShard() bool {
	g := w.opts.GroupFill
	if g < 0 {
		return false
	}
	if w.groupMax > 1 && w.cur.count+int64(w.groupMax) > int64(w.opts.MaxMembers) {
		return true
	}
	p := w.cur.projected()
	if g > 0 {
		return float64(p) >= float64(w.opts.MaxPackBytes)*g
	}
	// Past half full, and twice the largest group so far would not fit: a
	// group is then cut only if it is over half a shard and more than
	// twice any group before it, and shards of small groups fill up.
	return 2*p >= w.opts.MaxPackBytes && p+2*w.groupMaxBytes > w.opts.MaxPackBytes
}

// memberBytes is about what a member adds to a shard: its local header,
// name and bytes, and its central directory entry.
func memberBytes(key string, size int64) int64 {
	return size + localLen + centralLen + 2*int64(len(key))
}

// place checks a member of size bytes and makes the current shard the one
// it goes into: the checks and placement Add and AddBytes share.
func (w *Writer) place(key string, size int64, group string) error {
	if w.closed {
		return ErrClosed
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.keyErr != nil {
		return w.keyErr
	}
	if err := w.collect(maxHashing); err != nil {
		return err
	}
	if err := ValidateKey(key); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("key %q: negative size %d", key, size)
	}
	loc, dup, err := w.keys.Get(key)
	if err != nil {
		return fmt.Errorf("pack %s: %w", w.dir, err)
	}
	if dup {
		return &KeyError{Key: key, Reason: "already added (in " + w.shards[loc.Shard] + ")", Err: ErrDuplicateKey}
	}
	startsGroup := w.startGroup(group)
	if startsGroup && w.cur != nil && w.cur.count > 0 && w.groupStartsShard() {
		if err := w.roll(); err != nil {
			return err
		}
	}
	if w.cur == nil || w.cur.count >= int64(w.opts.MaxMembers) ||
		(w.cur.count > 0 && w.cur.projectedWith(key, size) > w.opts.MaxPackBytes) {
		if w.cur != nil && !startsGroup && group != "" && w.groupIdx == w.cur.index {
			w.stats.GroupsSplit++
		}
		if err := w.roll(); err != nil {
			return err
		}
	}
	if startsGroup {
		w.group = group
		w.groupIdx = w.cur.index
	}
	w.countInGroup(group, key, size)
	return nil
}

// projected is the shard's size if it were closed now.
func (s *shardWriter) projected() int64 {
	cdSize := s.cdLen
	return s.off + cdSize + endRecordsLen(s.count, cdSize, s.off)
}

// projectedWith is the shard's exact size after adding one more member.
func (s *shardWriter) projectedWith(key string, size int64) int64 {
	n := int64(len(key))
	off := s.off + localLen + n + localExtraLen(size) + size
	cdSize := s.cdLen + centralLen + n + centralExtraLen(size, s.off)
	return off + cdSize + endRecordsLen(s.count+1, cdSize, off)
}

// roll completes the current shard, if any, and opens the next one.
func (w *Writer) roll() error {
	if w.cur != nil {
		if err := w.finishShard(); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("%s-%04d.zip", w.opts.Prefix, w.next)
	if _, err := os.Lstat(filepath.Join(w.dir, name)); err == nil {
		return fmt.Errorf("pack %s: %s already exists", w.dir, name)
	}
	f, err := os.CreateTemp(w.dir, "."+name+".*.tmp")
	if err != nil {
		return fmt.Errorf("pack %s: %w", w.dir, err)
	}
	w.cd.S = w.cd.S[:0] // the directory of the shard before is written or discarded
	w.cur = &shardWriter{f: f, tmp: f.Name(), name: name, index: w.next, sha: newHashPipe(!w.opts.NoManifest, f, w.hs), sync: newShardSync(f)}
	w.shards = append(w.shards, name)
	w.next++
	return nil
}
