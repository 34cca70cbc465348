package lerobot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/srctree"
	"github.com/bpconvert/bpconvert/stage"
)

// Appending new episodes to a converted dataset (Options.Base).
//
// LeRobot grows a dataset by episodes: a new episode takes the next
// episode_index, and its rows, camera footage and metadata go either into
// the last files (v3.0: the data file and the episode metadata table are
// written again with the new rows, the camera file is concatenated again
// by packet copy) or into new files (a new file_index in v3.0; v2.x always
// writes one file per episode). The converted output keeps a copy of the
// source's episode metadata under meta/, so it says which episodes it
// holds: episodes 0 to n-1. An append converts the episodes numbered n and
// up, and only them:
//
//   - every committed episode must still be in the source with the same
//     metadata (length, rows, data file, and per camera its file and
//     interval); one that changed or disappeared stops the run (exit 3),
//     named;
//   - a camera file that holds new episodes only is converted as in a
//     conversion; one that also holds committed episodes (it grew) has its
//     new episodes cut out by packet copy, reading their packets only; if
//     they cannot be cut (a boundary off a keyframe), the run stops, since
//     the file cannot be packed whole again beside its committed copy;
//   - the data files that hold new episodes are copied (a grown one as a
//     complete new version that replaces the committed copy on commit),
//     and every file of meta/ that differs from the committed copy is
//     copied again (info.json rewritten as a conversion rewrites it);
//   - video_index.json and the frames table are written again: the
//     committed entries and rows, read from the output, then the new ones.
//
// Nothing else of the committed output is read, and no committed camera
// footage of the source.

// committedOutput reads the files of the committed output an append
// extends, by slash path relative to the destination.
type committedOutput interface {
	// ReadFile reads the committed file rel, of at most max bytes; a
	// missing file matches fs.ErrNotExist.
	ReadFile(ctx context.Context, rel string, max int64) ([]byte, error)
	// List lists the committed files under the directory rel, as slash
	// paths relative to the destination.
	List(ctx context.Context, rel string) ([]string, error)
	// recordSources are the source files the committed record identifies.
	recordSources() []convert.SourceFile
}

// maxCommittedTable bounds a committed table an append reads back (the
// episode metadata, the frames table, the video index).
const maxCommittedTable = 4 << 30

// appendState is what an append found in the committed output.
type appendState struct {
	out committedOutput
	// episodes are the committed episodes (the output's copy of the
	// source's episode metadata), sorted by index: 0 to len-1.
	episodes []Episode
	// fresh are the source's episodes the output does not hold.
	fresh []Episode
	// keptVideoFiles counts the camera files (per camera) holding
	// committed episodes only: not read.
	keptVideoFiles int
	// committedFiles maps the camera and data files (relative to the
	// root) holding committed episodes to the episodes they hold.
	committedFiles map[string][]int64
}

// holds notes that the source file rel holds the committed episode i.
func (a *appendState) holds(rel string, i int64) {
	if a.committedFiles == nil {
		a.committedFiles = map[string][]int64{}
	}
	if eps := a.committedFiles[rel]; !slices.Contains(eps, i) {
		a.committedFiles[rel] = append(eps, i)
	}
}

