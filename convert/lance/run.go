package lance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/sniff"
)

// Record is the JSON value stored under MetaKey in the rewritten dataset's
// schema metadata.
type Record struct {
	Tool          string   `json:"tool"`
	Version       string   `json:"version"`
	SourceFormat  string   `json:"source_format"`
	SourceVersion uint64   `json:"source_version"`
	PackBase      string   `json:"pack_base"`
	Extracted     []string `json:"extracted"`
	External      External `json:"external"`
	// NextRow, written by appends, is the row number the next appended
	// row's member key gets: the rows the output has numbered, deleted
	// ones included. Absent, it is the table's row count (a conversion
	// numbers the rows of its version).
	NextRow uint64 `json:"next_row,omitempty"`
}

func (j *Job) physicalRows(frag uint64) uint64 {
	for _, f := range j.ds.Fragments() {
		if f.ID == frag {
			return f.PhysicalRows
		}
	}
	return 0
}

// Run packs the selected columns' values and writes the rewritten dataset
// (see convert.Job). Of a source in object storage it reads the same
// bytes as of a local one, through ranged reads: the payloads of the
// selected columns streamed from their pages or blobs, and the pages of
// the kept columns copied in sequential runs of reads.
func (j *Job) Run(ctx context.Context, prog progress.Counter) (plan.Summary, error) {
	sum, err := j.run(ctx, prog)
	if err == nil {
		sum.Fetched = j.opts.Source.Fetched()
	}
	return sum, j.storeFirst(err)
}

func (j *Job) run(ctx context.Context, prog progress.Counter) (plan.Summary, error) {
	prog = progress.OrNop(prog)
	if !j.planned {
		return plan.Summary{}, fmt.Errorf("lance: %w", convert.ErrNotPlanned)
	}
	if len(j.sel) == 0 {
		return plan.Summary{}, j.NeedChoice()
	}
	for _, c := range j.sel {
		if c.ev != nil && c.ev.disagree != nil {
			return plan.Summary{}, c.ev.disagree
		}
	}
	out, err := convert.Begin(ctx, j.dst, convert.OutputOptions{Pack: j.opts.PackOptions, Sources: []convert.Source{j.opts.Source}, Progress: prog, Base: j.opts.Base})
	if err != nil {
		return plan.Summary{}, err
	}
	defer out.Abort()

	var total int64
	for _, c := range j.sel {
		if c.ev != nil {
			total += c.ev.bytes
		}
	}
	prog.SetTotal(int64(j.scanRows()), total)
	x := &extraction{j: j, out: out, prog: prog}
	var firstRow uint64
	if part := j.opts.Part; !part.Whole() {
		if x.keep, x.partIDs, firstRow, err = j.partFragments(part); err != nil {
			return plan.Summary{}, err
		}
	} else if j.app != nil {
		// An append numbers its rows after those the output holds.
		x.keep, x.partIDs = j.scope()
		firstRow = j.app.nextRow
	}
	defer x.closeScans()
	if err := x.open(ctx); err != nil {
		return plan.Summary{}, err
	}
	if err := x.rows(ctx, firstRow); err != nil {
		return plan.Summary{}, err
	}
	if _, err := out.ClosePack(); err != nil {
		return plan.Summary{}, err
	}
	x.closeScans()
	return x.finish(ctx)
}

// extraction is one run's state: a scan per selected column, the
// references each column's rows get, and what sharing saved.
type extraction struct {
	j    *Job
	out  *convert.Output
	prog progress.Counter
	// keep and partIDs are a part's fragments (keep nil for a whole run).
	keep    map[uint64]bool
	partIDs []uint64
	cols    []*refs
	its     []rowIter
	seen    []map[shareID]*shareEntry
	st      shareStats
	kept    int64  // external URIs kept as the cell's value
	next    uint64 // the row number after the last row packed
}

// open starts a scan of every selected column.
func (x *extraction) open(ctx context.Context) error {
	n := len(x.j.sel)
	x.cols, x.its, x.seen = make([]*refs, n), make([]rowIter, n), make([]map[shareID]*shareEntry, n)
	for i, c := range x.j.sel {
		var err error
		if x.its[i], err = x.j.iterate(ctx, c, x.keep, x.partIDs); err != nil {
			return err
		}
		x.cols[i] = newRefs(x.j.physicalRows)
		x.seen[i] = map[shareID]*shareEntry{}
	}
	return nil
}

