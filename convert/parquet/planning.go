package parquet

import (
	"fmt"
	"strings"

	"github.com/bpconvert/bpconvert/plan"
)

// Plan describes what Convert will do with sel, for dst. It touches nothing
// on disk.
func (ins *Inspection) Plan(sel Selection, dst string) plan.Plan {
	var rows, rgs, tableBytes, otherBytes int64
	for _, t := range ins.Tables {
		rows += t.Rows
		rgs += int64(t.RowGroups)
		tableBytes += t.Size
	}
	for _, o := range ins.in.others {
		otherBytes += o.size
	}
	disk := ins.in.disk
	hf := false
	for _, t := range ins.Tables {
		hf = hf || t.HF != ""
	}
	p := plan.Plan{
		Source: plan.Source{
			Format: "Parquet",
			Path:   ins.Root,
			Counts: plan.Counts{{Name: "tables", N: int64(len(ins.Tables))}, {Name: "rows", N: rows}, {Name: "row groups", N: rgs}},
			Bytes:  tableBytes + otherBytes,
		},
		Dest:     dst,
		Entries:  []plan.Entry{},
		Layout:   []plan.Output{},
		Notes:    []string{},
		Warnings: append([]string{}, ins.Warnings...),
	}
	if ins.in.single {
		p.Source.Path = ins.in.tree.Path(ins.Tables[0].Rel)
	}
	if hf {
		p.Source.Details = append(p.Source.Details, "Hugging Face metadata")
	}
	if disk != nil {
		p.Source.Format = ins.Format()
		p.Source.Counts[2].Name = "record batches"
		if disk.dict {
			p.Source.Details = append(p.Source.Details, "DatasetDict of "+plan.CountText(int64(len(disk.datasets)), "splits")+": "+strings.Join(disk.datasets, ", "))
		}
	}

	for _, c := range ins.Candidates {
		p.Entries = append(p.Entries, ins.candidateEntry(c, sel))
	}

	entries, copied := ins.tableEntries(sel, tableFidelity(p.Entries))
	p.Entries = append(p.Entries, entries...)
	if len(ins.Others) > 0 {
		e := plan.Entry{
			Name:     "other files",
			Kind:     "files",
			Detail:   fmt.Sprintf("%s, %s: %s", plan.CountText(int64(len(ins.Others)), "files"), plan.HumanBytes(otherBytes), listSome(ins.Others, 4)),
			Action:   plan.ActionCopy,
			Fidelity: plan.FidelityLossless,
		}
		if meta := ins.metadataRewrites(ins.cardEdit(sel)); len(meta) > 0 {
			e.Notes = []string{"copied unchanged, except " + strings.Join(meta, " and ") +
				": the features of the fields that become reference strings are declared string, the --keep-path fields added, and the card's configs name the tables wherever a data_files pattern would take in " + MediaDir + "/ (the card's YAML is written again, anchors and aliases resolved; its text after the front matter byte for byte)"}
		}
		p.Entries = append(p.Entries, e)
	}
	if ins.writesCard(sel) {
		p.Entries = append(p.Entries, plan.Entry{
			Name: cardName, Kind: "dataset card", Detail: "written: configs naming the tables as the train split",
			Action: plan.ActionRewrite, Fidelity: plan.FidelityLossless,
			Notes: []string{"the source has no card and no table is named like a split, so datasets.load_dataset(DST) would take every file for data, " + MediaDir + "/ too"},
		})
	}

	if len(sel.Paths) > 0 {
		p.Layout = append(p.Layout, plan.Output{Path: MediaDir + "/pack-NNNN.zip", Description: "blob packs"})
	} else {
		p.Warnings = append(p.Warnings, "no field is selected: name payload fields with --column NAME or --field a.b.c")
	}
	for i, t := range ins.Tables {
		if i == 4 && len(ins.Tables) > 5 {
			p.Layout = append(p.Layout, plan.Output{Path: fmt.Sprintf("(%d more tables)", len(ins.Tables)-4), Description: "same relative paths"})
			break
		}
		desc := "rewritten table"
		for _, c := range copied {
			if c == t {
				desc = "copied table"
			}
		}
		p.Layout = append(p.Layout, plan.Output{Path: t.OutRel, Description: desc})
	}
	if len(ins.Others) > 0 {
		p.Layout = append(p.Layout, plan.Output{Path: "(other files)", Description: "copied unchanged"})
	}

	ext := "parquet"
	if disk != nil {
		ext = "arrow"
	}
	if ins.opts.RefBase == "" { // else the note on --ref-base says what they are
		p.Explain("references", "References are zip://KEY::"+MediaDir+"/pack-NNNN.zip, relative to the dataset root (the output directory).")
	}
	p.Explain("keys", "Member keys: <field>/<table path without ."+ext+">/<row:012d><ext> (list elements add -<index:04d>); one placement group per row.")
	p.Explain("readers", readersNote(disk != nil))
	if sel.Default {
		p.Notes = append(p.Notes, "Selected by default: the fields that Hugging Face metadata declares as media.")
	}
	var remote int64
	for _, c := range ins.Candidates {
		if selected(sel.Paths, c.Path) {
			remote += c.Remote
		}
	}
	if remote > 0 && ins.opts.Fetch != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("Remote cells: %s in the sample have null bytes and a path that is a URL (hf://, https://, s3://, ...); --fetch-remote fetches each and packs it like a local file.", plan.CountText(remote, "values")))
	} else if remote > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("Remote cells: %s in the sample have null bytes and a path that is a URL (hf://, https://, s3://, ...); such values are kept as they are, their path unchanged, and counted in the summary (remote_cells). --strict-remote refuses them instead.", plan.CountText(remote, "values")))
	}
	var uncounted int64
	for _, t := range ins.Tables {
		if t.Uncounted {
			uncounted++
		}
	}
	if uncounted > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("The %s in object storage were read for their schema only (--yes): their rows and payloads are counted, and checked, by the conversion, which reads each once; --dry-run reads them whole for the plan.", plan.CountText(uncounted, "Arrow data files")))
	}
	return p
}