// checkCommittedFiles refuses, naming it and its episodes, a source file
// that holds committed episodes only (a camera or data file no new
// episode was added to) and that changed or disappeared since the output
// was committed: was lists the source files as the committed record has
// them, now as they are. fresh names the files holding new episodes,
// which may have grown. Sources are named as root (a directory or an
// s3:// location) joined with their path relative to it.
func (a *appendState) checkCommittedFiles(root string, was, now []convert.SourceFile, fresh map[string]bool) error {
	cur := make(map[string]convert.SourceFile, len(now))
	for _, f := range now {
		cur[f.Path] = f
	}
	var rels []string
	for rel := range a.committedFiles {
		rels = append(rels, rel)
	}
	slices.Sort(rels)
	byPath := make(map[string]convert.SourceFile, len(was))
	for _, f := range was {
		byPath[f.Path] = f
	}
	for _, rel := range rels {
		if fresh[rel] {
			continue
		}
		p := strings.TrimSuffix(root, "/") + "/" + rel
		old, ok := byPath[p]
		if !ok {
			continue // not identified by the committed record
		}
		eps := a.committedFiles[rel]
		slices.Sort(eps)
		what := fmt.Sprintf("episode %d", eps[0])
		if len(eps) > 1 {
			what = fmt.Sprintf("episodes %d-%d", eps[0], eps[len(eps)-1])
		}
		n, ok := cur[p]
		switch {
		case !ok:
			return invalid(rel, fmt.Errorf("it held %s, which the output holds, and is gone", what))
		case !convert.SameSource(old, n):
			return invalid(rel, fmt.Errorf("it holds %s, which the output holds, and changed since they were converted (%d bytes at %s, now %d bytes at %s)",
				what, old.Size, old.ModTime, n.Size, n.ModTime))
		}
	}
	return nil
}

// from is the first episode index the append converts.
func (a *appendState) from() int64 { return int64(len(a.episodes)) }

// readCommittedEpisodes reads the episode metadata of the committed
// output: its copy of the source's meta/episodes/**/*.parquet (v3.0) or
// meta/episodes.jsonl (v2.x).
func readCommittedEpisodes(ctx context.Context, out committedOutput, v3 bool, videoKeys []string) ([]Episode, error) {
	if !v3 {
		const rel = "meta/episodes.jsonl"
		b, err := out.ReadFile(ctx, rel, maxCommittedTable)
		if err != nil {
			return nil, fmt.Errorf("lerobot: the committed output's %s: %w", rel, err)
		}
		eps, err := parseEpisodesJSONL(bytes.NewReader(b), rel)
		if err != nil {
			return nil, fmt.Errorf("lerobot: the committed output's %w", err)
		}
		return eps, nil
	}
	names, err := out.List(ctx, "meta/episodes")
	if err != nil {
		return nil, fmt.Errorf("lerobot: the committed output's meta/episodes: %w", err)
	}
	var files []string
	for _, n := range names {
		if strings.HasSuffix(n, ".parquet") {
			files = append(files, n)
		}
	}
	slices.Sort(files)
	var eps []Episode
	for _, rel := range files {
		b, err := out.ReadFile(ctx, rel, maxCommittedTable)
		if err != nil {
			return nil, fmt.Errorf("lerobot: the committed output's %s: %w", rel, err)
		}
		got, err := readEpisodeTable(ctx, bytes.NewReader(b), videoKeys)
		if err != nil {
			return nil, fmt.Errorf("lerobot: the committed output's %s: %w", rel, err)
		}
		eps = append(eps, got...)
	}
	slices.SortFunc(eps, func(a, b Episode) int { return cmpInt(a.Index, b.Index) })
	return eps, nil
}

// selectEpisodes compares the committed episodes with the source's
// (both sorted by index) and returns the source's episodes the output does
// not hold: those numbered len(committed) and up. The committed episodes
// must be numbered 0 to len-1; each must still be in the source with the
// same metadata (see episodeChange), else the source changed under the
// output and the append is refused with a *convert.InputError naming the
// episode.
func selectEpisodes(committed, current []Episode, videoKeys []string) ([]Episode, error) {
	for i, e := range committed {
		if e.Index != int64(i) {
			return nil, fmt.Errorf("lerobot: the committed output's episode metadata holds episode %d where episode %d was expected; it was not written by this program", e.Index, i)
		}
	}
	n := int64(len(committed))
	byIndex := make(map[int64]Episode, len(current))
	var fresh []Episode
	for _, e := range current {
		byIndex[e.Index] = e
		if e.Index >= n {
			fresh = append(fresh, e)
		}
	}
	for _, was := range committed {
		now, ok := byIndex[was.Index]
		if !ok {
			return nil, invalid("", fmt.Errorf("episode %d, which the output holds, is no longer in the source's episode metadata", was.Index))
		}
		if what := episodeChange(was, now, videoKeys); what != "" {
			return nil, invalid("", fmt.Errorf("episode %d changed since it was converted (%s)", was.Index, what))
		}
	}
	return fresh, nil
}

