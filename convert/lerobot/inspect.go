package lerobot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/convert/parquet"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/srctree"
)

// ImageMode says what happens to image features stored inside the tables.
type ImageMode string

// Image modes.
const (
	// ImagesExtract moves the frames into packs and rewrites the columns to
	// blob references (the default).
	ImagesExtract ImageMode = "extract"
	// ImagesSkip leaves the frames inside the tables.
	ImagesSkip ImageMode = "skip"
)

// VideoMode says what happens to video features.
type VideoMode string

// Video modes.
const (
	// VideoCopy packs the camera files, per episode where they can be cut by
	// packet copy (the default).
	VideoCopy VideoMode = "copy"
	// VideoSkip leaves the camera files out of the output.
	VideoSkip VideoMode = "skip"
)

// DefaultToleranceFrames is the default Options.ToleranceFrames: an
// episode's interval may differ from its frame count by one frame.
const DefaultToleranceFrames = video.DefaultToleranceFrames

// Options configures Inspect and Convert. The zero value selects the
// defaults, but a dataset with video features also needs an Engine (unless
// Video is VideoSkip).
type Options struct {
	// Options are the settings every converter takes (QuickPlan changes
	// nothing: a LeRobot plan reads no payload).
	convert.Options
	// Images is ImagesExtract (default) or ImagesSkip.
	Images ImageMode
	// Video is VideoCopy (default) or VideoSkip.
	Video VideoMode
	// NoSplitEpisodes keeps every v3.0 camera file whole, its episodes
	// addressed by interval.
	NoSplitEpisodes bool
	// ToleranceFrames is how many frames an episode's interval length may
	// differ from its frame count (default DefaultToleranceFrames).
	ToleranceFrames float64
	// Engine scans and cuts the camera files: convert/lerobot/video/libav,
	// which the bpconvert-lerobot program links. This package never
	// imports it, so it builds without cgo.
	Engine video.Engine
	// NoProbe plans from the metadata alone: the camera files are located,
	// sized and their episodes' intervals checked, but their keyframes are
	// not read, so no Engine is needed and the plan says what was not
	// probed. Such an inspection plans; Convert refuses it.
	NoProbe bool
}

// withDefaults fills in the defaults and refuses unknown modes as
// *convert.UsageError values.
func (o Options) withDefaults() (Options, error) {
	switch o.Images {
	case "":
		o.Images = ImagesExtract
	case ImagesExtract, ImagesSkip:
	default:
		return o, &convert.UsageError{Err: fmt.Errorf("lerobot: images mode %q: want %q or %q", o.Images, ImagesExtract, ImagesSkip)}
	}
	switch o.Video {
	case "":
		o.Video = VideoCopy
	case VideoCopy, VideoSkip:
	default:
		return o, &convert.UsageError{Err: fmt.Errorf("lerobot: video mode %q: want %q or %q", o.Video, VideoCopy, VideoSkip)}
	}
	if o.ToleranceFrames < 0 {
		return o, &convert.UsageError{Err: fmt.Errorf("lerobot: negative frame tolerance %g", o.ToleranceFrames)}
	}
	if o.ToleranceFrames == 0 {
		o.ToleranceFrames = video.DefaultToleranceFrames
	}
	return o, nil
}

// Inspection is what Inspect found and decided. It is computed without
// writing anything.
type Inspection struct {
	// Dataset is the metadata read by Open.
	Dataset *Dataset
	// Options are the options Inspect was given, defaults filled in.
	Options Options
	// Videos are the video features in key order (none under VideoSkip).
	Videos []*VideoFeature
	// Images are the image features in key order, with what sampling found
	// (none under ImagesSkip).
	Images []ImageFeature
	// Tables is the inspection of data/ that extracts the image features;
	// nil when no image feature is extracted (data/ is then copied).
	Tables *parquet.Inspection
	// DataFiles and DataBytes count the files under data/ (parquet or not)
	// and their size, or those of frames.lance for a dataset stored as
	// Lance; MetaFiles and MetaBytes those under meta/.
	DataFiles, MetaFiles int
	DataBytes, MetaBytes int64
	// Parquets counts the *.parquet files under data/, ParquetBytes their
	// size.
	Parquets     int
	ParquetBytes int64
	// Warnings are facts the user should see before confirming.
	Warnings []string

	selection parquet.Selection
	// lanceTables plans the tables written from frames.lance, for a
	// dataset stored as Lance.
	lanceTables *lanceTables
	// appending is set when the inspection plans an append: what the
	// committed output holds and which episodes are new.
	appending *appendState
}

