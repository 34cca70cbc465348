package wds

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bpconvert/bpconvert/internal/keyindex"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/sniff"
)

// maxListed is how many problems a plan lists before counting the rest.
const maxListed = 20

// Inspect plans a conversion without writing anything: it lists the
// shards and reads every tar header, to count members, bytes and samples,
// check every key the conversion will use (unsafe names, duplicates within
// and across shards, links, devices) and WebDataset's grouping, and sniff
// the first plan.DefaultSamples members of each field. Plain tar files are
// read header by header, seeking past payloads; compressed shards have to
// be decompressed to get past them. Standard input is not read at all (it
// can be read only once, by Convert), so its plan holds no counts.
//
// When the shards would make Convert fail, Inspect returns the plan, with
// every problem it found (up to 20, then a count) under Warnings, together
// with the first problem as an *InputError. Other errors (a source that
// cannot be listed) return no plan. The destination is checked by the
// conversion (convert.Begin), and before planning by the CLI.
func inspect(ctx context.Context, opts Options, pc progress.Counter) (plan.Plan, error) {
	opts = opts.withDefaults()
	if err := opts.check(); err != nil {
		return plan.Plan{}, err
	}
	pc = progress.OrNop(pc)
	opts, err := opts.opened(ctx)
	if err != nil {
		return plan.Plan{}, err
	}
	srcs, err := resolveSources(ctx, opts)
	if err != nil {
		return plan.Plan{}, err
	}
	dest := ""
	if opts.dst != nil {
		dest = opts.dst.Location()
	}
	// The indexes of keys keep their files in the system's temporary
	// directory (removed from it at once): a plan writes nothing beside
	// the destination.
	tmp := os.TempDir()
	in := &inspection{opts: opts, srcs: srcs, fields: map[string]*fieldStats{},
		keys: keyindex.NewSpilled(tmp, ".wds-plan-keys-*.tmp"), twins: packcore.NewTwinFinder(tmp),
		smp: newSampler(false, nil, nil, tmp)}
	defer in.close()
	if srcs.Bytes >= 0 {
		pc.SetTotal(-1, srcs.Bytes)
		if err := in.scan(ctx, pc); err != nil {
			return plan.Plan{}, err
		}
	}
	return in.plan(dest), in.first
}

// fieldStats is what the header pass found for one field.
type fieldStats struct {
	ev      plan.Evidence
	sniffed int
}

// inspection is the state of a header pass.
type inspection struct {
	opts Options
	srcs sourceList

	// keys holds every key, for duplicates across shards, and twins
	// their folded forms; both in files, with about 9 bytes a key in
	// memory, so a pass over millions of members stays small.
	keys  *keyindex.Spilled
	twins *packcore.TwinFinder
	// keyErr is the first failure to read the index of keys back.
	keyErr  error
	skipped int // compressed shards not read (Options.QuickPlan)
	remote  int // shards in object storage not read (Options.QuickPlan)
	fields  map[string]*fieldStats
	outside fieldStats // members in no sample
	links   int64
	dirs    int64
	members int64
	bytes   int64
	// inline and inlineBytes count the members of inline fields, which
	// are not packed.
	inline, inlineBytes int64
	comps               []string // compressions of the shards listed
	readComps           []string // compressions of the shards read for the plan
	smp                 *sampler
	problems            []string
	nproblem            int
	first               error
}

// fail records a problem that would stop the conversion.
func (in *inspection) fail(err error) {
	if in.first == nil {
		in.first = err
	}
	in.nproblem++
	if len(in.problems) < maxListed {
		in.problems = append(in.problems, err.Error())
	}
}

// close releases the indexes.
func (in *inspection) close() {
	in.keys.Close()
	in.twins.Close()
	in.smp.close()
}

// scan reads every shard's headers.
func (in *inspection) scan(ctx context.Context, pc progress.Counter) error {
	names := make([]string, len(in.srcs.Shards))
	for i, s := range in.srcs.Shards {
		names[i] = s.Name
	}
	in.smp.shards = names
	walk := &walker{prefix: in.opts.ShardPrefix, table: !in.opts.NoTable, earlier: func(k string) bool {
		_, ok, err := in.keys.Get(k)
		if err != nil && in.keyErr == nil {
			in.keyErr = err
		}
		return ok
	}}
	buf := make([]byte, sniff.PrefixLen)
	for i, src := range in.srcs.Shards {
		if err := in.shard(ctx, pc, walk, i, src, &buf); err != nil {
			return err
		}
		if in.keyErr != nil {
			return fmt.Errorf("wds: index of keys: %w", in.keyErr)
		}
	}
	if !in.opts.NoTable {
		// Grouping problems would stop a conversion that writes the table.
		for _, e := range []error{in.smp.firstSplit, in.smp.firstDup} {
			if e != nil {
				in.fail(e)
			}
		}
	}
	return nil
}

