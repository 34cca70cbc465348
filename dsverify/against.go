package dsverify

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/srctree"
)

// against compares every payload of the source with the member that holds
// it: with the first of the converters' comparisons that claims the
// dataset and source, or else as the packs, or the tables blobpack 0.2.0
// wrote, were made from it.
func (v *Check) against(src string) error {
	if _, _, err := v.source(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		// a store that refused or failed (a missing source, or a shard
		// list, is for each comparison to say in its words)
		return fmt.Errorf("--against %s: %w", src, err)
	}
	for _, c := range v.opts.Comparers {
		if !c.IsZero() && c.Claims(v, src) {
			return c.Compare(v, src)
		}
	}
	switch {
	case len(v.plainLance) > 0 && !v.out.t.Remote() && v.sourceIsLance(false):
		sort.Strings(v.plainLance)
		return v.againstBlobpackLance(src, v.plainLance)
	case len(v.rep.Tables) == 0 && len(v.packDirs) > 0:
		return v.againstPacks(src)
	}
	bp, err := v.readBlobpackParquet()
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	if bp != nil {
		return v.againstBlobpackParquet(src, bp)
	}
	return errors.New("--against: " + notComparable(v, src))
}

// notComparable says why the dataset cannot be compared with src.
func notComparable(v *Check, src string) string {
	switch {
	case len(v.plainLance) > 0:
		return fmt.Sprintf("the dataset's Lance table %s was not written by bpconvert convert-lance and %s is no Lance dataset to compare it with (a dataset blobpack 0.2.0 converted is compared with its Lance source)", v.plainLance[0], src)
	}
	return "the dataset has no samples.parquet (convert-wds), no table rewritten by convert-parquet, no Lance table written by convert-lance, no extraction.json (blobpack 0.2.0 convert-parquet) and no Lance table without a bpconvert record (blobpack 0.2.0 convert-lance), and the source is no LeRobot dataset; comparing with the source is supported for those"
}

// chunk is the size of the pieces compared.
const chunk = 256 << 10

// sameBytes compares a reader with a pack member, streaming both in
// parallel. It returns the bytes compared and a reason when they differ
// ("" when equal).
// readableMember returns why the member key of set cannot be read whole
// with its checksum, "" when it can.
func readableMember(set *packcore.Set, key string) string {
	if _, err := set.Stat(key); err != nil {
		return "missing from the pack"
	}
	cr, err := set.OpenChecked(key)
	if err != nil {
		return fmt.Sprintf("member unreadable: %v", err)
	}
	defer cr.Close()
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return fmt.Sprintf("member unreadable: %v", err)
	}
	return ""
}

func sameBytes(src io.Reader, set *packcore.Set, key string) (int64, string, error) {
	m, err := set.Stat(key)
	if err != nil {
		return 0, "missing from the pack", nil
	}
	cr, err := set.OpenChecked(key)
	if err != nil {
		return 0, fmt.Sprintf("member unreadable: %v", err), nil
	}
	defer cr.Close()
	// The member is read on its own goroutine, a piece ahead, while the
	// source is read here.
	mr, pw := io.Pipe()
	defer mr.Close()
	go func() {
		_, err := io.CopyBuffer(pw, struct{ io.Reader }{cr}, make([]byte, chunk))
		pw.CloseWithError(err)
	}()
	a, b := make([]byte, chunk), make([]byte, chunk)
	var n int64
	for {
		na, ea := io.ReadFull(src, a)
		nb, eb := io.ReadFull(mr, b)
		if ea != nil && ea != io.EOF && ea != io.ErrUnexpectedEOF {
			return n, "", fmt.Errorf("reading the source: %w", ea)
		}
		if eb != nil && eb != io.EOF && eb != io.ErrUnexpectedEOF {
			return n, fmt.Sprintf("member unreadable: %v", eb), nil
		}
		if !bytes.Equal(a[:na], b[:nb]) {
			off := n
			for i := 0; i < min(na, nb) && a[i] == b[i]; i++ {
				off++
			}
			return n, fmt.Sprintf("differs from the source at byte %d (source %s, member %d bytes)", off, sizeText(n, na, ea), m.Size), nil
		}
		n += int64(na)
		if ea != nil || na < chunk {
			if eb == nil && nb == chunk {
				// the member may go on: read one more byte
				var one [1]byte
				if k, _ := mr.Read(one[:]); k > 0 {
					return n, fmt.Sprintf("member holds more bytes than the source (%d)", n), nil
				}
			}
			return n, "", nil
		}
	}
}

