package wds

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
)

// spoolName is the samples spool inside the staging directory.
const spoolName = ".samples.spool"

// pendingLink is a link member whose target's pack shard is still open.
type pendingLink struct {
	key, target string
	size        int64
	shard       string // tar shard, for errors
	member      string
}

// converter holds one run's state.
type converter struct {
	opts     Options
	pc       progress.Counter
	mediaDir string
	names    []string // shard names for messages, by index
	// tableNames are the shards' __shard__ values, by index.
	tableNames []string

	w    convert.Packer
	walk *walker
	smp  *sampler

	completed   map[string]bool // pack shards renamed into place
	newShard    bool            // a pack shard completed since the last flush
	pending     []pendingLink
	pendingKeys map[string]bool
	sets        map[string]*packcore.Set // completed pack shards opened for links
	all         *packcore.Set            // the whole pack, for inline links
	inl         *inlineStore             // inline members, which are not packed

	res        Result
	appleDoubl int64
}

// Convert converts the shards that opts.src names into opts.dst: every
// member into blob packs under DST/media, and, unless opts.NoTable, one
// table row per sample into DST/samples.parquet. It reads each shard once,
// sequentially (standard input included), and streams every member into
// the pack writer. All output is written into a staging directory beside
// DST that is renamed into place only when every shard converted; on any
// error, or when ctx is cancelled, DST is left untouched and the staging
// directory removed (a killed run's is removed by the next run).
//
// Errors that blame the shards are *InputError values wrapping
// ErrInvalidInput, with a hint where one helps (see Hint). pc receives the
// shard bytes read (compressed, as on disk) and members converted; it may
// be nil.
func convertShards(ctx context.Context, opts Options, pc progress.Counter) (*Result, error) {
	opts = opts.withDefaults()
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.dst == nil {
		return nil, errors.New("wds: no destination given")
	}
	pc = progress.OrNop(pc)
	opts, err := opts.opened(ctx)
	if err != nil {
		return nil, err
	}
	srcs, err := resolveSources(ctx, opts)
	if err != nil {
		return nil, err
	}
	c := &converter{
		opts:        opts,
		pc:          pc,
		completed:   map[string]bool{},
		pendingKeys: map[string]bool{},
		sets:        map[string]*packcore.Set{},
	}
	out, err := convert.Begin(ctx, opts.dst, convert.OutputOptions{
		Pack:     opts.PackOptions,
		Sources:  []convert.Source{opts.Source},
		Base:     opts.Base,
		OnShard:  c.onShard,
		Progress: pc,
	})
	if err != nil {
		return nil, err
	}
	defer out.Abort()
	c.w, c.mediaDir = out, out.Path(MediaDir)
	for _, s := range out.Pack.Completed() {
		c.completed[s.Name] = true // reused shards of an interrupted run
	}
	c.res = Result{Source: opts.src, Dest: out.Final}
	defer c.closeSets()
	for _, s := range srcs.Shards {
		name := s.Name
		if s.Path == "" {
			name = s.Stem
		}
		c.names = append(c.names, name)
	}
	c.tableNames = partTableNames(ctx, opts, srcs.Shards)
	var spool *spoolWriter
	if !opts.NoTable {
		if spool, err = createSpool(out.Path(spoolName)); err != nil {
			return nil, err
		}
		defer spool.Close()
		if len(opts.Inline) > 0 {
			if c.inl, err = createInlineStore(out.Path(inlineName)); err != nil {
				return nil, err
			}
			defer c.inl.Close()
		}
	}
	c.smp = newSampler(!opts.NoTable, c.names, spool, out.Dir)
	defer c.smp.close()
	c.walk = &walker{prefix: opts.ShardPrefix, table: !opts.NoTable, earlier: func(k string) bool {
		_, _, ok := c.w.Lookup(k)
		return ok || c.pendingKeys[k] || (c.inl != nil && c.inl.has(k))
	}}

	pc.SetTotal(-1, srcs.Bytes)
	for i, src := range srcs.Shards {
		if err := c.shard(ctx, i, src); err != nil {
			return nil, err
		}
	}
	if err := c.flushLinks(true); err != nil {
		return nil, err
	}
	c.smp.close() // every sample is spooled: its memory goes before the table's
	c.res.Pack, err = out.ClosePack()
	if err != nil {
		return nil, err
	}
	if spool != nil {
		pc.Milestone("writing " + TableName)
		rows, err := spool.finish()
		if err != nil {
			return nil, fmt.Errorf("wds: samples spool: %w", err)
		}
		tablePath := out.Path(TableName)
		if opts.Base != nil {
			tablePath = out.Path(newRowsName)
		}
		n, err := writeTable(tablePath, rows, tableSpec{
			fields:  c.smp.fields,
			shards:  c.tableNames,
			record:  TableRecord{SourceFormat: "webdataset", PackBase: MediaDir, Inline: append([]string{}, opts.Inline...), ShardPrefix: opts.ShardPrefix},
			resolve: c.resolveCell,
			mem:     opts.mem,
		})
		if err != nil {
			return nil, fmt.Errorf("wds: %s: %w", TableName, err)
		}
		if opts.Base != nil {
			if n, err = appendTable(ctx, opts.Base, tablePath, out.Path(TableName), opts.mem); err != nil {
				return nil, fmt.Errorf("wds: %s: %w", TableName, err)
			}
		}
		spool.Close()
		c.inl.Close()
		c.res.Table = TableName
		c.res.Samples = n
	} else {
		c.res.Samples = c.smp.samples
	}
	c.res.Fields = append([]string{}, c.smp.fields...)
	slices.Sort(c.res.Fields)
	c.res.Warnings = c.warnings()
	c.closeSets()
	if _, err = out.Commit(); err != nil {
		return nil, err
	}
	r := &c.res
	r.summary = out.Summary(plan.Summary{
		Status: plan.StatusOK,
		Format: "WebDataset",
		Source: r.Source,
		Counts: plan.Counts{
			{Name: "tar shards", N: int64(r.Shards)},
			{Name: "members", N: r.Members},
			{Name: "links", N: r.Links},
			{Name: "inline", N: r.Inline},
			{Name: "skipped dirs", N: r.Dirs},
			{Name: "samples", N: r.Samples},
		},
		Warnings: append([]string{}, r.Warnings...),
	})
	return r, nil
}