// candidateEntry is the plan's entry of candidate c: what the selection
// makes of it, and why.
func (ins *Inspection) candidateEntry(c Candidate, sel Selection) plan.Entry {
	if c.Evidence.Sampled < c.Evidence.Values {
		// The sample's sum is not the data's: the plan's total is the
		// measure of all of it that the metadata gives.
		c.Evidence.TotalBytes = c.ChunkBytes
	}
	e := plan.Entry{
		Name:       c.Name(),
		Kind:       candidateKind(c),
		Detail:     fmt.Sprintf("%s, %s in column chunks", plan.CountText(int64(c.Tables), "tables"), plan.HumanBytes(c.ChunkBytes)),
		Evidence:   &c.Evidence,
		Selectable: true,
	}
	if selected(sel.Paths, c.Path) {
		e.Action = plan.ActionExtract
		e.Fidelity = plan.FidelitySchemaChanges
		e.Notes = []string{"packed into " + MediaDir + "/, the field rewritten in place to zip:// reference strings (null stays null)"}
		keep := c.Struct && ins.opts.Media != MediaString
		switch {
		case keep && ins.opts.KeepPath:
			e.Notes = []string{"packed into " + MediaDir + "/; the struct<bytes, path> stays, bytes null and path the zip:// reference (null stays null)",
				"the source path moves to a new string field " + FieldName(append(c.Path[:len(c.Path)-1:len(c.Path)-1], c.Path[len(c.Path)-1]+PathSuffix)) + " beside it (--keep-path)"}
		case keep:
			e.Fidelity = plan.FidelityPathDropped
			e.Notes = []string{"packed into " + MediaDir + "/; the struct<bytes, path> stays, bytes null and path the zip:// reference (null stays null)",
				"the source path's extension names the member, the path itself is not kept (--keep-path keeps it beside the field)"}
		case c.Struct && ins.opts.KeepPath:
			e.Notes = append(e.Notes, "the struct<bytes, path> becomes the reference; the source path moves to a new string field "+
				FieldName(append(c.Path[:len(c.Path)-1:len(c.Path)-1], c.Path[len(c.Path)-1]+PathSuffix))+" beside it (--keep-path)")
		case c.Struct:
			e.Fidelity = plan.FidelitySchemaChangesPathDropped
			e.Notes = append(e.Notes, "the struct<bytes, path> becomes the reference; the path's extension names the member, the path itself is not kept")
		}
		switch {
		case c.Media != "" && keep:
			e.Notes = append(e.Notes, fmt.Sprintf("huggingface feature %s kept: datasets reads it as before, opening each path through fsspec", c.Media))
		case c.Media != "":
			e.Notes = append(e.Notes, fmt.Sprintf("huggingface feature %s rewritten to Value(\"string\") (--hf-media string)", c.Media))
		}
	} else {
		e.Action = plan.ActionSkip
		e.Fidelity = plan.FidelityLossless
		e.Notes = []string{"not selected: stays in the table as it is (select it with --column or --field)"}
	}
	return e
}

