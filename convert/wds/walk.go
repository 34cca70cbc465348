package wds

import (
	"archive/tar"
	"fmt"

	"github.com/bpconvert/bpconvert/packcore"
)

// itemKind says what becomes of a tar member.
type itemKind int

const (
	itemFile itemKind = iota // a regular member, packed
	itemLink                 // a link to a member packed earlier in the shard
	itemDir                  // a directory entry, skipped
	itemSkip                 // a pax global header, skipped
)

// item is a classified tar member.
type item struct {
	kind itemKind
	hdr  *tar.Header
	off  int64 // offset of its first header block, or -1
	key  string
	// target is the key whose bytes a link member holds (never itself a
	// link: chains are followed).
	target string
	size   int64
	// sample and field are its WebDataset sample key (with any shard
	// prefix) and field; inSample is false for names WebDataset skips.
	sample, field string
	inSample      bool
}

// walker classifies the members of the shards in order and checks what the
// conversion needs: safe, usable, unique keys; links to members packed
// before them; no devices or FIFOs. Inspect and Convert share it, so the
// plan's checks are the conversion's.
type walker struct {
	prefix bool
	table  bool
	// earlier reports whether a key was packed from an earlier shard (or
	// is waiting to be).
	earlier func(key string) bool

	shard     int
	shardName string
	stem      string
	// keys maps every key packed from the current shard to its size;
	// links maps link keys of the current shard to their target.
	keys  map[string]int64
	links map[string]string
}

// startShard resets the per-shard state.
// typeOldReg is the pre-POSIX type flag of a regular file (NUL), which old
// tar writers still emit.
const typeOldReg = '\x00'

func (w *walker) startShard(i int, src shardSource) {
	w.shard, w.shardName, w.stem = i, src.Name, src.Stem
	w.keys = map[string]int64{}
	w.links = map[string]string{}
}

func (w *walker) fail(it *item, format string, a ...any) *InputError {
	return inputErr(w.shardName, it.hdr.Name, it.off, format, a...)
}

// classify decides what becomes of one member and records it in the shard's
// state. The error is an *InputError naming shard, member and offset.
func (w *walker) classify(h *tar.Header, off int64) (item, error) {
	it := item{hdr: h, off: off}
	switch h.Typeflag {
	case tar.TypeDir:
		it.kind = itemDir
		return it, nil
	case tar.TypeXGlobalHeader:
		it.kind = itemSkip
		return it, nil
	case tar.TypeReg, typeOldReg, tar.TypeCont, tar.TypeGNUSparse:
		it.kind, it.size = itemFile, h.Size
	case tar.TypeLink, tar.TypeSymlink:
		it.kind = itemLink
	default:
		return it, w.fail(&it, "%s members cannot be converted", typeName(h.Typeflag))
	}
	prefix := ""
	if w.prefix {
		prefix = w.stem
	}
	key, err := memberKey(h.Name, prefix)
	if err != nil {
		return it, &InputError{Source: "wds", Row: -1, File: w.shardName, Member: h.Name, Offset: off, Err: &reasonError{err.Error(), packcore.ErrInvalidKey}}
	}
	it.key = key
	if _, dup := w.keys[key]; dup {
		return it, &InputError{Source: "wds", Row: -1, File: w.shardName, Member: h.Name, Offset: off,
			Err: &reasonError{fmt.Sprintf("duplicate key %q: the shard holds two members of that name", key), packcore.ErrDuplicateKey}}
	}
	if w.earlier != nil && w.earlier(key) {
		e := &InputError{Source: "wds", Row: -1, File: w.shardName, Member: h.Name, Offset: off,
			Err: &reasonError{fmt.Sprintf("duplicate key %q: an earlier shard holds a member of that name", key), packcore.ErrDuplicateKey}}
		if !w.prefix {
			e.Hint = HintShardPrefix
		}
		return it, e
	}
	if it.kind == itemLink {
		if err := w.resolveLink(&it, prefix); err != nil {
			return it, err
		}
		w.links[key] = it.target
	}
	w.keys[key] = it.size

	if sample, field, ok := SplitSample(StripDot(h.Name)); ok && field != "" {
		if field == ColumnKey || field == ColumnShard {
			if w.table {
				return it, w.fail(&it, "field %q would clash with the samples table's own column", field)
			}
		} else {
			if prefix != "" {
				sample = prefix + "/" + sample
			}
			it.sample, it.field, it.inSample = sample, field, true
		}
	}
	return it, nil
}

// resolveLink finds the member a link's bytes come from: for a hard link
// the member of the link name, for a symbolic link the member its target
// names relative to the link's directory. Either must have been packed
// earlier in the same shard.
func (w *walker) resolveLink(it *item, prefix string) error {
	h := it.hdr
	var name, what string
	if h.Typeflag == tar.TypeLink {
		name, what = StripDot(h.Linkname), "hard link"
		if name == "" {
			return w.fail(it, "hard link without a target")
		}
	} else {
		var ok bool
		what = "symbolic link"
		if name, ok = symlinkTarget(h.Name, h.Linkname); !ok {
			return w.fail(it, "symbolic link to %q points outside the shard: only links to members converted before them can be converted", h.Linkname)
		}
	}
	target, err := memberKey(name, prefix)
	if err != nil {
		return w.fail(it, "%s to %q: %v", what, h.Linkname, err)
	}
	size, ok := w.keys[target]
	if !ok {
		return w.fail(it, "%s to %q, which is not a regular member earlier in this shard: only links to members converted before them can be converted", what, h.Linkname)
	}
	if t, ok := w.links[target]; ok {
		target = t
	}
	it.target, it.size = target, size
	return nil
}

// typeName names a tar member type for errors.
func typeName(t byte) string {
	switch t {
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "FIFO"
	case 'V':
		return "volume label"
	case 'M':
		return "multi-volume continuation"
	}
	return fmt.Sprintf("type %q", t)
}

// reasonError is a reason in our own words that still matches a sentinel
// with errors.Is.
type reasonError struct {
	msg string
	is  error
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.is }