func sizeText(n int64, na int, err error) string {
	if err != nil {
		return fmt.Sprintf("%d bytes", n+int64(na))
	}
	return "longer"
}

// compared records one comparison.
func (v *Check) compared(a *Against, n int64, reason string, p Problem) {
	a.Payloads++
	a.Bytes += n
	if reason != "" {
		a.Mismatches++
		p.Reason = reason
		v.problem(p)
	}
}

// againstShards compares the members of the shards of src, already
// listed, with the pack members s names, collecting the key of every file
// or link member in keys.
func (v *Check) againstShards(src string, files []treeFile, s Shards, keys map[string]struct{}) error {
	base := s.PackBase
	if base == "" {
		base = "media"
	}
	e := v.set(base)
	if e.err != nil {
		return fmt.Errorf("--against: pack directory %s: %w", base, e.err)
	}
	a := &Against{Source: src, Format: "webdataset"}
	v.rep.Against = a
	for _, f := range files {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		if err := v.againstShard(f, e.set, a, s, keys); err != nil {
			return err
		}
	}
	return nil
}

// source opens the source compared with (Options.Against) once: a
// directory or prefix, or a single file or object (file its name in the
// tree). A location in a bucket that names nothing is an empty tree; a
// shard list (braces, "::") is no location: opening it gives an error
// matching fs.ErrNotExist, or an empty tree.
func (v *Check) source() (p place, file string, err error) {
	if !v.srcOpened {
		v.src, v.srcFile, v.srcErr = openPlace(v.ctx, v.opts.Against, v.storeOptions())
		v.srcOpened = true
	}
	return v.src, v.srcFile, v.srcErr
}

// isShardList reports whether src, naming nothing as it is, is a shard
// list: brace patterns, or names joined by "::".
func isShardList(src string) bool {
	return strings.ContainsAny(src, "{}") || strings.Contains(src, "::")
}

// sourceShards lists the tar shards src names: a directory's or prefix's
// files named like shards (directly inside it, not hidden, in name order),
// one file, or a shard list; none is an error.
func (v *Check) sourceShards(src string) ([]treeFile, error) {
	p, name, err := v.source()
	var files []treeFile
	switch {
	case err == nil && name != "":
		files = []treeFile{p.file(name)}
	case err == nil && !p.t.Empty():
		files, err = tarsIn(v.ctx, p)
	case !isShardList(src):
		if err == nil {
			err = fmt.Errorf("%s: %w: no object and no tar shards there", src, fs.ErrNotExist)
		}
		return nil, err
	default:
		files, err = v.shardList(src)
	}
	if err == nil && len(files) == 0 {
		err = errors.New("no tar shards")
	}
	return files, err
}

// tarsIn lists the files directly inside the root of p that are named like
// tar shards (not hidden; a local link followed, to a file), in name order.
func tarsIn(ctx context.Context, p place) ([]treeFile, error) {
	var out []treeFile
	err := p.t.Walk(ctx, "", func(e srctree.Entry) error {
		if e.Name == "." {
			return nil
		}
		if e.Mode.IsDir() {
			return fs.SkipDir
		}
		if strings.Contains(e.Name, "/") || strings.HasPrefix(e.Name, ".") || !isTarName(e.Name) {
			return nil
		}
		if e.Mode&fs.ModeSymlink != 0 {
			if d, err := p.t.IsDir(e.Name); err == nil && d {
				return nil // a link to a directory
			}
		}
		out = append(out, p.file(e.Name))
		return nil
	})
	return out, err
}

