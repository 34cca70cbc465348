package lance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/lancefmt"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
)

// plan renders the plan of the current selection; evidence is computed.
func (j *Job) plan() plan.Plan {
	m := j.ds.Manifest()
	var physical, onDisk int64
	for _, f := range j.ds.Fragments() {
		physical += int64(f.PhysicalRows)
		for _, df := range f.Files {
			onDisk += int64(df.SizeBytes)
		}
	}
	p := plan.Plan{
		Source: plan.Source{
			Format:  "Lance",
			Version: m.DataVersion,
			Path:    j.src,
			Counts: plan.Counts{
				{Name: "rows", N: int64(j.ds.NumRows())},
				{Name: "fragments", N: int64(len(j.ds.Fragments()))},
			},
			Details: []string{fmt.Sprintf("version %d of %d", j.ds.Version(), len(j.ds.Versions()))},
			Bytes:   onDisk,
		},
		Dest: j.dst.Location(),
	}
	if deleted := physical - int64(j.ds.NumRows()); deleted > 0 {
		p.Source.Counts = append(p.Source.Counts, plan.Count{Name: "deleted rows", N: deleted})
	}
	var kept []string
	for _, f := range j.ds.Schema().Fields {
		if c := j.candidate(f.Name); c == nil || !j.selected(c) {
			if c == nil {
				kept = append(kept, f.Name)
			}
		}
	}
	var members, bytes int64
	for _, c := range j.cands {
		e := plan.Entry{Name: c.field.Name, Kind: c.kind, Selectable: true, Action: plan.ActionSkip, Fidelity: plan.FidelitySkipped}
		ev := c.ev.ev
		e.Evidence = &ev
		if j.selected(c) {
			e.Action, e.Fidelity = plan.ActionExtract, plan.FidelitySchemaChanges
			e.Notes = append(e.Notes, "packed into "+convert.MediaDir+"/ as "+c.field.Name+"/<row:012d><ext>; the column becomes utf8 zip:// references (null stays null)")
			members += c.ev.members
			bytes += c.ev.bytes
			if c.ev.disagree != nil {
				p.Warnings = append(p.Warnings, c.ev.disagree.Error())
			}
		} else {
			kept = append(kept, c.field.Name)
			e.Notes = append(e.Notes, "left as it is (pages copied); name it with --column to extract it")
		}
		e.Notes = append(e.Notes, c.facts(j.opts.External)...)
		p.Entries = append(p.Entries, e)
	}
	copyNote := "pages copied byte for byte: encodings, compression, row order and deletions unchanged"
	for _, f := range j.rw.Fragments {
		if f.Transcode {
			copyNote = "legacy (0.1) data files cannot be page-copied: values decoded and written as Lance file version " + j.rw.DataVersion
			break
		}
	}
	p.Entries = append(p.Entries, plan.Entry{Name: "other columns", Kind: "columns", Detail: strings.Join(kept, ", "),
		Action: plan.ActionCopy, Fidelity: plan.FidelityLossless, Notes: []string{copyNote}})

	packs := fmt.Sprintf("%s, %s", plan.CountText(members, "members"), plan.HumanBytes(bytes))
	for _, c := range j.cands {
		if j.selected(c) && c.ev.ev.NotSampled {
			packs = "members and size " + plan.NotSampledText
		}
	}
	p.Layout = []plan.Output{{Path: convert.MediaDir + "/pack-NNNN.zip", Description: packs}}
	if !j.opts.NoManifest {
		p.Layout = append(p.Layout, plan.Output{Path: convert.MediaDir + "/" + packcore.ManifestName, Description: "size and SHA-256 of every pack shard"})
	}
	var fileVersions []string
	for _, f := range j.rw.Fragments {
		for _, v := range strings.Split(f.FileVersion, ", ") {
			if !slices.Contains(fileVersions, v) {
				fileVersions = append(fileVersions, v)
			}
		}
	}
	asWhat := "Lance " + j.rw.DataVersion
	if len(fileVersions) > 1 {
		slices.Sort(fileVersions)
		asWhat += " with data files of file versions " + strings.Join(fileVersions, ", ") + " (each kept at its own version)"
	}
	tableDesc := fmt.Sprintf("the dataset as %s, one version, same fragments, row addresses and deletions", asWhat)
	if j.app != nil {
		tableDesc = fmt.Sprintf("a new version of the table, the source's version %d: the data files of the new fragments as %s, the converted fragments carried as they are", j.ds.Version(), asWhat)
	}
	p.Layout = append(p.Layout, plan.Output{Path: TableDir, Description: tableDesc})
	refs := "References are zip://KEY::" + convert.MediaDir + "/pack-NNNN.zip, relative to the output directory; the"
	if j.opts.RefBase != "" {
		refs = "The" // the note on --ref-base says what references are
	}
	p.Explain("readers", refs+
		" schema metadata key \""+MetaKey+"\" records what was extracted. Lance readers read "+TableDir+" as is; "+
		"payload bytes are read by resolving the references (bpconvert, or any zip reader).")
	if j.app != nil {
		j.appendNotes(&p)
		return p
	}
	for _, ix := range j.rw.Indices {
		if ix.Carried {
			p.Notes = append(p.Notes, fmt.Sprintf("Index %q on %s is carried over unchanged.", ix.Name, strings.Join(ix.Columns, ", ")))
		} else {
			p.Warnings = append(p.Warnings, fmt.Sprintf("index %q on %s is dropped: %s; %s", ix.Name, strings.Join(ix.Columns, ", "), ix.Reason, ix.Hint))
		}
	}
	if j.rw.StableRowIDs {
		lineage := ""
		if n := j.rw.SpilledLineage; n > 0 {
			lineage = fmt.Sprintf(" (the row lineage Lance spilled to data file columns in %s is copied with them)", plan.CountText(int64(n), "fragments"))
		}
		p.Notes = append(p.Notes, "Stable row ids are kept: each row's _rowid is the source's, and _row_created_at_version and "+
			"_row_last_updated_at_version keep the source's version numbers"+lineage+".")
	}
	var keptTags, droppedTags []string
	for _, t := range j.rw.Tags {
		switch {
		case t.Kept:
			keptTags = append(keptTags, fmt.Sprintf("%q", t.Name))
		case t.Branch != "":
			droppedTags = append(droppedTags, fmt.Sprintf("%q (version %d of branch %q)", t.Name, t.Version, t.Branch))
		default:
			droppedTags = append(droppedTags, fmt.Sprintf("%q (version %d)", t.Name, t.Version))
		}
	}
	if len(keptTags) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("Tags naming the converted version %d are kept, naming version 1: %s.", j.rw.SourceVersion, strings.Join(keptTags, ", ")))
	}
	if len(droppedTags) > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("tags naming other versions are dropped (the output has one version): %s; convert with --dataset-version N to keep a tag of version N", strings.Join(droppedTags, ", ")))
	}
	if n := len(j.rw.DroppedBlobFiles); n > 0 && len(j.sel) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%s of the extracted blob columns are not carried: their bytes are in the packs.", plan.CountText(int64(n), "sidecar blob files")))
	}
	return p
}

// facts describes a blob column's storage and sharing.
func (c *candidate) facts(ext External) []string {
	if c.blob != 2 {
		return nil
	}
	ev := c.ev
	var parts []string
	for k, n := range ev.kinds {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", plan.Thousands(n), lancefmt.BlobKind(k)))
		}
	}
	var out []string
	if len(parts) > 0 {
		out = append(out, "stored: "+strings.Join(parts, ", "))
	}
	if ev.shared.Rows > 0 {
		out = append(out, fmt.Sprintf("%s share %s (ref_id or same stored bytes) -> one member each, %s not written twice",
			plan.CountText(ev.shared.Rows+ev.shared.Blobs, "rows"), plan.CountText(ev.shared.Blobs, "blobs"), plan.HumanBytes(ev.shared.Bytes)))
	}
	if ev.kinds[lancefmt.BlobExternal] > 0 {
		if ext == ExternalKeep {
			out = append(out, "external blobs keep their URI as the cell's value (--external keep)")
		} else {
			out = append(out, "external blobs are copied into the packs (--external copy)")
		}
	}
	return out
}
