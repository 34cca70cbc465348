package rebase

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bpconvert/bpconvert/convert/lance"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
)

// maxRef bounds one reference read from a Lance table.
const maxRef = 1 << 20

// lanceColumn holds the new values of one reference column, per fragment
// and physical row.
type lanceColumn struct {
	vals  map[uint64][]string
	valid map[uint64][]bool
}

// rebaseLance writes the Lance dataset rel again with its reference
// columns (those its schema metadata names as extracted) renamed: a new
// one-version dataset beside it, its other columns page-copied, exchanged
// with the old one. It reports false, writing nothing, when no reference
// changes.
func (p *Plan) rebaseLance(ctx context.Context, rel string) (bool, error) {
	dir := filepath.Join(p.Dataset, filepath.FromSlash(rel))
	ds, err := lancefmt.Open(ctx, dir, lancefmt.OpenOptions{})
	if err != nil {
		return false, err
	}
	var rec lance.Record
	if raw, ok := ds.Schema().Metadata[lance.MetaKey]; ok {
		if err := json.Unmarshal(raw, &rec); err != nil {
			return false, fmt.Errorf("schema metadata %q: %w", lance.MetaKey, err)
		}
	}
	changed := false
	cols := make([]*lanceColumn, len(rec.Extracted))
	for i, name := range rec.Extracted {
		c, ch, err := p.lanceValues(ctx, ds, name)
		if err != nil {
			return false, err
		}
		cols[i], changed = c, changed || ch
	}
	if !changed {
		return false, nil
	}
	replace := make([]lancefmt.Replacement, len(cols))
	for i, name := range rec.Extracted {
		c := cols[i]
		replace[i] = lancefmt.Replacement{Column: name, Values: func(_ context.Context, frag, n uint64) ([]string, []bool, error) {
			vals, valid := c.vals[frag], c.valid[frag]
			if vals == nil {
				vals, valid = make([]string, n), make([]bool, n)
			}
			if uint64(len(vals)) != n {
				return nil, nil, fmt.Errorf("fragment %d: %d rows, %d values", frag, n, len(vals))
			}
			return vals, valid, nil
		}}
	}
	tmp := filepath.Join(filepath.Dir(dir), tempPrefix+filepath.Base(dir))
	if _, err := ds.Rewrite(ctx, tmp, lancefmt.RewriteOptions{Replace: replace, WriterVersion: p.toolVersion}); err != nil {
		os.RemoveAll(tmp)
		return false, err
	}
	if err := exchange(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return false, err
	}
	if err := atomicfile.SyncDir(filepath.Dir(dir)); err != nil {
		return false, err
	}
	// tmp now holds the old dataset.
	return true, os.RemoveAll(tmp)
}

// lanceNotes says what a rebase of the Lance dataset rel drops: the
// versions before the latest, which the rewritten dataset does not carry.
func (p *Plan) lanceNotes(ctx context.Context, rel string) error {
	ds, err := lancefmt.Open(ctx, filepath.Join(p.Dataset, filepath.FromSlash(rel)), lancefmt.OpenOptions{})
	if err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	if n := len(ds.Versions()); n > 1 {
		p.Notes = append(p.Notes, fmt.Sprintf("%s has %d versions: it is written again as one version, the latest (%d); the others, and tags naming them, are not kept", rel, n, ds.Version()))
	}
	return nil
}

// lanceValues reads the references of one column and renames them,
// reporting whether any changed.
func (p *Plan) lanceValues(ctx context.Context, ds *lancefmt.Dataset, name string) (*lanceColumn, bool, error) {
	rows := map[uint64]uint64{}
	for _, fr := range ds.Fragments() {
		rows[fr.ID] = fr.PhysicalRows
	}
	c := &lanceColumn{vals: map[uint64][]string{}, valid: map[uint64][]bool{}}
	s, err := ds.Values(ctx, name, lancefmt.ValueOptions{})
	if err != nil {
		return nil, false, err
	}
	defer s.Close()
	changed := false
	for s.Next() {
		v := s.Value()
		if c.vals[v.Fragment] == nil {
			c.vals[v.Fragment], c.valid[v.Fragment] = make([]string, rows[v.Fragment]), make([]bool, rows[v.Fragment])
		}
		if v.Row >= uint64(len(c.vals[v.Fragment])) {
			return nil, false, fmt.Errorf("column %q: fragment %d: row %d beyond its %d rows", name, v.Fragment, v.Row, rows[v.Fragment])
		}
		if v.Null {
			continue
		}
		if v.Size > maxRef {
			return nil, false, fmt.Errorf("column %q: fragment %d, row %d: a value of %d bytes is no reference", name, v.Fragment, v.Row, v.Size)
		}
		b, held, err := v.Bytes()
		if err != nil {
			return nil, false, err
		}
		if !held {
			return nil, false, fmt.Errorf("column %q: fragment %d, row %d: a value of %d bytes is no reference", name, v.Fragment, v.Row, v.Size)
		}
		ref := string(b)
		if _, _, perr := packcore.ParseRef(ref); perr == nil {
			// A value that is no reference (an external URI kept as it
			// was) stays as it is.
			ref, err = p.rename(ref)
		}
		if err != nil {
			return nil, false, fmt.Errorf("column %q: fragment %d, row %d: %w", name, v.Fragment, v.Row, err)
		}
		changed = changed || ref != string(b)
		c.vals[v.Fragment][v.Row], c.valid[v.Fragment][v.Row] = ref, true
	}
	if err := s.Err(); err != nil {
		return nil, false, err
	}
	return c, changed, nil
}