// shard reads one shard's headers. Problems are recorded, not returned;
// the error is for cancellation.
func (in *inspection) shard(ctx context.Context, pc progress.Counter, walk *walker, i int, src shardSource, buf *[]byte) error {
	if in.opts.QuickPlan && src.remote() {
		// A header pass over a remote tar costs a ranged read per window
		// of headers: a confirmed run leaves the checks to Convert, which
		// reads each tar once.
		in.remote++
		return nil
	}
	s, err := openShard(ctx, src, nil, true)
	if err != nil {
		in.fail(err)
		return nil
	}
	defer s.Close()
	if !slices.Contains(in.comps, s.comp) {
		in.comps = append(in.comps, s.comp)
	}
	if in.opts.QuickPlan && s.comp != CompressionNone {
		in.skipped++ // decompressed once, by Convert
		return nil
	}
	if !slices.Contains(in.readComps, s.comp) {
		in.readComps = append(in.readComps, s.comp)
	}
	walk.startShard(i, src)
	var lastRaw int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, off, err := s.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			in.fail(err)
			return nil
		}
		pc.Add(1, s.raw.n-lastRaw)
		lastRaw = s.raw.n
		it, err := walk.classify(h, off)
		if err != nil {
			in.fail(err)
			continue
		}
		switch it.kind {
		case itemDir:
			in.dirs++
			continue
		case itemSkip:
			continue
		case itemLink:
			in.links++
		}
		if err := in.keys.Put(it.key, keyindex.Loc{}); err != nil {
			return fmt.Errorf("wds: index of keys: %w", err)
		}
		if err := in.twins.Add(it.key); err != nil {
			return fmt.Errorf("wds: index of keys: %w", err)
		}
		in.members++
		in.bytes += it.size
		fs := &in.outside
		if it.inSample {
			if fs = in.fields[it.field]; fs == nil {
				fs = &fieldStats{}
			}
		}
		// Read what the checks need: the whole member for an inline field
		// (bounded by InlineMax), else a prefix to sniff.
		inline := it.inSample && !in.opts.NoTable && in.opts.inline(it.field)
		if inline && it.size > in.opts.InlineMax {
			in.fail(walk.fail(&it, "field %q is stored inline, but this member holds %s (the limit is %s)",
				it.field, plan.HumanBytes(it.size), plan.HumanBytes(in.opts.InlineMax)))
			continue
		}
		if inline {
			in.inline++
			in.inlineBytes += it.size
		}
		sniffIt := it.kind == itemFile && fs.sniffed < plan.DefaultSamples
		var content []byte
		if it.kind == itemFile && (inline || sniffIt) {
			n := min(int64(sniff.PrefixLen), h.Size)
			if inline {
				n = h.Size
			}
			if int64(cap(*buf)) < n {
				*buf = make([]byte, n)
			}
			content = (*buf)[:n]
			if _, err := io.ReadFull(s.tr, content); err != nil {
				in.fail(s.payloadError(h.Name, err))
				return nil
			}
		}
		if inline && it.kind == itemFile && !utf8.Valid(content) {
			in.fail(walk.fail(&it, "field %q is stored inline, but this member is not UTF-8 text", it.field))
			continue
		}
		kind := ""
		if sniffIt {
			kind = sniff.Detect(content[:min(len(content), sniff.PrefixLen)]).Label
			fs.sniffed++
		}
		fs.ev.Add(it.size, kind)
		if it.inSample {
			in.fields[it.field] = fs
			// Not strict: only a failure of the index of sample keys.
			if err := in.smp.add(i, h.Name, off, it.sample, it.field, cellRef, ""); err != nil {
				return err
			}
		}
	}
	if err := s.finish(); err != nil {
		in.fail(err)
	}
	pc.Add(0, s.raw.n-lastRaw)
	return in.smp.endShard()
}

// keyCheck is the plan's note on the key check the inspection made (unread:
// no shard was read for the plan).
func (in *inspection) keyCheck(unread bool) string {
	how := "payloads skipped by seeking"
	if comp := in.compressed(); comp != "" {
		how = comp + " shards decompressed to get past payloads, which takes about as long as converting them"
	}
	// Shards left out of the plan (Options.QuickPlan) are named as such:
	// the check covers only the shards read.
	which := "every tar header read"
	var later []string
	if in.skipped > 0 || in.remote > 0 {
		which = "the tar headers of the " + plan.CountText(int64(len(in.srcs.Shards)-in.skipped-in.remote), "shards") + " read"
		if in.skipped > 0 {
			later = append(later, plan.CountText(int64(in.skipped), "compressed shards"))
		}
		if in.remote > 0 {
			later = append(later, plan.CountText(int64(in.remote), "shards")+" in object storage")
		}
	}
	check := fmt.Sprintf("Key check: %s (%s): %s, no duplicates.", which, how, plan.CountText(in.members, "keys"))
	if unread {
		check = "Key check: no tar header read for this plan."
	}
	if in.nproblem > 0 {
		check = fmt.Sprintf("Key check: %s (%s): %s, listed under warnings; the conversion would stop at the first.", which, how, plan.CountText(int64(in.nproblem), "problems"))
	}
	if len(later) > 0 {
		check += " The keys of the " + strings.Join(later, " and ") + " not read are checked by the conversion as it reads them."
	}
	return check
}

