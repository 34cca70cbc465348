package lance

import (
	"context"
	"errors"
	"fmt"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/sniff"
)

// shareID identifies the stored bytes of a blob v2 value: rows with equal
// ids share one member.
type shareID struct {
	ref uint32                // a positive ref_id, or 0
	loc lancefmt.BlobLocation // the physical location when ref is 0
}

// identity returns the sharing id of a cell: a positive ref_id, or the
// physical location of a non-empty blob. Plain binary values, nulls and
// empty values share nothing.
func identity(c *cell) (shareID, bool) {
	if c.blob == nil || c.null {
		return shareID{}, false
	}
	if c.blob.RefID > 0 {
		return shareID{ref: c.blob.RefID}, true
	}
	if c.size > 0 {
		return shareID{loc: c.blob.Location}, true
	}
	return shareID{}, false
}

// shareEntry is the first row of a shared blob.
type shareEntry struct {
	row   uint64
	size  int64
	cell  uint64 // its reference, once written (see refs)
	count int64  // rows that use it
}

// columnEvidence is what one pass over a candidate column found.
type columnEvidence struct {
	ev       plan.Evidence
	kinds    [5]int64 // non-null blob values per storage kind
	members  int64    // members a conversion writes
	bytes    int64    // their bytes
	kept     int64    // external values kept as URIs
	shared   shareStats
	disagree error // rows sharing a ref_id with different sizes
}

// shareStats counts sharing.
type shareStats struct {
	Rows  int64 // rows whose blob an earlier row already stored
	Blobs int64 // blobs that more than one row uses
	Bytes int64 // bytes not written twice
}

// evidence reads a candidate column once: every value's size, storage
// kind and sharing, and the kinds of evenly spaced samples.
func (j *Job) evidence(ctx context.Context, c *candidate) (*columnEvidence, error) {
	keep, ids := j.scope()
	it, err := j.iterate(ctx, c, keep, ids)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	ce := &columnEvidence{}
	ce.ev.Values = int64(j.scanRows())
	samples := plan.SampleIndices(plan.DefaultSamples, ce.ev.Values)
	seen := map[shareID]*shareEntry{}
	var row uint64
	for ; it.Next(); row++ {
		if row%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		cl := it.Cell()
		if len(samples) > 0 && samples[0] == int64(row) {
			samples = samples[1:]
			if cl.null {
				ce.ev.AddNull()
			} else {
				p, err := cl.prefix()
				if err != nil {
					return nil, j.rowErr(c, cl, row, err)
				}
				ce.ev.Add(cl.size, sniff.Detect(p).Label)
			}
		}
		if cl.null {
			continue
		}
		if cl.blob != nil {
			ce.kinds[min(int(cl.blob.Kind), len(ce.kinds)-1)]++
			if cl.blob.Kind == lancefmt.BlobExternal && j.opts.External == ExternalKeep {
				if cl.blob.Ranged {
					return nil, j.keepRangedErr(c, cl, row)
				}
				ce.kept++
				continue
			}
		}
		if id, ok := identity(cl); ok {
			if first := seen[id]; first != nil {
				if first.size != cl.size && ce.disagree == nil {
					ce.disagree = j.rowErr(c, cl, row, fmt.Errorf("ref_id %d: size %d, but row %d with the same ref_id has size %d", id.ref, cl.size, first.row, first.size))
				}
				if first.count == 1 {
					ce.shared.Blobs++
				}
				first.count++
				ce.shared.Rows++
				ce.shared.Bytes += cl.size
				continue
			}
			seen[id] = &shareEntry{row: row, size: cl.size, count: 1}
		}
		ce.members++
		ce.bytes += cl.size
	}
	if err := it.Err(); err != nil {
		return nil, j.invalid(c, err)
	}
	return ce, nil
}

// rowErr locates an error at one row of a column.
// keepRangedErr refuses --external keep for an external blob that is a
// range of its object: the URI alone would name the whole object.
func (j *Job) keepRangedErr(c *candidate, cl *cell, row uint64) error {
	b := cl.blob
	err := j.rowErr(c, cl, row, fmt.Errorf("external blob %s is the range [%d, %d) of that object, which --external keep cannot keep: the cell would hold the bare URI, naming the whole object", b.URI, b.Location.Offset, b.Location.Offset+b.Location.Size))
	var ie *convert.InputError
	if errors.As(err, &ie) {
		ie.Hint = "use --external copy (the default) to copy the range into the packs"
	}
	return err
}

func (j *Job) rowErr(c *candidate, cl *cell, row uint64, err error) error {
	ie := j.invalid(c, fmt.Errorf("fragment %d, physical row %d: %w", cl.frag, cl.phys, err))
	ie.Row = int64(row)
	return ie
}