// VideoFeature is one camera and its files.
type VideoFeature struct {
	Key   string
	Files []*VideoFile
}

// Bytes sums the sizes of the feature's files.
func (v *VideoFeature) Bytes() int64 {
	var n int64
	for _, f := range v.Files {
		n += f.Size
	}
	return n
}

// VideoFile is one camera file, its episodes and what happens to it.
type VideoFile struct {
	Key string
	// Rel is the path relative to the dataset root, slash-separated (for
	// a dataset stored as Lance, the path video_path gives it, as in the
	// parquet layout); Path the file to read (for a dataset in a bucket,
	// the object's s3:// location, which is read through the dataset's
	// source tree by Rel).
	Rel, Path string
	Size      int64
	// Offset is where the file's Size bytes start in Path: 0, but for a
	// dataset stored as Lance, where Path is the Lance data or sidecar
	// file holding the blob of Row of videos.lance (Row is -1 otherwise).
	Offset, Row int64
	// Episodes are the episodes the metadata places in the file, sorted by
	// FromNS, with their intervals relative to the file.
	Episodes []video.Episode
	// Report is the keyframe check of the file.
	Report *video.Report
	// Split is set when the file is cut into one container per episode;
	// otherwise it is packed whole (Reasons say why, for v3.0 files).
	Split   bool
	Reasons []string
	// Grown is set, in an append, when the file also holds episodes the
	// output holds: Episodes are the new ones only, and they must be cut.
	Grown bool
}

// ImageFeature is one image feature stored inside the tables.
type ImageFeature struct {
	Key string
	// Frames counts the rows of the tables holding the feature.
	Frames int64
	// Candidate is what convert/parquet found for the column.
	Candidate parquet.Candidate
}

// Inspect reads the dataset's metadata, locates and checks every camera file,
// refuses inconsistent metadata, scans keyframes and decides per file whether
// it is cut per episode, and inspects the tables holding image features. It
// writes nothing. src is a local directory or an s3:// location (see
// InspectTree). Problems with the dataset are *convert.InputError values;
// options that skip every media feature are a *convert.UsageError matching
// ErrNothingToConvert.
func Inspect(ctx context.Context, src string, opts Options) (*Inspection, error) {
	t, err := openTree(ctx, src, objstore.Options{})
	if err != nil {
		return nil, err
	}
	return InspectTree(ctx, t, opts)
}

// InspectTree is Inspect for a dataset opened as a source tree. Of a
// dataset in a bucket it reads what a local inspection reads: the files of
// meta/ (episode tables by footer and column), and of each camera file its
// MP4 boxes but not its sample data; it lists the objects once (when t was
// opened) and reads no table under data/. Image features inside the tables
// are extracted from a local dataset only: in a bucket they are refused
// with a *convert.UsageError unless Options.Images is ImagesSkip.
func InspectTree(ctx context.Context, t *srctree.Tree, opts Options) (*Inspection, error) {
	ins, err := inspectTree(ctx, t, opts)
	return ins, storeFirst(t, err)
}

