package lerobot

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/plan"
)

// Plan notes shared with the tests.
const (
	noteV2Copy   = "one file per episode already, copied unchanged into media/"
	noteSplit    = "split into one container per episode, copied packet for packet"
	noteInterval = "copied unchanged into media/, episodes indexed by [from_ns, to_ns)"
	noteReencode = "file(s) keep their concatenated layout, addressed by interval; cutting them would need a re-encode"
	schemaNote   = "A rewritten table no longer matches the LeRobot schema: readers must resolve blob references instead of reading frame bytes."
)

// Plan describes what Convert will do, for dst. It touches nothing on disk.
func (ins *Inspection) Plan(dst string) plan.Plan {
	d := ins.Dataset
	p := plan.Plan{
		Source: plan.Source{
			Format:  "LeRobot",
			Version: d.Version,
			Path:    d.Root,
			Counts:  plan.Counts{{Name: "episodes", N: int64(len(d.Episodes))}, {Name: "frames", N: d.Frames()}},
			Details: []string{strconv.FormatFloat(d.FPS, 'g', -1, 64) + " fps", storageDetail(d)},
			Bytes:   ins.DataBytes + ins.MetaBytes,
		},
		Dest:     dst,
		Warnings: append([]string{}, ins.Warnings...),
	}
	if ins.appending != nil {
		p.Append = ins.appendPlan()
	}
	for _, vf := range ins.Videos {
		p.Source.Bytes += vf.Bytes()
	}
	if d.lance != nil { // the three tables, the camera files inside videos.lance
		p.Source.Bytes = ins.MetaBytes
		for _, c := range d.lance.tables {
			p.Source.Bytes += c.bytes
		}
	}
	videoKeys := map[string]bool{}
	for _, vf := range ins.Videos {
		videoKeys[vf.Key] = true
		p.Entries = append(p.Entries, ins.videoEntry(vf))
	}
	for _, key := range d.VideoKeys {
		if !videoKeys[key] {
			p.Entries = append(p.Entries, plan.Entry{Name: key, Kind: "video", Action: plan.ActionSkip,
				Fidelity: plan.FidelitySkipped, Notes: []string{"left in place (--video skip): not in the output"}})
		}
	}
	imageKeys := map[string]bool{}
	for _, im := range ins.Images {
		imageKeys[im.Key] = true
		ev := im.Candidate.Evidence
		ev.Unit, ev.Values = "frames", im.Frames
		p.Entries = append(p.Entries, plan.Entry{Name: im.Key, Kind: "image", Action: plan.ActionExtract,
			Fidelity: plan.FidelitySchemaChanges, Detail: plan.Thousands(im.Frames) + " frames inside the table",
			Evidence: &ev,
			Notes: []string{"extracted to media/, column rewritten to blob references (null stays null)",
				"random reads stop pulling a whole row group"}})
	}
	for _, key := range d.ImageKeys {
		if !imageKeys[key] {
			p.Entries = append(p.Entries, plan.Entry{Name: key, Kind: "image", Action: plan.ActionSkip,
				Fidelity: plan.FidelitySkipped, Notes: []string{"left inside the table (--images skip)"}})
		}
	}

	if ins.lanceTables != nil {
		p.Entries = append(p.Entries, ins.lanceTableEntry(), ins.metaEntry(), ins.lanceMetaEntry())
		p.Layout = append(p.Layout,
			plan.Output{Path: convert.MediaDir + "/pack-NNNN.zip", Description: "episode videos"},
			plan.Output{Path: "data/", Description: fmt.Sprintf("tables written from %s (parquet, as data_path places them)", framesTable)},
			plan.Output{Path: "meta/", Description: "copied; info.json says where the videos went"},
			plan.Output{Path: "video_index.json", Description: indexDescription})
		p.Layout = append(p.Layout, ins.framesOutput()...)
		return p
	}
	table := plan.Entry{Name: "data/*.parquet", Kind: "table",
		Detail: fmt.Sprintf("%s, %s", plan.CountText(int64(ins.Parquets), "files"), plan.HumanBytes(ins.ParquetBytes))}
	if ins.Tables != nil {
		table.Action, table.Fidelity = plan.ActionRewrite, plan.FidelitySchemaChanges
		table.Notes = []string{fmt.Sprintf("rewritten: %s become blob references", strings.Join(ins.imageKeys(), ", "))}
		if others := ins.DataFiles - ins.Parquets; others > 0 {
			table.Notes = append(table.Notes, fmt.Sprintf("%s under data/ copied unchanged", plan.CountText(int64(others), "other files")))
		}
	} else {
		table.Action, table.Fidelity = plan.ActionCopy, plan.FidelityLossless
		table.Notes = []string{"copied unchanged (with every other file under data/)"}
	}
	p.Entries = append(p.Entries, table,
		ins.metaEntry())

	var media []string
	if len(ins.Videos) > 0 {
		media = append(media, "episode videos")
	}
	if ins.Tables != nil {
		media = append(media, "extracted frames")
	}
	p.Layout = append(p.Layout, plan.Output{Path: convert.MediaDir + "/pack-NNNN.zip", Description: strings.Join(media, " and ")})
	if ins.Tables != nil {
		p.Layout = append(p.Layout, plan.Output{Path: "data/", Description: "tables, " + strings.Join(ins.imageKeys(), ", ") + " rewritten to references"})
	} else {
		p.Layout = append(p.Layout, plan.Output{Path: "data/", Description: "copied unchanged"})
	}
	if len(ins.Videos) > 0 {
		p.Layout = append(p.Layout, plan.Output{Path: "meta/", Description: "copied; info.json says where the videos went"})
	} else {
		p.Layout = append(p.Layout, plan.Output{Path: "meta/", Description: "copied unchanged"})
	}
	if len(ins.Videos) > 0 {
		p.Layout = append(p.Layout, plan.Output{Path: "video_index.json", Description: indexDescription})
		p.Layout = append(p.Layout, ins.framesOutput()...)
	}
	if ins.Tables != nil {
		p.Explain("readers", schemaNote)
	}
	return p
}