// episodeChange says how the episode now differs from what was converted,
// was: "" when the metadata that places its rows and footage is the same.
func episodeChange(was, now Episode, videoKeys []string) string {
	var diffs []string
	num := func(name string, a, b int64) {
		if a != b {
			diffs = append(diffs, fmt.Sprintf("%s %d, now %d", name, a, b))
		}
	}
	num("length", was.Length, now.Length)
	num("dataset_from_index", was.From, now.From)
	num("dataset_to_index", was.To, now.To)
	num("data/chunk_index", was.DataChunk, now.DataChunk)
	num("data/file_index", was.DataFile, now.DataFile)
	for _, k := range videoKeys {
		a, b := was.Videos[k], now.Videos[k]
		pre := "videos/" + k + "/"
		num(pre+"chunk_index", a.Chunk, b.Chunk)
		num(pre+"file_index", a.File, b.File)
		if a.From != b.From || a.HasFrom != b.HasFrom {
			diffs = append(diffs, fmt.Sprintf("%sfrom_timestamp %g, now %g", pre, a.From, b.From))
		}
		if a.To != b.To || a.HasTo != b.HasTo {
			diffs = append(diffs, fmt.Sprintf("%sto_timestamp %g, now %g", pre, a.To, b.To))
		}
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more", len(diffs)-3))
	}
	return strings.Join(diffs, "; ")
}

// dataFiles returns the data files (relative to the root) that hold the
// episodes eps, in order, each once: where data_path places them.
func (d *Dataset) dataFiles(eps []Episode) ([]string, error) {
	var rels []string
	seen := map[string]bool{}
	for _, e := range eps {
		vals := map[string]any{}
		if d.V3() {
			if e.DataChunk < 0 {
				return nil, invalid("", fmt.Errorf("episode %d: the episode metadata does not say which data file holds it (data/chunk_index, data/file_index)", e.Index))
			}
			vals["chunk_index"], vals["file_index"] = e.DataChunk, e.DataFile
		} else {
			vals["episode_chunk"], vals["episode_index"] = e.Index/d.ChunksSize, e.Index
		}
		rel, err := formatTemplate(d.DataPath, vals)
		if err != nil {
			return nil, invalid("meta/info.json", fmt.Errorf("data_path: %w", err))
		}
		if !seen[rel] {
			seen[rel] = true
			rels = append(rels, rel)
		}
	}
	return rels, nil
}

// committedIndex reads the committed video_index.json.
func (a *appendState) committedIndex(ctx context.Context) (*videoindex.Index, error) {
	b, err := a.out.ReadFile(ctx, videoindex.FileName, maxCommittedTable)
	if err != nil {
		return nil, fmt.Errorf("lerobot: the committed output's %s: %w", videoindex.FileName, err)
	}
	ix, err := videoindex.Read(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("lerobot: the committed output's %s: %w", videoindex.FileName, err)
	}
	return ix, nil
}

// mergeIndex returns the committed index's entries followed by the new
// ones; the committed index must describe the same source (codebase
// version, frame rate and cameras) and hold no entry of a new episode.
func mergeIndex(committed *videoindex.Index, src videoindex.Source, fresh []videoindex.Entry, from int64) ([]videoindex.Entry, error) {
	c := committed.Source
	if c.CodebaseVersion != src.CodebaseVersion || c.FPS != src.FPS || !slices.Equal(c.VideoKeys, src.VideoKeys) {
		return nil, invalid("meta/info.json", fmt.Errorf("the source is now codebase %s at %g fps with cameras %s; the output was converted from codebase %s at %g fps with cameras %s",
			src.CodebaseVersion, float64(src.FPS), strings.Join(src.VideoKeys, ", "), c.CodebaseVersion, float64(c.FPS), strings.Join(c.VideoKeys, ", ")))
	}
	all := make([]videoindex.Entry, 0, len(committed.Episodes)+len(fresh))
	for _, e := range committed.Episodes {
		if e.EpisodeIndex >= from {
			return nil, fmt.Errorf("lerobot: the committed output's %s has an entry for episode %d, which its episode metadata does not hold", videoindex.FileName, e.EpisodeIndex)
		}
		all = append(all, e)
	}
	return append(all, fresh...), nil
}