func inspectTree(ctx context.Context, t *srctree.Tree, opts Options) (*Inspection, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	d, err := OpenTree(ctx, t)
	if err != nil {
		return nil, err
	}
	ins := &Inspection{Dataset: d, Options: opts}
	if opts.Video == VideoSkip && (opts.Images == ImagesSkip || len(d.ImageKeys) == 0) ||
		opts.Images == ImagesSkip && len(d.VideoKeys) == 0 {
		return nil, nothingToConvert()
	}
	if t.Remote() && opts.Images == ImagesExtract && len(d.ImageKeys) > 0 {
		return nil, &convert.UsageError{
			Err:  fmt.Errorf("lerobot: %s: image features %s are extracted from the tables of a local dataset only, not yet from object storage", d.Root, strings.Join(d.ImageKeys, ", ")),
			Hint: "add --images skip to convert the videos and copy the tables unchanged, or copy the dataset to a local directory first"}
	}
	if out := opts.committedOutput(); out != nil {
		if err := ins.planAppend(ctx, out); err != nil {
			return nil, err
		}
	}
	if d.lance != nil {
		if opts.Images == ImagesExtract && len(d.ImageKeys) > 0 {
			return nil, &convert.InputError{Source: "lerobot", File: "meta/info.json", Offset: -1, Row: -1,
				Err:  fmt.Errorf("image features %s in a dataset stored as Lance: extracting them from %s is not supported (LeRobot's Lance reader does not read them either)", strings.Join(d.ImageKeys, ", "), framesTable),
				Hint: "--images skip keeps them inside the written tables"}
		}
		ins.Warnings = append(ins.Warnings, d.lance.warnings...)
		if err := ins.planLanceTables(ctx); err != nil {
			return nil, err
		}
	} else if err := ins.checkDataFiles(); err != nil {
		return nil, err
	}
	if opts.Video == VideoCopy {
		if err := ins.locateVideos(); err != nil {
			return nil, err
		}
		if err := ins.validateIntervals(); err != nil {
			return nil, err
		}
		if ins.appending != nil {
			// Before any camera file is read.
			if err := ins.checkAppendSources(); err != nil {
				return nil, err
			}
		}
		if len(ins.Videos) > 0 && opts.Engine == nil && !opts.NoProbe {
			return nil, errors.New("lerobot: no video engine to read the camera files (Options.Engine)")
		}
		if !opts.NoProbe {
			if err := ins.scanVideos(ctx); err != nil {
				return nil, err
			}
		}
		if d.lance != nil {
			ins.Warnings = append(ins.Warnings, d.lance.unused()...)
		}
	}
	if opts.Images == ImagesExtract && len(d.ImageKeys) > 0 {
		if err := ins.inspectTables(ctx); err != nil {
			return nil, err
		}
	}
	data, err := d.countFiles(ctx, "data")
	if err != nil {
		return nil, err
	}
	if d.lance != nil {
		data = d.lance.tables[framesTable]
	}
	meta, err := d.countFiles(ctx, "meta")
	if err != nil {
		return nil, err
	}
	ins.DataFiles, ins.DataBytes, ins.Parquets, ins.ParquetBytes = data.files, data.bytes, data.parquets, data.parquetBytes
	ins.MetaFiles, ins.MetaBytes = meta.files, meta.bytes
	return ins, nil
}

// fileCount is what countFiles found.
type fileCount struct {
	files, parquets     int
	bytes, parquetBytes int64
}