// tableEntries are the plan's entries of the tables: those sel rewrites,
// and those it copies (returned too, for the layout).
func (ins *Inspection) tableEntries(sel Selection, fidelity plan.Fidelity) (entries []plan.Entry, copied []*Table) {
	disk := ins.in.disk
	var rewritten []*Table
	var rrows int64
	for _, t := range ins.Tables {
		has := false
		for _, path := range sel.Paths {
			if ok, _ := resolve(t, path); ok {
				has = true
			}
		}
		if has {
			rewritten = append(rewritten, t)
			rrows += t.Rows
		} else {
			copied = append(copied, t)
		}
	}
	if len(rewritten) > 0 && disk != nil {
		entries = append(entries, plan.Entry{
			Name:     tableNames(rewritten),
			Kind:     "Arrow IPC tables",
			Detail:   fmt.Sprintf("%s, %s; written again as Arrow IPC streams at the same paths, one record batch for each of the source's", plan.CountText(int64(len(rewritten)), "tables"), plan.CountText(rrows, "rows")),
			Action:   plan.ActionRewrite,
			Fidelity: fidelity,
			Notes:    []string{"other columns and the schema metadata kept; state.json, dataset_dict.json and dataset_info.json kept too, so that datasets.load_from_disk(DST) reads the output"},
		})
	} else if len(rewritten) > 0 {
		entries = append(entries, plan.Entry{
			Name:     tableNames(rewritten),
			Kind:     "tables",
			Detail:   fmt.Sprintf("%s, %s; same row groups, codecs, column order and nullability", plan.CountText(int64(len(rewritten)), "tables"), plan.CountText(rrows, "rows")),
			Action:   plan.ActionRewrite,
			Fidelity: fidelity,
			Notes:    []string{"rewritten to the same relative paths; other columns and metadata kept"},
		})
	}
	if len(copied) > 0 {
		entries = append(entries, plan.Entry{
			Name:     tableNames(copied),
			Kind:     "tables",
			Detail:   plan.CountText(int64(len(copied)), "tables") + " without selected fields",
			Action:   plan.ActionCopy,
			Fidelity: plan.FidelityLossless,
		})
	}
	return entries, copied
}

// tableFidelity is the verdict on the rewritten tables, taken from their
// extracted fields' so that the two never disagree: the schema changes when
// any field's does, a source path is dropped when any field's is.
func tableFidelity(fields []plan.Entry) plan.Fidelity {
	var changes, dropped bool
	for _, e := range fields {
		if e.Action != plan.ActionExtract {
			continue
		}
		switch e.Fidelity {
		case plan.FidelitySchemaChanges:
			changes = true
		case plan.FidelityPathDropped:
			dropped = true
		case plan.FidelitySchemaChangesPathDropped:
			changes, dropped = true, true
		}
	}
	switch {
	case changes && dropped:
		return plan.FidelitySchemaChangesPathDropped
	case dropped:
		return plan.FidelityPathDropped
	}
	return plan.FidelitySchemaChanges
}

func candidateKind(c Candidate) string {
	lists := strings.Count(c.Type, "list<")
	var k string
	switch {
	case c.Media != "":
		k = c.Media + " feature"
		lists = 0 // the feature name says it
	case c.Struct:
		k = "struct<bytes, path>"
	default:
		k = "binary column"
	}
	for range lists {
		k = "list of " + k
	}
	return k
}

func tableNames(ts []*Table) string {
	if len(ts) == 1 {
		return ts[0].Rel
	}
	if ts[0].Arrow {
		return "*.arrow"
	}
	return "*.parquet"
}

// Format names the source's format, for plans and summaries.
func (ins *Inspection) Format() string {
	if ins.in.disk != nil {
		return "Hugging Face save_to_disk (Arrow IPC)"
	}
	return "Parquet"
}

func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", +%d more", len(names)-n)
}

// readersNote says how the output is read.
func readersNote(disk bool) string {
	n := "Readers: every parquet reader (pyarrow, DuckDB, Spark, Hugging Face datasets) reads the tables as they are (Arrow readers the Arrow data files of a save_to_disk dataset); an extracted field holds zip:// references (in the path of a kept media struct), and its bytes are read by resolving them through the packs (fsspec's zip:// protocol, which datasets uses for Image() and Audio(); examples/fsspec/packrefs.py does it fast). Relative references resolve from the dataset root only: --ref-base with an absolute path or URL makes them resolve from anywhere. "
	if disk {
		return n + "With datasets, load it as the source is loaded: datasets.load_from_disk(DST). `bpconvert verify DST --against SRC` proves the result equal to the Arrow data files."
	}
	return n + "`bpconvert verify DST --against SRC` proves the result equal to the source."
}