// shard converts one tar shard.
func (c *converter) shard(ctx context.Context, i int, src shardSource) error {
	s, err := openShard(ctx, src, c.opts.Stdin, false)
	if err != nil {
		return err
	}
	defer s.Close()
	c.walk.startShard(i, src)
	var members, lastRaw int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, off, err := s.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		it, err := c.walk.classify(h, off)
		if err != nil {
			return err
		}
		var n int64
		switch it.kind {
		case itemDir:
			c.res.Dirs++
		case itemFile:
			if err := c.addFile(s, i, &it); err != nil {
				return err
			}
			n = 1
		case itemLink:
			if err := c.addLink(i, &it); err != nil {
				return err
			}
			n = 1
		}
		members += n
		c.pc.Add(n, s.raw.n-lastRaw)
		lastRaw = s.raw.n
	}
	if err := s.finish(); err != nil {
		return err
	}
	c.pc.Add(0, s.raw.n-lastRaw)
	if err := c.smp.endShard(); err != nil {
		return err
	}
	c.res.Shards++
	c.pc.Milestone(fmt.Sprintf("read %s: %s", src.Name, plan.CountText(members, "members")))
	return nil
}

// recordingReader remembers the first read error other than io.EOF, so an
// error from the pack writer can be told apart from one of the source.
type recordingReader struct {
	r   io.Reader
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// inlined reports whether the item's content goes into the table.
func (c *converter) inlined(it *item) bool {
	return it.inSample && !c.opts.NoTable && c.opts.inline(it.field)
}

// group is a member's placement group: its sample, so that a sample's
// members share a shard.
func (c *converter) group(it *item) string {
	if !it.inSample {
		return ""
	}
	return it.sample
}

// addFile streams a regular member into the pack and into its sample.
func (c *converter) addFile(s *shardStream, shard int, it *item) error {
	h := it.hdr
	if c.inlined(it) {
		return c.addInline(s, shard, it)
	}
	src := &recordingReader{r: s.tr}
	if _, err := c.w.Add(it.key, src, h.Size, c.group(it)); err != nil {
		switch {
		case src.err != nil:
			return s.payloadError(h.Name, src.err)
		case errors.Is(err, packcore.ErrSizeMismatch):
			return s.payloadError(h.Name, io.ErrUnexpectedEOF)
		case errors.Is(err, packcore.ErrInvalidKey), errors.Is(err, packcore.ErrDuplicateKey):
			return &InputError{Source: "wds", Row: -1, File: s.src.Name, Member: h.Name, Offset: it.off, Err: err}
		}
		return fmt.Errorf("wds: %s: member %q: %w", s.src.Name, h.Name, err)
	}
	c.res.Members++
	if strings.HasPrefix(path.Base(it.key), "._") {
		c.appleDoubl++
	}
	if !it.inSample {
		c.res.Outside++
	} else {
		if err := c.smp.add(shard, h.Name, it.off, it.sample, it.field, cellRef, it.key); err != nil {
			return err
		}
	}
	if c.newShard && len(c.pending) > 0 {
		return c.flushLinks(false)
	}
	return nil
}

// addInline stores an inline field's member in the table only: its text
// goes into its sample's cell, and its bytes into the inline store for links
// that name it. It is not packed.
func (c *converter) addInline(s *shardStream, shard int, it *item) error {
	h := it.hdr
	if h.Size > c.opts.InlineMax {
		return c.walk.fail(it, "field %q is stored inline, but this member holds %s (the limit is %s)",
			it.field, plan.HumanBytes(h.Size), plan.HumanBytes(c.opts.InlineMax))
	}
	b := make([]byte, h.Size)
	if _, err := io.ReadFull(s.tr, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return s.payloadError(h.Name, err)
	}
	if !utf8.Valid(b) {
		return c.walk.fail(it, "field %q is stored inline, but this member is not UTF-8 text", it.field)
	}
	if err := c.inl.put(it.key, b); err != nil {
		return err
	}
	c.res.Members++
	c.res.Inline++
	return c.smp.add(shard, h.Name, it.off, it.sample, it.field, cellInline, string(b))
}

// addLink queues a link member: its bytes are the target's, copied from the
// pack once the target's pack shard is complete. A link to an inline member
// takes its bytes from the inline store; an inline link is not packed (its
// cell is its target's text).
func (c *converter) addLink(shard int, it *item) error {
	inline := c.inlined(it)
	if inline && it.size > c.opts.InlineMax {
		return c.walk.fail(it, "field %q is stored inline, but this member holds %s (the limit is %s)",
			it.field, plan.HumanBytes(it.size), plan.HumanBytes(c.opts.InlineMax))
	}
	var targetBytes []byte
	if c.inl != nil {
		b, ok, err := c.inl.get(it.target)
		if err != nil {
			return err
		}
		if ok {
			targetBytes = b
		}
	}
	if inline {
		c.inl.mark(it.key)
		c.res.Links++
		c.res.Inline++
		if targetBytes != nil {
			return c.smp.add(shard, it.hdr.Name, it.off, it.sample, it.field, cellInline, string(targetBytes))
		}
		// The target is packed: its text is read back when the table is written.
		return c.smp.add(shard, it.hdr.Name, it.off, it.sample, it.field, cellInlineKey, it.target)
	}
	if targetBytes != nil {
		if _, err := c.w.Add(it.key, bytes.NewReader(targetBytes), int64(len(targetBytes)), c.group(it)); err != nil {
			return fmt.Errorf("wds: %s: member %q: copying the bytes of %q: %w", c.walk.shardName, it.hdr.Name, it.target, err)
		}
		c.res.Links++
		c.res.linkPaths[0]++
		if !it.inSample {
			c.res.Outside++
			return nil
		}
		return c.smp.add(shard, it.hdr.Name, it.off, it.sample, it.field, cellRef, it.key)
	}
	p := pendingLink{key: it.key, target: it.target, size: it.size, shard: c.walk.shardName, member: it.hdr.Name}
	if sh, err := c.targetShard(p); err != nil {
		return err
	} else if c.completed[sh] {
		if err := c.copyLink(p, sh, ""); err != nil {
			return err
		}
		c.res.linkPaths[0]++
	} else {
		c.pending = append(c.pending, p)
		c.pendingKeys[it.key] = true
	}
	c.res.Links++
	if !it.inSample {
		c.res.Outside++
	} else {
		if err := c.smp.add(shard, it.hdr.Name, it.off, it.sample, it.field, cellRef, it.key); err != nil {
			return err
		}
	}
	return nil
}

// onShard is called by the pack writer when a pack shard is complete.
func (c *converter) onShard(info packcore.ShardInfo) {
	c.completed[info.Name] = true
	c.newShard = true
}

// flushLinks adds the queued links whose target sits in a completed pack
// shard. With final set it adds all of them: before the first whose target
// is in the open shard, that shard is completed, so the link's bytes can be
// read back from it.
func (c *converter) flushLinks(final bool) error {
	c.newShard = false
	keep := c.pending[:0]
	for _, p := range c.pending {
		shard, err := c.targetShard(p)
		if err != nil {
			return err
		}
		if !c.completed[shard] {
			if !final {
				keep = append(keep, p)
				continue
			}
			// The target is in the open shard: complete it, so its
			// bytes can be read back.
			if err := c.w.EndShard(); err != nil {
				return err
			}
		}
		if err := c.copyLink(p, shard, ""); err != nil {
			return err
		}
		delete(c.pendingKeys, p.key)
		if final {
			c.res.linkPaths[2]++
		} else {
			c.res.linkPaths[1]++
		}
	}
	clear(c.pending[len(keep):])
	c.pending = keep
	return nil
}

// targetShard returns the name of the pack shard that holds a link's
// target.
func (c *converter) targetShard(p pendingLink) (string, error) {
	ref, _, ok := c.w.Lookup(p.target)
	if !ok {
		return "", fmt.Errorf("wds: %s: member %q: link target %q is not in the pack", p.shard, p.member, p.target)
	}
	_, shardPath, err := packcore.ParseRef(ref)
	if err != nil {
		return "", err
	}
	return path.Base(shardPath), nil
}

// copyLink adds a link member with its target's bytes, read from the pack
// shard that holds them.
func (c *converter) copyLink(p pendingLink, shard, group string) error {
	lr := &linkReader{c: c, target: p.target, shard: shard}
	if _, err := c.w.Add(p.key, lr, p.size, group); err != nil {
		return fmt.Errorf("wds: %s: member %q: copying the bytes of %q: %w", p.shard, p.member, p.target, err)
	}
	return nil
}

// linkReader reads a link target's bytes back from its completed pack
// shard, opening it on the first read: by then the writer has decided
// which shard the link goes into, and completed the target's.
type linkReader struct {
	c             *converter
	target, shard string
	r             io.Reader
}

func (l *linkReader) Read(p []byte) (int, error) {
	if l.r == nil {
		if !l.c.completed[l.shard] {
			return 0, fmt.Errorf("pack shard %s, which holds %q, is not complete", l.shard, l.target)
		}
		set := l.c.sets[l.shard]
		if set == nil {
			var err error
			if set, err = packcore.OpenSet(filepath.Join(l.c.mediaDir, l.shard), packcore.SetOptions{}); err != nil {
				return 0, err
			}
			l.c.sets[l.shard] = set
		}
		sr, err := set.Open(l.target)
		if err != nil {
			return 0, err
		}
		l.r = sr
	}
	return l.r.Read(p)
}

// resolveCell returns a spooled cell's table value once the pack is closed:
// a reference, or an inline link's content read back from the pack.
func (c *converter) resolveCell(cl cell) (string, error) {
	switch cl.kind {
	case cellRef:
		ref, _, ok := c.w.Lookup(cl.value)
		if !ok {
			return "", fmt.Errorf("member %q is not in the pack", cl.value)
		}
		return ref, nil
	case cellInlineKey:
		if c.all == nil {
			set, err := packcore.OpenSet(c.mediaDir, packcore.SetOptions{})
			if err != nil {
				return "", err
			}
			c.all = set
		}
		b, err := c.all.Read(cl.value)
		if err != nil {
			return "", err
		}
		if !utf8.Valid(b) {
			return "", &InputError{Source: "wds", Row: -1, Offset: -1, Err: fmt.Errorf("member %q is stored inline, but is not UTF-8 text", cl.value)}
		}
		return string(b), nil
	}
	return cl.value, nil
}

// closeSets closes the pack shards opened for links.
func (c *converter) closeSets() {
	for k, s := range c.sets {
		s.Close()
		delete(c.sets, k)
	}
	if c.all != nil {
		c.all.Close()
		c.all = nil
	}
}

// warnings lists what the user should know about a finished run.
func (c *converter) warnings() []string {
	var w []string
	if c.smp.splits > 0 {
		w = append(w, fmt.Sprintf("%s reappear after other members, so WebDataset would yield them split (first: %v)",
			plan.CountText(c.smp.splits, "sample keys"), c.smp.firstSplit))
	}
	if c.smp.dupFields > 0 {
		w = append(w, fmt.Sprintf("%s repeat a field of their sample, which WebDataset refuses (first: %v)",
			plan.CountText(c.smp.dupFields, "members"), c.smp.firstDup))
	}
	if c.res.Outside > 0 && !c.opts.NoTable {
		w = append(w, fmt.Sprintf("%s belong to no sample (no extension, or a __name__ that WebDataset skips): packed, but not in %s",
			plan.CountText(c.res.Outside, "members"), TableName))
	}
	if c.appleDoubl > 0 {
		w = append(w, fmt.Sprintf("%s look like macOS AppleDouble files (._*): packed as they are", plan.CountText(c.appleDoubl, "members")))
	}
	return w
}