// storageDetail names the dataset's storage format for the plan's source.
func storageDetail(d *Dataset) string {
	if d.StorageFormat == StorageLance {
		return "stored as Lance (" + framesTable + ", " + videosTable + ", " + metaTable + ")"
	}
	return "stored as parquet"
}

// lanceTableEntry is the plan entry of frames.lance, written as the
// tables of the parquet layout.
func (ins *Inspection) lanceTableEntry() plan.Entry {
	lt := ins.lanceTables
	c := ins.Dataset.lance.tables[framesTable]
	e := plan.Entry{Name: framesTable, Kind: "table", Action: plan.ActionRewrite, Fidelity: plan.FidelitySchemaChanges,
		Detail: fmt.Sprintf("%s, %s, %s", plan.CountText(ins.Dataset.lance.frameRows, "rows"), plan.CountText(int64(len(lt.columns)), "columns"), plan.HumanBytes(c.bytes)),
		Notes: []string{fmt.Sprintf("written as %s under data/, each episode's rows where data_path and its data/chunk_index, data/file_index put them; values unchanged",
			plan.CountText(int64(len(lt.tables)), "parquet tables"))}}
	if len(lt.renamed) > 0 {
		shown, more := lt.renamed, ""
		if len(shown) > 3 {
			shown, more = shown[:3], fmt.Sprintf(" and %d more", len(lt.renamed)-3)
		}
		e.Notes = append(e.Notes, fmt.Sprintf("columns named back after their features: %s%s", strings.Join(shown, ", "), more))
	}
	if lt.lists > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%s written as lists, as LeRobot's parquet tables hold them", plan.CountText(int64(lt.lists), "fixed-size list columns")))
	}
	return e
}

// lanceMetaEntry is the plan entry of meta.lance, which is not converted.
func (ins *Inspection) lanceMetaEntry() plan.Entry {
	e := plan.Entry{Name: metaTable, Kind: "table", Action: plan.ActionSkip, Fidelity: plan.FidelitySkipped,
		Notes: []string{"not copied: it repeats the files of meta/, which are copied"}}
	if c, ok := ins.Dataset.lance.tables[metaTable]; ok {
		e.Detail = plan.HumanBytes(c.bytes)
	} else {
		e.Detail = "absent"
	}
	return e
}

// imageKeys lists the extracted image features.
func (ins *Inspection) imageKeys() []string {
	var keys []string
	for _, im := range ins.Images {
		keys = append(keys, im.Key)
	}
	return keys
}

// indexDescription is the plan's line for video_index.json.
const indexDescription = "episode intervals [from_ns, to_ns) per camera, on each video stream's own time axis"

// framesOutput is the plan's line for the frames table.
func (ins *Inspection) framesOutput() []plan.Output {
	return []plan.Output{{Path: FramesFile, Description: "one row per frame (index, episode_index, frame_index), per camera a MediaRef cell {uri, pts_ns} that decodes it"}}
}