// closeScans ends the scans, before the table is written: their page
// buffers (a page per column, 65 MB for 500,000 rows of 512 B) are not
// needed while it is.
func (x *extraction) closeScans() {
	for i, it := range x.its {
		if it != nil {
			it.Close()
			x.its[i] = nil
		}
	}
}

// rows packs the payloads row by row from firstRow on. Rows advance in
// step across the columns, so one row's members sit together (one
// placement group per row).
func (x *extraction) rows(ctx context.Context, firstRow uint64) error {
	j := x.j
	for row := firstRow; ; row++ {
		if row%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		more := 0
		var rowBytes int64
		for i, c := range j.sel {
			it := x.its[i]
			if !it.Next() {
				if err := it.Err(); err != nil {
					return j.invalid(c, err)
				}
				continue
			}
			more++
			n, err := x.cell(i, c, it.Cell(), row)
			if err != nil {
				return err
			}
			rowBytes += n
		}
		if more == 0 {
			x.next = row
			return nil
		}
		if more != len(j.sel) {
			return convert.Invalid("lance", j.src, fmt.Errorf("row %d: the selected columns have different row counts", row))
		}
		x.prog.Add(1, rowBytes)
	}
}

// cell gives one cell of column i its reference: an external URI kept as
// it is, the reference of the row that shares its blob, or a new member.
// It returns the payload bytes written.
func (x *extraction) cell(i int, c *candidate, cl *cell, row uint64) (int64, error) {
	j := x.j
	if cl.null {
		return 0, nil
	}
	if cl.blob != nil && cl.blob.Kind == lancefmt.BlobExternal && j.opts.External == ExternalKeep {
		if cl.blob.Ranged {
			return 0, j.keepRangedErr(c, cl, row)
		}
		if _, err := x.cols[i].set(cl.frag, cl.phys, cl.blob.KeptURI()); err != nil {
			return 0, j.rowErr(c, cl, row, err)
		}
		x.kept++
		return 0, nil
	}
	id, shares := identity(cl)
	if shares {
		if first := x.seen[i][id]; first != nil {
			if first.size != cl.size {
				return 0, j.rowErr(c, cl, row, fmt.Errorf("ref_id %d: size %d, but row %d with the same ref_id has size %d", id.ref, cl.size, first.row, first.size))
			}
			if first.count == 1 {
				x.st.Blobs++
			}
			first.count++
			x.st.Rows++
			x.st.Bytes += cl.size
			if err := x.cols[i].setCell(cl.frag, cl.phys, first.cell); err != nil {
				return 0, j.rowErr(c, cl, row, err)
			}
			return 0, nil
		}
	}
	ref, err := j.pack(x.out, c, cl, row)
	if err != nil {
		return 0, err
	}
	ci, err := x.cols[i].set(cl.frag, cl.phys, ref)
	if err != nil {
		return 0, j.rowErr(c, cl, row, err)
	}
	if shares {
		x.seen[i][id] = &shareEntry{row: row, size: cl.size, cell: ci, count: 1}
	}
	return cl.size, nil
}

// finish writes the table (a part's references, for finalize to write
// it), commits the output and returns the summary.
func (x *extraction) finish(ctx context.Context) (plan.Summary, error) {
	j, out := x.j, x.out
	var names []string
	for _, c := range j.sel {
		names = append(names, c.field.Name)
	}
	var res *lancefmt.RewriteResult
	if !j.opts.Part.Whole() {
		// A part: the table is written once, by finalize, from every
		// part's references.
		if err := j.writePart(out.Dir, names, x.cols); err != nil {
			return plan.Summary{}, err
		}
	} else {
		x.prog.Milestone("writing " + TableDir)
		// The run's record names the data files, so a rerun (a resumed
		// one too) writes the same table byte for byte.
		var seed []byte
		if j.opts.Record != nil {
			seed = j.opts.Record.Encode()
		}
		var err error
		if res, err = j.writeTable(ctx, out.Path(TableDir), names, x.cols, seed, x.next); err != nil {
			return plan.Summary{}, err
		}
	}
	if _, err := out.Commit(); err != nil {
		return plan.Summary{}, err
	}
	sum := out.Summary(plan.Summary{
		Format: "Lance",
		Source: j.src,
		Counts: plan.Counts{
			{Name: "rows", N: int64(j.ds.NumRows())},
			{Name: "extracted columns", N: int64(len(j.sel))},
			{Name: "shared rows", N: x.st.Rows},
			{Name: "shared blobs", N: x.st.Blobs},
			{Name: "bytes not written twice", N: x.st.Bytes},
			{Name: "kept external uris", N: x.kept},
		},
	})
	if res != nil {
		sum.Counts = append(sum.Counts, plan.Count{Name: "fragments", N: int64(len(j.ds.Fragments()))})
		for _, ix := range res.Plan.Indices {
			if !ix.Carried {
				sum.Warnings = append(sum.Warnings, fmt.Sprintf("index %q dropped: %s; %s", ix.Name, ix.Reason, ix.Hint))
			}
		}
	} else {
		sum.Counts = append(sum.Counts, plan.Count{Name: "fragments", N: int64(len(x.partIDs))})
	}
	return sum, nil
}