// plan renders what the pass found.
func (in *inspection) plan(dest string) plan.Plan {
	o := in.opts
	stdin := in.srcs.Bytes < 0
	p := plan.Plan{
		Source: plan.Source{Format: "WebDataset", Path: o.src, Bytes: in.srcs.Bytes},
		Dest:   dest,
	}
	p.Source.Counts = plan.Counts{{Name: "shards", N: int64(len(in.srcs.Shards))}}
	// unread: no shard was read for the plan (Options.QuickPlan), so there
	// is nothing to count.
	unread := !stdin && len(in.srcs.Shards) > 0 && in.remote+in.skipped == len(in.srcs.Shards)
	if unread {
		p.Source.Details = append(p.Source.Details, "members and samples "+plan.NotSampledText)
	}
	if !stdin && !unread {
		p.Source.Counts = append(p.Source.Counts,
			plan.Count{Name: "members", N: in.members},
			plan.Count{Name: "samples", N: in.smp.samples})
		for _, c := range in.comps {
			if c == CompressionNone {
				c = "plain tar"
			}
			p.Source.Details = append(p.Source.Details, c)
		}
	}
	if o.ShardPrefix {
		p.Source.Details = append(p.Source.Details, "keys prefixed with shard names")
	}
	if in.remote > 0 {
		p.Source.Details = append(p.Source.Details, fmt.Sprintf("%d shards in object storage not read for this plan (each is read once, by the conversion, which checks keys as it goes; --dry-run reads their headers for the plan)", in.remote))
	}
	if in.skipped > 0 {
		p.Source.Details = append(p.Source.Details, plan.CountText(int64(in.skipped), "compressed shards")+" not read for this plan (counts are of the plain ones)")
	}

	names := make([]string, 0, len(in.fields))
	for f := range in.fields {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		fs := in.fields[f]
		ev := fs.ev
		ev.Unit, ev.Values = "members", ev.Sampled
		e := plan.Entry{Name: f, Kind: "tar members", Evidence: &ev, Action: plan.ActionExtract, Fidelity: plan.FidelityLossless}
		if !o.NoTable && o.inline(f) {
			e.Notes = []string{"text stored inline in column " + quoteField(f) + " of " + TableName + ", byte for byte; not packed"}
		}
		p.Entries = append(p.Entries, e)
	}
	if len(names) == 0 && unread {
		// Nothing was read: the fields are unknown, not absent.
		p.Entries = append(p.Entries, plan.Entry{Name: "members", Kind: "tar members", Detail: plan.NotSampledText,
			Action: plan.ActionExtract, Fidelity: plan.FidelityLossless})
	}
	if in.outside.ev.Sampled > 0 {
		ev := in.outside.ev
		ev.Unit, ev.Values = "members", ev.Sampled
		e := plan.Entry{Name: "members in no sample", Kind: "tar members", Evidence: &ev, Action: plan.ActionExtract, Fidelity: plan.FidelityLossless}
		if !o.NoTable {
			e.Notes = []string{"names WebDataset skips (no extension, __name__): not in " + TableName}
		}
		p.Entries = append(p.Entries, e)
	}
	if in.dirs > 0 {
		p.Entries = append(p.Entries, plan.Entry{Name: "directories", Kind: "tar entries",
			Detail: plan.CountText(in.dirs, "dirs") + ", no payload", Action: plan.ActionSkip, Fidelity: plan.FidelitySkipped})
	}

	p.Layout = []plan.Output{{Path: MediaDir + "/pack-NNNN.zip", Description: in.packDescription(stdin)},
		{Path: MediaDir + "/pack.manifest.json", Description: "size and SHA-256 of every pack shard"}}
	if !o.NoTable {
		d := "one row per sample: " + ColumnKey + ", " + ColumnShard + ", one column per field of references"
		if len(o.Inline) > 0 {
			d += " (" + strings.Join(o.Inline, ", ") + " inline)"
		}
		p.Layout = append(p.Layout, plan.Output{Path: TableName, Description: d})
	}

	keyRule := "Keys are the member names without a leading \"./\""
	if o.ShardPrefix {
		keyRule += ", prefixed with the shard's name (" + in.srcs.Shards[0].Stem + "/...)"
	}
	fields := "Each field's members are stored byte for byte in " + MediaDir + "/pack-NNNN.zip"
	if !o.NoTable {
		fields += " and referenced from the column of " + TableName + " named after the field (a field named with --inline is stored in its column instead)"
	}
	p.Explain("fields", fields+".")
	p.Explain("keys", keyRule+"; bytes are copied unchanged. A duplicate key, an unsafe name (absolute or with \"..\"), a device or FIFO, or a truncated shard stops the conversion, and nothing is written.")
	if in.dirs > 0 {
		p.Explain("keys", "Directories hold no bytes and are skipped; keys keep their paths.")
	}
	if stdin {
		p.Notes = append(p.Notes, "The source is standard input, which can be read only once: members, keys and samples are checked while converting, and nothing was read for this plan.")
	} else {
		p.Notes = append(p.Notes, in.keyCheck(unread))
	}
	if o.NoTable {
		p.Explain("samples", "Samples: no table is written (--no-table), so WebDataset's grouping is only reported: a sample key that reappears after other members, or a field repeated within a sample, shows as a warning.")
	} else {
		p.Explain("samples", "Samples: members are grouped as WebDataset groups them (adjacent members whose names agree up to the first dot of the file name; the rest, lower-cased, is the field). A sample key that reappears later (WebDataset would yield the sample twice) or a field repeated within a sample (WebDataset refuses it) stops the conversion.")
	}
	if in.links > 0 || stdin {
		p.Explain("links", "Links: a hard link, or a symbolic link to a member converted before it, becomes a member holding its target's bytes, copied back from the pack; links elsewhere stop the conversion.")
	}
	if !o.NoTable {
		p.Explain("readers", "Readers: WebDataset's loader does not read packs; every parquet reader reads "+TableName+" as is, and a sample's bytes are read by resolving its references through the packs (fsspec's zip:// protocol; examples/fsspec/packrefs.py does it fast). `bpconvert verify DST --against SRC` proves the result equal to the source.")
	}
	if len(in.srcs.Ignored) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("Ignored %s in %s not named like tar shards: %s.",
			plan.CountText(int64(len(in.srcs.Ignored)), "files"), o.src, listSome(in.srcs.Ignored, 5)))
	}

	p.Warnings = append(p.Warnings, in.problems...)
	if in.nproblem > len(in.problems) {
		p.Warnings = append(p.Warnings, fmt.Sprintf("... and %s more", plan.CountText(int64(in.nproblem-len(in.problems)), "problems")))
	}
	// Keys that differ only in case or Unicode normalization are distinct
	// members, but one file on macOS and Windows file systems.
	if twins := in.twins.Twins(); len(twins) > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("keys that differ only in case or Unicode normalization, %s (first: %s): they stay separate members, but unpacking them on macOS or Windows makes one overwrite the other",
			plan.CountText(int64(len(twins)), "groups"), twins[0]))
	}
	if in.smp != nil && o.NoTable {
		if in.smp.splits > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s reappear after other members, so WebDataset would yield them split (first: %v)",
				plan.CountText(in.smp.splits, "sample keys"), in.smp.firstSplit))
		}
		if in.smp.dupFields > 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s repeat a field of their sample, which WebDataset refuses (first: %v)",
				plan.CountText(in.smp.dupFields, "members"), in.smp.firstDup))
		}
	}
	return p
}

// packDescription describes the packs with an estimate of their number.
func (in *inspection) packDescription(stdin bool) string {
	o := in.opts
	d := "blob packs holding every member"
	if len(o.Inline) > 0 && !o.NoTable {
		d = "blob packs holding every member but the inline fields'"
	}
	if stdin {
		return d
	}
	members, bytes := in.members-in.inline, in.bytes-in.inlineBytes
	n := (bytes + o.MaxPackBytes - 1) / o.MaxPackBytes
	n = max(n, (members+int64(o.MaxMembers)-1)/int64(o.MaxMembers), 1)
	return fmt.Sprintf("%s, %s (about %s of up to %s)", d, plan.HumanBytes(bytes), plan.CountText(n, "shards"), plan.HumanBytes(o.MaxPackBytes))
}

// compressed names the compressions of the shards read for the plan, or ""
// when all of them are plain.
func (in *inspection) compressed() string {
	var c []string
	for _, x := range in.readComps {
		if x != CompressionNone {
			c = append(c, x)
		}
	}
	return strings.Join(c, "/")
}

// quoteField shows a field name in a note.
func quoteField(f string) string { return fmt.Sprintf("%q", f) }

// listSome joins the first n names and counts the rest.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}