// videoEntry describes one video feature.
func (ins *Inspection) videoEntry(vf *VideoFeature) plan.Entry {
	ev := &plan.Evidence{Unit: "files", Values: int64(len(vf.Files))}
	var split, whole, reencode, preRoll, trailing, unclaimed, starts, ends, episodes int
	for _, f := range vf.Files {
		ext := strings.ToUpper(strings.TrimPrefix(path.Ext(f.Rel), "."))
		ev.Add(f.Size, ext)
		episodes += len(f.Episodes)
		if f.Report != nil {
			starts += f.Report.StartsOnKeyframes
			ends += f.Report.EndsOnKeyframes
		}
		if f.Split {
			split++
			if f.Report.PreRollNS > 0 && !f.Grown { // a grown file's committed footage comes first
				preRoll++
			}
			if f.Report.TrailingNS > 0 {
				trailing++
			}
		} else {
			whole++
			if f.Report != nil && ins.Dataset.V3() && (f.Report.PreRollNS > 0 || f.Report.TrailingNS > 0) {
				unclaimed++
			}
			if f.Report != nil && ins.Dataset.V3() && !ins.Options.NoSplitEpisodes && len(f.Report.Decide().Reasons) > 0 {
				reencode++
			}
		}
	}
	e := plan.Entry{Name: vf.Key, Kind: "video", Evidence: ev, Fidelity: plan.FidelityLossless}
	if ins.Dataset.lance != nil {
		e.Notes = append(e.Notes, fmt.Sprintf("read from the %s blobs of %s, in place", videoBytesColumn, videosTable))
	}
	if ins.Options.NoProbe {
		return ins.unprobedVideoEntry(e, episodes)
	}
	switch {
	case !ins.Dataset.V3():
		e.Action = plan.ActionCopy
		e.Notes = append(e.Notes, noteV2Copy,
			fmt.Sprintf("checked: %d/%d episode starts land on keyframes", starts, episodes))
		return e
	case whole == 0:
		e.Action = plan.ActionRewrite
		e.Notes = append(e.Notes, noteSplit)
	case split == 0:
		e.Action = plan.ActionCopy
		e.Notes = append(e.Notes, noteInterval)
	default:
		e.Action = plan.ActionRewrite
		e.Notes = append(e.Notes, fmt.Sprintf("%d file(s) %s", split, noteSplit), fmt.Sprintf("%d file(s) %s", whole, noteInterval))
	}
	e.Notes = append(e.Notes, fmt.Sprintf("checked: %d/%d episode boundaries land on keyframes", starts+ends, 2*episodes))
	if ins.Options.NoSplitEpisodes {
		e.Notes = append(e.Notes, "not split (--no-split-episodes)")
	}
	if reencode > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%d %s", reencode, noteReencode))
		for _, f := range vf.Files {
			if f.Split || f.Report == nil {
				continue
			}
			reasons := f.Report.Decide().Reasons
			if len(reasons) == 0 {
				continue
			}
			more := ""
			if len(reasons) > 2 {
				reasons, more = reasons[:2], fmt.Sprintf("; and %d more", len(reasons)-2)
			}
			e.Notes = append(e.Notes, fmt.Sprintf("%s: %s%s", f.Rel, strings.Join(reasons, "; "), more))
		}
	}
	if grown := grownFiles(vf); grown > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%d file(s) grew since the output was converted: only their new episodes are cut, the footage converted earlier is not read", grown))
	}
	if preRoll > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%d file(s) carry footage before their first episode; it is cut off, not packed", preRoll))
	}
	if trailing > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%d file(s) carry footage after their last episode; it is cut off, not packed", trailing))
	}
	if unclaimed > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%d whole file(s) hold footage outside their episodes; it is packed but no episode claims it", unclaimed))
	}
	return e
}

// noteNotProbed says what a plan from metadata alone leaves open.
const noteNotProbed = "keyframes not probed (planned from metadata, without libav): whether each episode boundary lands on a keyframe, and so which files are split, is decided when the conversion reads them"

// unprobedVideoEntry completes the entry e of a video feature whose camera
// files were located but not probed (Options.NoProbe).
func (ins *Inspection) unprobedVideoEntry(e plan.Entry, episodes int) plan.Entry {
	switch {
	case !ins.Dataset.V3():
		e.Action = plan.ActionCopy
		e.Notes = append(e.Notes, noteV2Copy)
	case ins.Options.NoSplitEpisodes:
		e.Action = plan.ActionCopy
		e.Notes = append(e.Notes, noteInterval, "not split (--no-split-episodes)")
	default:
		e.Action = plan.ActionRewrite
		e.Notes = append(e.Notes, fmt.Sprintf("%s where the keyframes allow, else %s", noteSplit, noteInterval))
	}
	e.Notes = append(e.Notes, plan.CountText(int64(episodes), "episodes")+" in these files", noteNotProbed)
	return e
}

// metaEntry is the plan entry of meta/: copied, with info.json rewritten
// when the videos are packed (see info.go).
func (ins *Inspection) metaEntry() plan.Entry {
	e := plan.Entry{Name: "meta/", Kind: "files", Detail: fmt.Sprintf("%s, %s", plan.CountText(int64(ins.MetaFiles), "files"), plan.HumanBytes(ins.MetaBytes)),
		Action: plan.ActionCopy, Fidelity: plan.FidelityLossless, Notes: []string{"copied unchanged"}}
	if len(ins.Videos) > 0 {
		e.Notes = []string{"copied unchanged but info.json: video_path becomes " + packedVideoDir + "/..., a directory that does not exist, so LeRobot's loader fails with a missing-file error that names video_index.json; a \"bpconvert\" member records the original template, the index and the pack directory",
			"LeRobot's own loader does not read the converted videos: a reader resolves video_index.json's references through the packs"}
		if ins.Dataset.lance != nil {
			e.Notes = append(e.Notes, "info.json's storage_format \"lance\" is dropped (the output is the default parquet layout) and recorded as bpconvert.source_storage_format")
		}
	}
	return e
}

// grownFiles counts the camera files of vf that an append cuts for their
// new episodes only.
func grownFiles(vf *VideoFeature) int {
	n := 0
	for _, f := range vf.Files {
		if f.Grown {
			n++
		}
	}
	return n
}
