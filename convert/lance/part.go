package lance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/lancefmt/lancestore"
)

// PartFile is what one part of a split conversion (convert.Part) writes in
// place of the table: which dataset, version and columns it converted, and
// the references of its fragments' rows. Finalize (JoinTable) gathers the
// parts' references and writes the table once, from the source, so the
// table's pages are copied once and no part needs another's.
const PartFile = "lance-part.json"

// partDoc is the content of PartFile.
type partDoc struct {
	Source      string   `json:"source"` // absolute dataset directory, or its s3:// location
	Version     uint64   `json:"version"`
	External    External `json:"external"`
	ToolVersion string   `json:"tool_version"`
	Columns     []string `json:"columns"`
	// Refs holds, per column (in Columns' order) and fragment id, each
	// physical row's new value (null where the cell stays null).
	Refs []map[string][]*string `json:"refs"`
}

// partFragments returns the fragments part p converts, a contiguous run of
// the dataset's fragments balanced by data file bytes (rows when sizes are
// unknown), and the scan position of their first row.
func (j *Job) partFragments(p convert.Part) (map[uint64]bool, []uint64, uint64, error) {
	frags := j.ds.Fragments()
	sizes := make([]int64, len(frags))
	known := true
	for i, f := range frags {
		for _, df := range f.Files {
			if df.SizeBytes == 0 {
				known = false
			}
			sizes[i] += int64(df.SizeBytes)
		}
	}
	if !known {
		for i, f := range frags {
			sizes[i] = int64(f.PhysicalRows)
		}
	}
	lo, hi := p.Range(sizes)
	keep := map[uint64]bool{}
	ids := []uint64{}
	var first uint64
	for i, f := range frags {
		if i < lo {
			del, err := j.ds.Deleted(&frags[i])
			if err != nil {
				return nil, nil, 0, j.located(err)
			}
			first += f.PhysicalRows
			if del != nil {
				first -= del.GetCardinality()
			}
			continue
		}
		if i < hi {
			keep[f.ID] = true
			ids = append(ids, f.ID)
		}
	}
	return keep, ids, first, nil
}

// writePart writes PartFile into dir with the references of the part's
// fragments.
func (j *Job) writePart(dir string, names []string, cols []*refs) error {
	doc := partDoc{Source: j.opts.Source.Location(), Version: j.ds.Version(), External: j.opts.External, ToolVersion: j.opts.ToolVersion, Columns: names}
	for _, r := range cols {
		m := map[string][]*string{}
		for _, frag := range r.fragments() {
			vals, valid, err := r.values(frag, r.frags[frag].n)
			if err != nil {
				return err
			}
			out := make([]*string, len(vals))
			for i := range vals {
				if valid[i] {
					out[i] = &vals[i]
				}
			}
			m[strconv.FormatUint(frag, 10)] = out
		}
		doc.Refs = append(doc.Refs, m)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, PartFile), b, 0o644)
}

var _ convert.TableJoiner = JoinTable

// Joiner names the convert.TableJoiner of each file that the parts of a
// split Lance conversion write: JoinTable for the part's record (PartFile),
// which rewrites the dataset once for every part; nil for the rest.
func Joiner(rel string) convert.TableJoiner {
	if rel == PartFile {
		return JoinTable
	}
	return nil
}

// JoinTable is the convert.TableJoiner of PartFile: it reads every part's
// references, renumbers them with rename, and writes the rewritten table
// (TableDir, beside out; out itself is not written) from the source
// dataset the parts name, as an undivided run writes it.
func JoinTable(ctx context.Context, out string, parts []string, rename func(part int, ref string) (string, error)) error {
	var first *partDoc
	merged := []map[uint64][]*string{}
	for i, p := range parts {
		if p == "" {
			return fmt.Errorf("part %d wrote no %s", i+1, PartFile)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var doc partDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("part %d: %s: %w", i+1, PartFile, err)
		}
		if first == nil {
			first = &doc
			merged = make([]map[uint64][]*string, len(doc.Columns))
			for c := range merged {
				merged[c] = map[uint64][]*string{}
			}
		} else if doc.Source != first.Source || doc.Version != first.Version || !slices.Equal(doc.Columns, first.Columns) || doc.External != first.External {
			return fmt.Errorf("part %d converted %s version %d columns %v; part 1 %s version %d columns %v",
				i+1, doc.Source, doc.Version, doc.Columns, first.Source, first.Version, first.Columns)
		}
		if len(doc.Refs) != len(doc.Columns) {
			return fmt.Errorf("part %d: %d reference lists for %d columns", i+1, len(doc.Refs), len(doc.Columns))
		}
		for c, byFrag := range doc.Refs {
			for fs, vals := range byFrag {
				frag, err := strconv.ParseUint(fs, 10, 64)
				if err != nil {
					return fmt.Errorf("part %d: fragment %q: %w", i+1, fs, err)
				}
				if _, dup := merged[c][frag]; dup {
					return fmt.Errorf("part %d: fragment %d converted by two parts", i+1, frag)
				}
				for r, v := range vals {
					if v == nil || first.External == ExternalKeep && !isRef(*v) {
						continue
					}
					nv, err := rename(i, *v)
					if err != nil {
						return fmt.Errorf("part %d: column %q: fragment %d, row %d: %w", i+1, doc.Columns[c], frag, r, err)
					}
					vals[r] = &nv
				}
				merged[c][frag] = vals
			}
		}
	}
	if first == nil {
		return fmt.Errorf("no part")
	}
	ds, err := lancestore.Open(ctx, first.Source, lancefmt.OpenOptions{Version: first.Version}, nil)
	if err != nil {
		return err
	}
	cols := make([]*refs, len(first.Columns))
	for c := range cols {
		m := merged[c]
		r := newRefs(func(frag uint64) uint64 { return uint64(len(m[frag])) })
		for frag, vals := range m {
			for i, v := range vals {
				if v == nil {
					continue
				}
				if _, err := r.set(frag, uint64(i), *v); err != nil {
					return err
				}
			}
		}
		cols[c] = r
	}
	j := &Job{src: first.Source, ds: ds, opts: Options{External: first.External, Options: convert.Options{ToolVersion: first.ToolVersion}}}
	seed := fmt.Appendf(nil, "%s\x00%d\x00%q\x00%s\x00%d parts", first.Source, first.Version, first.Columns, first.External, len(parts))
	_, err = j.writeTable(ctx, filepath.Join(filepath.Dir(out), TableDir), first.Columns, cols, seed, 0)
	return err
}

// isRef reports whether v is a blob reference (an external URI kept with
// --external keep is not).
func isRef(v string) bool {
	return len(v) > len("zip://") && v[:len("zip://")] == "zip://"
}