// countFiles counts the regular files under dir (relative to the root) and
// their bytes, and the *.parquet files among them. A missing dir counts
// nothing.
func (d *Dataset) countFiles(ctx context.Context, dir string) (fileCount, error) {
	var c fileCount
	err := d.tree.Walk(ctx, dir, func(e srctree.Entry) error {
		if e.Mode.IsRegular() {
			c.files++
			c.bytes += e.Size
			if strings.HasSuffix(e.Name, ".parquet") {
				c.parquets++
				c.parquetBytes += e.Size
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return c, err
}

// countFiles counts the regular files under the local directory dir (see
// Dataset.countFiles).
func countFiles(dir string) (fileCount, error) {
	var c fileCount
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			fi, err := e.Info()
			if err != nil {
				return err
			}
			c.files++
			c.bytes += fi.Size()
			if strings.HasSuffix(e.Name(), ".parquet") {
				c.parquets++
				c.parquetBytes += fi.Size()
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return c, err
}

// checkDataFiles checks that the data_path template names an existing table
// for every episode (when the metadata locates it).
func (ins *Inspection) checkDataFiles() error {
	d := ins.Dataset
	seen := map[string]bool{}
	for _, e := range d.Episodes {
		vals := map[string]any{}
		if d.V3() {
			if e.DataChunk < 0 {
				continue // not located by the metadata; data/ is converted as a whole anyway
			}
			vals["chunk_index"], vals["file_index"] = e.DataChunk, e.DataFile
		} else {
			vals["episode_chunk"], vals["episode_index"] = e.Index/d.ChunksSize, e.Index
		}
		rel, err := formatTemplate(d.DataPath, vals)
		if err != nil {
			return invalid("meta/info.json", fmt.Errorf("data_path: %w", err))
		}
		if seen[rel] {
			continue
		}
		seen[rel] = true
		if _, err := d.file(rel); errors.Is(err, fs.ErrNotExist) {
			return invalid("", fmt.Errorf("episode %d: table %s", e.Index, d.missing(rel)))
		} else if err != nil {
			return invalid(rel, fmt.Errorf("episode %d's table %w", e.Index, err))
		}
	}
	return nil
}

// locateVideos finds every camera file from the video_path template and
// assigns the episodes their intervals in it.
func (ins *Inspection) locateVideos() error {
	d := ins.Dataset
	for _, key := range d.VideoKeys {
		vf := &VideoFeature{Key: key}
		byRel := map[string]*VideoFile{}
		committedRels := map[string]bool{}
		for _, e := range d.Episodes {
			vals := map[string]any{"video_key": key}
			ep := video.Episode{Index: int(e.Index), Frames: e.Length}
			if d.V3() {
				v := e.Videos[key]
				if len(v.Missing) > 0 {
					return invalid("", fmt.Errorf("episode %d has no %s timing metadata (missing %s)", e.Index, key, strings.Join(v.Missing, ", ")))
				}
				vals["chunk_index"], vals["file_index"] = v.Chunk, v.File
				ep.FromNS, ep.ToNS = video.SecondsToNS(v.From), video.SecondsToNS(v.To)
			} else {
				vals["episode_chunk"], vals["episode_index"] = e.Index/d.ChunksSize, e.Index
				secs := float64(e.Length) / d.FPS
				if secs*1e9 >= math.MaxInt64 {
					return invalid(d.EpisodeFiles[0], fmt.Errorf("episode %d: length %d frames lasts %.3g s at %g fps, beyond any video", e.Index, e.Length, secs, d.FPS))
				}
				ep.FromNS, ep.ToNS = 0, video.SecondsToNS(secs)
			}
			rel, err := formatTemplate(d.VideoPath, vals)
			if err != nil {
				return invalid("meta/info.json", fmt.Errorf("video_path: %w", err))
			}
			if a := ins.appending; a != nil && e.Index < a.from() {
				committedRels[rel] = true // converted: its footage is not read again
				a.holds(rel, e.Index)
				continue
			}
			f := byRel[rel]
			if f == nil && d.lance != nil {
				v := e.Videos[key]
				lv := d.lance.video(key, v.Chunk, v.File)
				if lv == nil {
					return lanceInvalid(videosTable, -1, "", fmt.Errorf("no row has video_key %q, chunk_index %d and file_index %d, the camera file of episode %d (%s)", key, v.Chunk, v.File, e.Index, rel))
				}
				f = &VideoFile{Key: key, Rel: rel, Path: lv.loc.Path, Offset: lv.loc.Offset, Size: lv.loc.Size, Row: lv.row}
				byRel[rel] = f
				vf.Files = append(vf.Files, f)
			}
			if f == nil {
				en, err := d.tree.Stat(rel)
				if errors.Is(err, fs.ErrNotExist) {
					return invalid("", fmt.Errorf("%s: %s", key, d.missing(rel)))
				} else if err != nil {
					return invalid(rel, fmt.Errorf("%s: %w", key, srcfile.Cause(err)))
				}
				f = &VideoFile{Key: key, Rel: rel, Path: en.Path, Size: en.Size, Row: -1}
				if d.tree.Remote() {
					f.Path = d.tree.Path(rel)
				}
				byRel[rel] = f
				vf.Files = append(vf.Files, f)
			}
			f.Episodes = append(f.Episodes, ep)
		}
		for _, f := range vf.Files {
			slices.SortStableFunc(f.Episodes, func(a, b video.Episode) int { return cmpInt(a.FromNS, b.FromNS) })
			f.Grown = committedRels[f.Rel]
		}
		if a := ins.appending; a != nil {
			a.keptVideoFiles += len(committedRels)
			for _, f := range vf.Files {
				if f.Grown {
					a.keptVideoFiles--
				}
			}
		}
		slices.SortFunc(vf.Files, func(a, b *VideoFile) int { return strings.Compare(a.Rel, b.Rel) })
		ins.Videos = append(ins.Videos, vf)
	}
	return nil
}

// maxProblems bounds the problems listed in one refusal.
const maxProblems = 10

// validateIntervals refuses inconsistent episode metadata of every camera
// file before any video is read.
func (ins *Inspection) validateIntervals() error {
	var problems []string
	for _, vf := range ins.Videos {
		for _, f := range vf.Files {
			err := video.ValidateEpisodes(f.Key, f.Rel, f.Episodes, ins.videoOptions())
			problems = appendProblems(problems, err)
		}
	}
	return refuse(problems)
}

// appendProblems adds the problems of a video refusal.
func appendProblems(problems []string, err error) []string {
	if err == nil {
		return problems
	}
	var ie *video.InconsistentError
	if errors.As(err, &ie) {
		for _, p := range ie.Problems {
			problems = append(problems, p.String())
		}
		return problems
	}
	return append(problems, err.Error())
}

// refuse turns the problems into one error naming up to maxProblems.
func refuse(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	shown := problems
	if len(shown) > maxProblems {
		shown = append(slices.Clone(shown[:maxProblems]), fmt.Sprintf("... and %d more", len(problems)-maxProblems))
	}
	return invalid("", fmt.Errorf("video metadata is inconsistent, refusing to write a misleading index: %s", strings.Join(shown, "; ")))
}

func (ins *Inspection) videoOptions() video.Options {
	return video.Options{FPS: ins.Dataset.FPS, ToleranceFrames: ins.Options.ToleranceFrames}
}

// scanVideos reads every camera file's packet timing, checks the episodes
// against the keyframes and decides which files are cut.
func (ins *Inspection) scanVideos(ctx context.Context) error {
	var problems []string
	for _, vf := range ins.Videos {
		for _, f := range vf.Files {
			scan, err := ins.scan(ctx, f)
			var ce *checkError
			if errors.As(err, &ce) {
				return ce.err
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return invalid("", fmt.Errorf("%s: %s: %w", f.Key, f.Rel, err))
			}
			onStreamAxis(f.Episodes, scan)
			rep, err := video.CheckBoundaries(scan, f.Key, f.Rel, f.Episodes, ins.videoOptions())
			if err != nil {
				problems = appendProblems(problems, err)
				continue
			}
			f.Report = rep
			for _, w := range rep.Warnings {
				ins.Warnings = append(ins.Warnings, fmt.Sprintf("%s: %s: %s", f.Key, f.Rel, w))
			}
			ins.decide(f)
			if f.Grown && !f.Split {
				problems = append(problems, fmt.Sprintf("%s: %s holds episodes the output holds and new ones, which cannot be cut out by packet copy (%s), and it cannot be packed whole again beside its converted copy: convert the dataset again without --append",
					f.Key, f.Rel, strings.Join(f.Reasons, "; ")))
			}
		}
	}
	return refuse(problems)
}

// onStreamAxis moves the episodes' intervals, which LeRobot counts from the
// file's first frame (its loader picks frame round(t*fps) of the file), onto
// the video stream's own time axis, where a file may start after 0 (a
// stream offset, an edit list's empty edit): every interval is shifted by
// the PTS of the first frame presented. From then on the intervals are
// what a decoder seeks to, in the checks, the cuts and video_index.json.
func onStreamAxis(eps []video.Episode, scan *video.Scan) {
	start, _, ok := scan.FootageNS()
	if !ok || start <= 0 {
		return
	}
	add := func(t int64) int64 {
		if t > math.MaxInt64-start {
			return math.MaxInt64 // refused later as past the end of the video
		}
		return t + start
	}
	for i := range eps {
		eps[i].FromNS, eps[i].ToNS = add(eps[i].FromNS), add(eps[i].ToNS)
	}
}

// decide sets f.Split and f.Reasons.
func (ins *Inspection) decide(f *VideoFile) {
	if !ins.Dataset.V3() {
		return // one file per episode already
	}
	rep := f.Report
	if f.Grown {
		if ins.Options.NoSplitEpisodes {
			f.Reasons = []string{"--no-split-episodes"}
			return
		}
		dec := rep.Decide()
		f.Split, f.Reasons = dec.Split, dec.Reasons
		return
	}
	if len(f.Episodes) == 1 && rep.PreRollNS == 0 && rep.TrailingNS == 0 {
		f.Reasons = []string{"one episode spanning the whole file"}
		return
	}
	if ins.Options.NoSplitEpisodes {
		f.Reasons = []string{"--no-split-episodes"}
		return
	}
	dec := rep.Decide()
	f.Split = dec.Split
	f.Reasons = dec.Reasons
}

// inspectTables inspects data/ for the image features.
func (ins *Inspection) inspectTables(ctx context.Context) error {
	d := ins.Dataset
	dataDir := filepath.Join(d.Root, "data")
	if _, err := d.file("data"); errors.Is(err, srcfile.ErrOutside) {
		return invalid("data", err)
	}
	pins, err := parquet.Inspect(ctx, dataDir, ins.parquetOptions())
	if err != nil {
		return tableErr(err)
	}
	var cols []string
	for _, key := range d.ImageKeys {
		found := false
		for _, c := range pins.Candidates {
			if len(c.Path) == 1 && c.Path[0] == key {
				ins.Images = append(ins.Images, ImageFeature{Key: key, Frames: c.Rows, Candidate: c})
				cols = append(cols, key)
				found = true
			}
		}
		if !found {
			return invalid("", fmt.Errorf("image feature %q: no table under data/ holds it as binary or {bytes, path} frames", key))
		}
	}
	sel, err := pins.Select(cols, nil)
	if err != nil {
		return tableErr(err)
	}
	ins.Tables, ins.selection = pins, sel
	ins.Warnings = append(ins.Warnings, pins.Warnings...)
	return nil
}

// tableErr marks convert/parquet's input errors (and a selection it
// refuses, which only a dataset whose features contradict its tables can
// cause) as this package's, located under data/.
func tableErr(err error) error {
	if errors.Is(err, convert.ErrInvalidInput) || errors.Is(err, parquet.ErrBadSelection) {
		return invalid("data", err)
	}
	return err
}

// parquetOptions are the convert/parquet options for data/: LeRobot's keys
// frames/<feature>/<table path under data/ without .parquet>/<row:08d><ext>,
// one placement group per row (named by table path and row).
func (ins *Inspection) parquetOptions() parquet.Options {
	o := ins.Options
	return parquet.Options{
		Options: convert.Options{PackOptions: o.PackOptions, ToolVersion: o.ToolVersion},
		Keys:    frameKey,
		Media:   parquet.MediaString, // image features become reference strings, as LeRobot's converted tables declare them
	}
}

// frameKey names an extracted frame as the reference converter does.
func frameKey(id parquet.PayloadID) (key, group string) {
	table := strings.TrimSuffix(id.Table, ".parquet")
	key = fmt.Sprintf("frames/%s/%s/%08d", strings.Join(id.Path, "."), table, id.Row)
	for _, s := range id.Sub {
		key += fmt.Sprintf("-%04d", s)
	}
	return key, fmt.Sprintf("%s-%d", table, id.Row)
}

// noTotals passes progress on but keeps the totals Convert announced.
type noTotals struct{ progress.Counter }

func (noTotals) SetTotal(items, bytes int64) {}

// checkError is a camera file that checkVideoFile refused.
type checkError struct{ err error }

func (e *checkError) Error() string { return e.err.Error() }

// videoFail blames the camera file f (the row of videos.lance holding it,
// for a dataset stored as Lance).
func videoFail(f *VideoFile, err error, hint string) error {
	ie := convert.Invalid("lerobot", f.Rel, fmt.Errorf("%s: %w", f.Key, err))
	if f.Row >= 0 { // a blob of videos.lance
		ie.File, ie.Row = videosTable, f.Row
		ie.Err = fmt.Errorf("%s (%s): %w", f.Key, f.Rel, err)
	}
	ie.Hint = hint
	return ie
}

// checkVideoFile checks that a local camera file still has the size it
// was listed with and that its MP4 boxes tile it (see checkBoxes).
func checkVideoFile(f *VideoFile) error {
	r, err := srcfile.Open(f.Path)
	if err != nil {
		return videoFail(f, srcfile.Cause(err), "")
	}
	defer r.Close()
	fi, err := r.Stat()
	if err != nil {
		return videoFail(f, err, "")
	}
	if fi.Size() != f.Size {
		return videoFail(f, fmt.Errorf("the file changed size while it was read (%d bytes, then %d)", f.Size, fi.Size()), "")
	}
	return checkBoxes(f, io.NewSectionReader(r, 0, f.Size))
}

// checkBoxes checks that the MP4 boxes of f, read from r, tile it (see
// video.CheckBoxes): libav reads a file that lost its last bytes as if it
// were shorter.
func checkBoxes(f *VideoFile, r io.ReaderAt) error {
	if err := video.CheckBoxes(r, f.Size); err != nil {
		hint := "the video is incomplete (an interrupted copy or download): fetch it again"
		if f.Row >= 0 {
			hint = "the blob is not a complete MP4 file: convert the dataset to Lance again from its source"
		}
		return videoFail(f, fmt.Errorf("not a complete MP4 file: %w", err), hint)
	}
	return nil
}

// scan checks the camera file f (an error of checkVideoFile comes as a
// *checkError) and reads its packet timing: from the file, or through an
// io.ReaderAt from its blob (a dataset stored as Lance) or its object (a
// dataset in a bucket), opened once for both.
func (ins *Inspection) scan(ctx context.Context, f *VideoFile) (*video.Scan, error) {
	e := ins.Options.Engine
	if f.Row < 0 && !ins.Dataset.tree.Remote() {
		if err := checkVideoFile(f); err != nil {
			return nil, &checkError{err}
		}
		return e.ScanKeyframes(ctx, f.Path)
	}
	r, in, err := ins.input(ctx, f)
	if err != nil {
		return nil, &checkError{err}
	}
	defer r.Close()
	if err := checkBoxes(f, in.R); err != nil {
		return nil, &checkError{err}
	}
	s, err := e.ScanInput(ctx, in)
	if err == nil {
		s.Input.R = nil // closed here; Convert opens the file again to cut it
	}
	return s, err
}

// input opens what holds f's bytes (the Lance data or sidecar file of its
// blob, locally or in a bucket, or its object in a bucket) and returns it,
// to close, and the video.Input reading exactly f's bytes. A blob must lie
// inside its file.
func (ins *Inspection) input(ctx context.Context, f *VideoFile) (io.Closer, video.Input, error) {
	if f.Row >= 0 {
		r, err := ins.Dataset.blobSection(ctx, f.Path, f.Offset, f.Size)
		if err != nil {
			return nil, video.Input{}, videoFail(f, srcfile.Cause(err), "")
		}
		return r, video.Input{Name: fmt.Sprintf("%s row %d", videosTable, f.Row), R: r, Size: f.Size}, nil
	}
	t := ins.Dataset.tree
	r, err := t.Open(ctx, f.Rel)
	if err != nil {
		return nil, video.Input{}, videoFail(f, srcfile.Cause(err), "")
	}
	if r.Size() != f.Size {
		r.Close()
		return nil, video.Input{}, videoFail(f, fmt.Errorf("the object changed size while it was read (%d bytes, then %d)", f.Size, r.Size()), "")
	}
	return r, video.Input{Name: t.Path(f.Rel), R: r, Size: f.Size}, nil
}