// shardList opens every shard a shard list names: each a file or object
// (or, in a bucket, a prefix whose shards are taken as tarsIn takes
// them). Names in one directory are looked up in the tree opened for the
// first of them.
func (v *Check) shardList(src string) ([]treeFile, error) {
	names, err := expandShardList(src)
	if err != nil {
		return nil, err
	}
	var out []treeFile
	var dir place // the directory of the last single file opened
	for _, n := range names {
		if dir.t != nil {
			if rest, ok := strings.CutPrefix(n, strings.TrimSuffix(dir.name, "/")+"/"); ok && rest != "" && !strings.Contains(rest, "/") {
				_, err := dir.t.Stat(rest)
				if err == nil || errors.Is(err, srcfile.ErrNotRegular) && !dir.file(rest).isDir() {
					out = append(out, treeFile{t: dir.t, rel: rest, name: n})
					continue
				}
				if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, srcfile.ErrNotRegular) {
					return nil, &fs.PathError{Op: "stat", Path: n, Err: srcfile.Cause(err)}
				}
			}
		}
		p, name, err := openPlace(v.ctx, n, v.storeOptions())
		switch {
		case err != nil:
			return nil, err
		case name != "":
			dir = p
			out = append(out, treeFile{t: p.t, rel: name, name: n})
		case p.t.Empty():
			return nil, fmt.Errorf("%s: %w: no object and no tar shards there", n, fs.ErrNotExist)
		case !p.t.Remote():
			return nil, fmt.Errorf("%s: is a directory, not a shard", n)
		default:
			more, err := tarsIn(v.ctx, p)
			if err != nil {
				return nil, err
			}
			if len(more) == 0 {
				return nil, fmt.Errorf("%s: %w: no object and no tar shards there", n, fs.ErrNotExist)
			}
			out = append(out, more...)
		}
	}
	return out, nil
}

func (v *Check) againstShard(f treeFile, set *packcore.Set, a *Against, s Shards, keys map[string]struct{}) error {
	name := f.name
	// A tar in object storage is streamed, reads fetched ahead.
	seq, err := f.stream(v.ctx)
	if err != nil {
		return fmt.Errorf("--against: %w", err)
	}
	defer seq.Close()
	r, comp, release, err := openTar(bufio.NewReaderSize(seq, 1<<20))
	if err != nil {
		return fmt.Errorf("--against: %s: corrupt %s stream: %w", name, comp, err)
	}
	defer release()
	prefix := ""
	if s.Prefixed {
		prefix = tarStem(name) + "/"
	}
	tr := tar.NewReader(r)
	for {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("--against: %s: %w", name, err)
		}
		p := Problem{Table: name, Row: -1}
		member := fmt.Sprintf("member %q: ", h.Name)
		rel := memberPath(h.Name)
		key := prefix + rel
		switch h.Typeflag {
		case tar.TypeReg, '\x00', tar.TypeGNUSparse, tar.TypeCont, tar.TypeLink, tar.TypeSymlink:
			keys[key] = struct{}{}
		}
		switch h.Typeflag {
		case tar.TypeReg, '\x00', tar.TypeGNUSparse, tar.TypeCont:
		case tar.TypeLink, tar.TypeSymlink:
			target := memberPath(h.Linkname)
			if h.Typeflag == tar.TypeSymlink {
				target = path.Join(path.Dir(rel), h.Linkname)
			}
			// A link's member holds its target's bytes.
			tr, err := set.OpenChecked(prefix + target)
			if err != nil {
				v.compared(a, 0, member+fmt.Sprintf("link target %q is missing from the pack", prefix+target), p)
				continue
			}
			n, reason, err := sameBytes(tr, set, key)
			tr.Close()
			if err != nil {
				return err
			}
			if reason != "" {
				reason = member + fmt.Sprintf("pack member %q (a link to %q): %s", key, prefix+target, reason)
			}
			v.compared(a, n, reason, p)
			continue
		default:
			continue
		}
		if s.Inline != nil {
			if inline := s.Inline(prefix, rel); inline != nil {
				b, err := io.ReadAll(tr)
				if err != nil {
					return fmt.Errorf("--against: %s: member %q: %w", name, h.Name, err)
				}
				a.Inline++
				reason := inline(b)
				if reason != "" {
					reason = member + reason
				}
				v.compared(a, int64(len(b)), reason, p)
				continue
			}
		}
		n, reason, err := sameBytes(tr, set, key)
		if err != nil {
			return fmt.Errorf("--against: %s: member %q: %w", name, h.Name, err)
		}
		if reason != "" {
			reason = member + fmt.Sprintf("pack member %q: %s", key, reason)
		}
		v.compared(a, n, reason, p)
	}
}