// sameCommitted reports whether the committed file rel holds exactly b
// (false when it is missing).
func (a *appendState) sameCommitted(ctx context.Context, rel string, b []byte) (bool, error) {
	old, err := a.out.ReadFile(ctx, rel, int64(len(b))+1)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lerobot: the committed output's %s: %w", rel, err)
	}
	return bytes.Equal(old, b), nil
}

// committedOutput returns the committed output an append extends, or nil
// for a conversion.
func (o Options) committedOutput() committedOutput {
	if o.Base != nil {
		return baseOutput{o.Base}
	}
	return nil
}

// baseOutput reads the committed output through convert.Base.
type baseOutput struct{ b *convert.Base }

func (o baseOutput) ReadFile(ctx context.Context, rel string, max int64) ([]byte, error) {
	return o.b.ReadFile(ctx, rel, max)
}

func (o baseOutput) List(ctx context.Context, rel string) ([]string, error) {
	return o.b.List(ctx, rel)
}

func (o baseOutput) recordSources() []convert.SourceFile { return o.b.Record.Sources }

// appendPlan is the plan's account of an append, in episodes: the new
// ones and the bytes of the camera files they are cut from or packed as,
// and the committed ones, with the bytes of the camera files holding only
// them (not read).
func (ins *Inspection) appendPlan() *plan.AppendPlan {
	a := ins.appending
	p := &plan.AppendPlan{Unit: "episodes", New: len(a.fresh), Skipped: len(a.episodes)}
	for _, vf := range ins.Videos {
		for _, f := range vf.Files {
			p.NewBytes += f.Size
		}
	}
	if b := ins.Options.Base; b != nil {
		p.BaseShards = len(b.Shards)
		held := map[string]bool{}
		for _, vf := range ins.Videos {
			for _, f := range vf.Files {
				held[f.Rel] = true
			}
		}
		root := strings.TrimSuffix(ins.Dataset.Root, "/") + "/"
		for _, f := range b.Record.Sources {
			rel := strings.TrimPrefix(f.Path, root)
			if _, ok := a.committedFiles[rel]; ok && !held[rel] {
				p.SkippedBytes += f.Size
			}
		}
	}
	return p
}

// planAppend reads the committed output's episode metadata, checks the
// committed episodes against the source's and keeps the new ones for
// the inspection (locateVideos then places only them).
func (ins *Inspection) planAppend(ctx context.Context, out committedOutput) error {
	d, o := ins.Dataset, ins.Options
	switch {
	case d.lance != nil:
		return &convert.UsageError{Err: fmt.Errorf("lerobot: %s: appending to the conversion of a dataset stored as Lance is not supported", d.Root),
			Hint: "convert it again without --append"}
	case o.Images == ImagesExtract && len(d.ImageKeys) > 0:
		return &convert.UsageError{Err: fmt.Errorf("lerobot: %s: appending is not supported when image features are extracted from the tables (%s)", d.Root, strings.Join(d.ImageKeys, ", ")),
			Hint: "convert it again without --append"}
	case !o.Part.Whole():
		return &convert.UsageError{Err: errors.New("lerobot: an append runs as one process, not in parts (--part)")}
	}
	committed, err := readCommittedEpisodes(ctx, out, d.V3(), d.VideoKeys)
	if err != nil {
		return err
	}
	fresh, err := selectEpisodes(committed, d.Episodes, d.VideoKeys)
	if err != nil {
		return err
	}
	a := &appendState{out: out, episodes: committed, fresh: fresh}
	for _, e := range committed {
		rels, err := d.dataFiles([]Episode{e})
		if err != nil {
			return err
		}
		a.holds(rels[0], e.Index)
	}
	ins.appending = a
	return nil
}