// writeTable writes the rewritten dataset into dir: the source's pages
// copied, the named columns replaced by cols' values.
// In an append, it writes the table's next version, in which next is the
// row number the next appended row gets.
func (j *Job) writeTable(ctx context.Context, dir string, names []string, cols []*refs, seed []byte, next uint64) (*lancefmt.RewriteResult, error) {
	replace := make([]lancefmt.Replacement, len(names))
	for i, name := range names {
		r := cols[i]
		replace[i] = lancefmt.Replacement{Column: name, Values: func(_ context.Context, frag, n uint64) ([]string, []bool, error) {
			return r.values(frag, n)
		}}
	}
	r := Record{Tool: "bpconvert", Version: j.opts.ToolVersion, SourceFormat: "lance", SourceVersion: j.ds.Version(),
		PackBase: convert.MediaDir, Extracted: names, External: j.opts.External}
	var ext *lancefmt.ExtendPlan
	if j.app != nil {
		r.NextRow, ext = next, j.app.ext
	}
	rec, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	o := lancefmt.RewriteOptions{Replace: replace, SchemaMetadata: map[string]string{MetaKey: string(rec)}, Seed: seed, WriterVersion: j.opts.ToolVersion, Extend: ext}
	if seed != nil {
		// A reproducible table: its version's time is the source's.
		if o.Time, err = versionsTime(ctx, j.ds); err != nil {
			return nil, j.located(err)
		}
	}
	res, err := j.ds.Rewrite(ctx, dir, o)
	if err != nil {
		return nil, j.located(err)
	}
	return res, nil
}

// versionsTime returns the newest modification time of the files in a
// dataset's _versions directory: when the source last changed.
func versionsTime(ctx context.Context, ds *lancefmt.Dataset) (time.Time, error) {
	var t time.Time
	err := ds.ListFiles(ctx, "_versions", func(fi lancefmt.FileInfo) error {
		if fi.ModTime.After(t) {
			t = fi.ModTime
		}
		return nil
	})
	return t, err
}

// pack writes one value as member <column>/<row:012d><ext>.
func (j *Job) pack(out *convert.Output, c *candidate, cl *cell, row uint64) (string, error) {
	p, err := cl.prefix()
	if err != nil {
		return "", j.rowErr(c, cl, row, err)
	}
	key := fmt.Sprintf("%s/%012d%s", c.field.Name, row, sniff.Ext("", p))
	group := strconv.FormatUint(row, 10)
	var ref string
	var b []byte
	held := false
	if cl.blob == nil {
		if b, held, err = cl.val.Bytes(); err != nil {
			return "", j.rowErr(c, cl, row, err)
		}
	}
	if held {
		ref, err = out.AddBytes(key, b, group)
	} else {
		// A blob, or a value too large to hold: read in pieces.
		var r io.ReadCloser
		if r, err = cl.reader(); err != nil {
			return "", j.rowErr(c, cl, row, err)
		}
		ref, err = out.Add(key, r, cl.size, group)
		r.Close()
	}
	if errors.Is(err, packcore.ErrSizeMismatch) || errors.Is(err, packcore.ErrInvalidKey) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "", j.rowErr(c, cl, row, err) // the source is short or unusable
	}
	if err != nil {
		return "", fmt.Errorf("lance: %s: column %q: row %d: %w", j.src, c.field.Name, row, err)
	}
	return ref, nil
}