// checkAppendSources refuses an append whose source changed under the
// output: a file holding committed episodes only that changed or
// disappeared since the commit (see checkCommittedFiles). The current
// identities are the record this run commits (Options.Record); without
// one, or without a committed record, only the episode metadata is
// compared.
func (ins *Inspection) checkAppendSources() error {
	a, rec := ins.appending, ins.Options.Record
	if rec == nil {
		return nil
	}
	fresh := map[string]bool{}
	rels, err := ins.Dataset.dataFiles(a.fresh)
	if err != nil {
		return err
	}
	for _, rel := range rels {
		fresh[rel] = true
	}
	for _, vf := range ins.Videos {
		for _, f := range vf.Files {
			fresh[f.Rel] = true
		}
	}
	return a.checkCommittedFiles(ins.Dataset.Root, a.out.recordSources(), rec.Sources, fresh)
}

// committedFrames reads the committed frames table: its episodes' rows,
// returned, and its cells, put into cells. It must have the cameras keys
// and no row of a new episode.
func (a *appendState) committedFrames(ctx context.Context, mem memory.Allocator, keys []string, cells map[cellKey]frameCell) ([]frameEpisode, error) {
	b, err := a.out.ReadFile(ctx, FramesFile, maxCommittedTable)
	if err != nil {
		return nil, fmt.Errorf("lerobot: the committed output's %s: %w", FramesFile, err)
	}
	same := func(ref string) (string, error) { return ref, nil }
	got, eps, err := readFramesFrom(ctx, mem, bytes.NewReader(b), FramesFile, same, cells)
	if err != nil {
		return nil, fmt.Errorf("lerobot: the committed output's %w", err)
	}
	if !slices.Equal(got, keys) {
		return nil, invalid("meta/info.json", fmt.Errorf("the source's cameras are %s; the output was converted with %s", strings.Join(keys, ", "), strings.Join(got, ", ")))
	}
	for _, e := range eps {
		if e.episode >= a.from() {
			return nil, fmt.Errorf("lerobot: the committed output's %s has rows of episode %d, which its episode metadata does not hold", FramesFile, e.episode)
		}
	}
	return eps, nil
}

// appendFiles writes into the staging directory what an append changes
// besides the packs and the indexes: the data files that hold new
// episodes (complete copies: a grown one replaces the committed copy) and
// every file of meta/ whose bytes (info.json as a conversion rewrites it)
// differ from the committed copy. It returns how many files it wrote.
func (ins *Inspection) appendFiles(ctx context.Context, out *convert.Output) (int, error) {
	d, a := ins.Dataset, ins.appending
	rels, err := d.dataFiles(a.fresh)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rel := range rels {
		if err := d.copyFile(ctx, rel, out.Path(rel)); err != nil {
			return n, err
		}
		n++
	}
	var metas []string
	err = d.tree.Walk(ctx, "meta", func(e srctree.Entry) error {
		if e.Mode.IsRegular() {
			metas = append(metas, e.Name)
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	for _, rel := range metas {
		b, err := d.tree.ReadFile(ctx, rel, maxCommittedTable)
		if err != nil {
			return n, invalid(rel, srcfile.Cause(err))
		}
		if rel == "meta/info.json" && len(ins.Videos) > 0 {
			if b, err = rewriteVideoPath(b, convert.MediaDir, d.StorageFormat); err != nil {
				return n, invalid(rel, err)
			}
		}
		if same, err := a.sameCommitted(ctx, rel, b); err != nil || same {
			if err != nil {
				return n, err
			}
			continue
		}
		p := out.Path(rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return n, err
		}
		if err := atomicfile.WriteFile(p, b, 0o644); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// copyFile copies the file rel of the dataset to the new file out.
func (d *Dataset) copyFile(ctx context.Context, rel, out string) error {
	if d.tree.Remote() {
		return d.copyObject(ctx, rel, out)
	}
	p, err := d.file(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return invalid("", errors.New(d.missing(rel)))
	}
	if err != nil {
		return invalid(rel, err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return stage.CopyFile(ctx, p, out)
}
