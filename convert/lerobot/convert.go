package lerobot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/convert/parquet"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/internal/workpool"
	"github.com/bpconvert/bpconvert/packcore"
	"github.com/bpconvert/bpconvert/plan"
	"github.com/bpconvert/bpconvert/progress"
	"github.com/bpconvert/bpconvert/srctree"
	"github.com/bpconvert/bpconvert/stage"
)

// cutDir is the directory, inside the staging directory, that holds episode
// containers between cutting and packing; it is removed before the commit.
const cutDir = ".cut"

// Result summarises a conversion.
type Result struct {
	// Videos counts the video blobs packed (episode containers and whole
	// files); Cut those that are episode containers.
	Videos, Cut int
	// Frames counts the frames extracted from tables (null cells excluded).
	Frames int64
	// Tables counts the tables rewritten; Copied the files copied under
	// data/ and meta/.
	Tables, Copied int
	// IndexEntries counts the entries of video_index.json.
	IndexEntries int
	// FrameRows counts the rows of the frames table (FramesFile).
	FrameRows int64
	// Pack is what the pack writer wrote.
	Pack packcore.Stats
	// Summary is the run's summary for the CLI: format, source,
	// destination, pack figures, the counts above and the inspection's
	// warnings (status, exit code and duration are the caller's).
	Summary plan.Summary
}

// videoBlob is one video blob to pack.
type videoBlob struct {
	episode int64 // first episode it holds, for ordering and its group
	key     string
	member  string
	path    string
	object  string // the camera file's name in a dataset in a bucket, else ""
	offset  int64  // of the blob in path (a dataset stored as Lance), else -1
	size    int64
	temp    bool // a cut container to remove once packed
	entries []videoindex.Entry
	// frames holds, per entry, the presentation time (ns, on the blob's
	// stream axis) of every frame of the episode, in order.
	frames [][]int64
}

// Convert writes the converted dataset to dst, which must not exist (or be
// an empty directory) and must not overlap the source, reporting progress
// to prog (nil for none). Of a dataset in a bucket it fetches every file it
// packs or copies once, front to back with read-ahead (a camera file it
// cuts, through libav's ranged reads), and no file it does not write. Everything is written into a staging directory
// beside dst (convert.Begin), renamed into place only when complete; on
// error nothing is left at dst.
//
// Camera files are packed in (episode, camera) order with the placement
// group episode-<N>, so one episode's cameras share a shard: whole files under
// their path relative to the dataset, cut episodes under
// <path without suffix>/episode_<N:06d><suffix>. Cutting writes every episode
// container of the dataset to the staging directory before packing them, so
// it needs free space for one more copy of the cut files.
func Convert(ctx context.Context, ins *Inspection, dst convert.Dest, prog progress.Counter) (*Result, error) {
	if ins.Options.NoProbe && len(ins.Videos) > 0 {
		return nil, errors.New("lerobot: the camera files were not probed (Options.NoProbe): plan only")
	}
	res, err := convertTo(ctx, ins, dst, prog)
	return res, storeFirst(ins.Dataset.tree, err)
}

func convertTo(ctx context.Context, ins *Inspection, dst convert.Dest, prog progress.Counter) (*Result, error) {
	o := ins.Options
	d := ins.Dataset
	prog = progress.OrNop(prog)
	out, err := convert.Begin(ctx, dst, convert.OutputOptions{Pack: o.PackOptions, Sources: []convert.Source{{Tree: d.tree}}, Progress: prog, Base: o.Base})
	if err != nil {
		return nil, err
	}
	defer out.Abort()

	res := &Result{}
	var items, bytes int64
	for _, vf := range ins.Videos {
		for _, f := range vf.Files {
			bytes += f.Size
			if f.Split {
				items += int64(len(f.Episodes))
			} else {
				items++
			}
		}
	}
	for _, im := range ins.Images {
		items += im.Frames
		bytes += im.Candidate.ChunkBytes
	}
	prog.SetTotal(items, bytes)

	blobs, err := ins.cut(ctx, out.Path(cutDir), ins.partFiles(o.Part))
	if err != nil {
		return nil, err
	}
	var entries []videoindex.Entry
	cells := map[cellKey]frameCell{}
	var warnings []string
	for _, b := range blobs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ref string
		switch group := fmt.Sprintf("episode-%d", b.episode); {
		case b.object != "":
			ref, err = addObject(ctx, out, d.tree, b.member, b.object, b.size, group)
		case b.offset >= 0:
			ref, err = addBlob(ctx, out, d, b.member, b.path, b.offset, b.size, group)
		default:
			ref, err = addFile(ctx, out, b.member, b.path, b.size, group)
		}
		if err != nil {
			return nil, fmt.Errorf("lerobot: %s: %w", b.member, err)
		}
		if b.temp {
			if err := os.Remove(b.path); err != nil {
				return nil, err
			}
			res.Cut++
		}
		res.Videos++
		prog.Add(1, b.size)
		for i, e := range b.entries {
			e.Ref = ref
			entries = append(entries, e)
			cells[cellKey{e.EpisodeIndex, e.VideoKey}] = frameCell{ref: ref, pts: b.frames[i]}
		}
	}
	if err := os.RemoveAll(out.Path(cutDir)); err != nil {
		return nil, err
	}

	if ins.Tables != nil {
		r, err := parquet.ConvertTo(ctx, ins.Tables, ins.selection, out.Path("data"), out, ins.parquetOptions(), noTotals{prog})
		if err != nil {
			return nil, tableErr(err)
		}
		res.Tables = r.Rewritten
		res.Copied += r.Copied + r.Files
	} else if ins.lanceTables != nil {
		if o.Part.I <= 1 {
			n, err := ins.writeLanceTables(ctx, out.Path(""))
			if err != nil {
				return nil, err
			}
			res.Tables = n
		}
	} else if ins.appending != nil {
		n, err := ins.appendFiles(ctx, out)
		if err != nil {
			return nil, err
		}
		res.Copied += n
	} else if o.Part.I <= 1 {
		n, err := d.copyTree(ctx, "data", out.Path("data"))
		if err != nil {
			return nil, err
		}
		res.Copied += n
	}
	if o.Part.I <= 1 && ins.appending == nil { // the whole run, or part 1 of a split one
		n, err := d.copyTree(ctx, "meta", out.Path("meta"))
		if err != nil {
			return nil, err
		}
		res.Copied += n
		if len(ins.Videos) > 0 {
			// The videos are packed: info.json says where they went.
			if err := rewriteInfoFile(out.Path("meta/info.json"), convert.MediaDir, d.StorageFormat); err != nil {
				return nil, fmt.Errorf("lerobot: %w", err)
			}
		}
	}

	if len(entries) > 0 {
		if warnings, err = ins.writeIndexes(ctx, out, entries, cells, res); err != nil {
			return nil, err
		}
	}
	stats, err := out.Commit()
	if err != nil {
		return nil, err
	}
	res.Pack = stats
	res.Frames = stats.Members - int64(res.Videos)
	res.Summary = out.Summary(plan.Summary{
		Format: "LeRobot",
		Source: d.Root,
		Counts: plan.Counts{
			{Name: "videos", N: int64(res.Videos)},
			{Name: "episode containers", N: int64(res.Cut)},
			{Name: "index entries", N: int64(res.IndexEntries)},
			{Name: "frame rows", N: res.FrameRows},
			{Name: "extracted frames", N: res.Frames},
			{Name: "rewritten tables", N: int64(res.Tables)},
			{Name: "copied files", N: int64(res.Copied)},
		},
		Warnings: append(append([]string{}, ins.Warnings...), warnings...),
	})
	if a, sa := ins.appending, res.Summary.Appended; a != nil && sa != nil {
		// Counted in episodes, as the plan counts them.
		sa.Sources, sa.Skipped, sa.Removed = len(a.fresh), len(a.episodes), 0
	}
	return res, nil
}

// writeIndexes writes video_index.json and the frames table (every part of
// a split run writes every row, with the cells of its camera files),
// counting them in res. It returns warnings for the summary.
func (ins *Inspection) writeIndexes(ctx context.Context, out *convert.Output, entries []videoindex.Entry, cells map[cellKey]frameCell, res *Result) ([]string, error) {
	d := ins.Dataset
	var keys []string
	for _, vf := range ins.Videos {
		keys = append(keys, vf.Key)
	}
	src := videoindex.Source{CodebaseVersion: d.Version, FPS: videoindex.Float(d.FPS), VideoKeys: keys}
	eps := datasetEpisodes(d)
	mem := memory.DefaultAllocator
	if a := ins.appending; a != nil {
		// The committed entries and rows first, read back from the output.
		committed, err := a.committedIndex(ctx)
		if err != nil {
			return nil, err
		}
		if entries, err = mergeIndex(committed, src, entries, a.from()); err != nil {
			return nil, err
		}
		old, err := a.committedFrames(ctx, mem, keys, cells)
		if err != nil {
			return nil, err
		}
		eps = append(old, slices.DeleteFunc(eps, func(e frameEpisode) bool { return e.episode < a.from() })...)
	}
	ix := videoindex.New(src, entries)
	if err := videoindex.WriteFile(out.Path(videoindex.FileName), ix); err != nil {
		return nil, fmt.Errorf("lerobot: %w", err)
	}
	res.IndexEntries = len(entries)
	n, err := writeFrames(ctx, mem, out.Path(FramesFile), eps, keys, cells)
	if err != nil {
		return nil, fmt.Errorf("lerobot: %s: %w", FramesFile, err)
	}
	res.FrameRows = n.rows
	if n.nulls > 0 {
		return []string{fmt.Sprintf("%s: %d camera cell(s) are null: the video holds fewer frames than the episode's length", FramesFile, n.nulls)}, nil
	}
	return nil, nil
}

// cut splits the files planned for it into containers under dir and returns
// every video blob to pack, in (episode, camera) order, with the index
// entries each one carries (references filled in when packed).
func (ins *Inspection) cut(ctx context.Context, dir string, keep func(*VideoFile) bool) ([]videoBlob, error) {
	var blobs []videoBlob
	for _, vf := range ins.Videos {
		for fi, f := range vf.Files {
			if !keep(f) {
				continue
			}
			if !f.Split {
				b := videoBlob{episode: int64(f.Episodes[0].Index), key: f.Key, member: f.Rel, path: f.Path, offset: -1, size: f.Size}
				if f.Row >= 0 {
					b.offset = f.Offset
				} else if ins.Dataset.tree.Remote() {
					b.path, b.object = "", f.Rel
				}
				for _, e := range f.Episodes {
					b.episode = min(b.episode, int64(e.Index))
					b.entries = append(b.entries, videoindex.Entry{EpisodeIndex: int64(e.Index), VideoKey: f.Key,
						FromNS: e.FromNS, ToNS: e.ToNS, Frames: e.Frames})
					var frames []int64
					if f.Report != nil {
						frames = f.Report.Scan.FramesNS(e.FromNS, e.ToNS, f.Report.ToleranceNS)
					}
					b.frames = append(b.frames, frames)
				}
				blobs = append(blobs, b)
				continue
			}
			out := filepath.Join(dir, fmt.Sprintf("%s-%d", vf.Key, fi))
			if err := os.MkdirAll(out, 0o755); err != nil {
				return nil, err
			}
			outs, err := ins.split(ctx, f, out)
			if err != nil {
				if errors.Is(err, video.ErrNotSplittable) || errors.Is(err, video.ErrInconsistent) {
					return nil, invalid("", fmt.Errorf("%s: %s: %w", f.Key, f.Rel, err))
				}
				return nil, fmt.Errorf("lerobot: %s: %s: %w", f.Key, f.Rel, err)
			}
			ext := path.Ext(f.Rel)
			base := strings.TrimSuffix(f.Rel, ext)
			for _, o := range outs {
				e := o.Episode
				declared := e.ToNS - e.FromNS
				span := o.SpanNS
				if diff := span - declared; diff > int64(video.DefaultBoundaryTolerance) || -diff > int64(video.DefaultBoundaryTolerance) {
					span = min(span, declared)
				}
				start, frames, err := ins.cutFrames(ctx, o.Path, declared, f.Report.ToleranceNS)
				if err != nil {
					return nil, fmt.Errorf("lerobot: %s: episode %d: %w", f.Rel, e.Index, err)
				}
				blobs = append(blobs, videoBlob{
					episode: int64(e.Index), key: f.Key, path: o.Path, offset: -1, size: o.Bytes, temp: true,
					member: fmt.Sprintf("%s/episode_%06d%s", base, e.Index, ext),
					entries: []videoindex.Entry{{EpisodeIndex: int64(e.Index), VideoKey: f.Key,
						FromNS: start, ToNS: start + span, Frames: e.Frames}},
					frames: [][]int64{frames},
				})
			}
		}
	}
	slices.SortStableFunc(blobs, func(a, b videoBlob) int {
		return cmp.Or(cmp.Compare(a.episode, b.episode), strings.Compare(a.key, b.key), strings.Compare(a.member, b.member))
	})
	return blobs, nil
}

// cutFrames reads back the packet timing of the episode container at p,
// as a decoder of it will see it, and returns where its footage starts and
// the presentation times of the episode's frames (the first length
// nanoseconds of footage), both on the container's own stream axis.
func (ins *Inspection) cutFrames(ctx context.Context, p string, length, tol int64) (int64, []int64, error) {
	scan, err := ins.Options.Engine.ScanKeyframes(ctx, p)
	if err != nil {
		return 0, nil, fmt.Errorf("reading back the episode container: %w", err)
	}
	start, _, ok := scan.FootageNS()
	if !ok {
		return 0, nil, errors.New("the episode container has no frames to present")
	}
	return start, scan.FramesNS(start, start+length, tol), nil
}

// partFiles returns which camera files part p packs: in the order of
// their first episode (then camera), a contiguous run balanced by bytes
// (see convert.Part.Range), so an episode's cameras mostly share a part.
// The whole run packs every file.
func (ins *Inspection) partFiles(p convert.Part) func(*VideoFile) bool {
	if p.Whole() {
		return func(*VideoFile) bool { return true }
	}
	type item struct {
		f       *VideoFile
		episode int
		key     string
	}
	var items []item
	for _, vf := range ins.Videos {
		for _, f := range vf.Files {
			first := math.MaxInt
			for _, e := range f.Episodes {
				first = min(first, e.Index)
			}
			items = append(items, item{f, first, f.Key})
		}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.episode, b.episode), strings.Compare(a.key, b.key))
	})
	sizes := make([]int64, len(items))
	for i, it := range items {
		sizes[i] = it.f.Size
	}
	lo, hi := p.Range(sizes)
	keep := map[*VideoFile]bool{}
	for _, it := range items[lo:hi] {
		keep[it.f] = true
	}
	return func(f *VideoFile) bool { return keep[f] }
}

// addFile packs the local file p, of size bytes.
func addFile(ctx context.Context, w convert.Packer, key, p string, size int64, group string) (string, error) {
	f, err := srcfile.Open(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	return w.Add(key, f, size, group)
}

// addBlob packs the size bytes from offset of the Lance data or sidecar
// file at loc (a blob of videos.lance; in a bucket, streamed with
// read-ahead that stays inside the blob).
func addBlob(ctx context.Context, w convert.Packer, d *Dataset, key, loc string, offset, size int64, group string) (string, error) {
	f, err := d.blobSection(ctx, loc, offset, size)
	if err != nil {
		return "", fmt.Errorf("%s: %w", loc, err)
	}
	defer f.Close()
	r := srctree.Stream(ctx, f)
	defer r.Close()
	return w.Add(key, r, size, group)
}

// addObject packs the object rel of a dataset in a bucket, of size bytes,
// streamed with read-ahead.
func addObject(ctx context.Context, w convert.Packer, t *srctree.Tree, key, rel string, size int64, group string) (string, error) {
	f, err := t.Open(ctx, rel)
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.Path(rel), err)
	}
	defer f.Close()
	if f.Size() != size {
		return "", invalid(rel, fmt.Errorf("the object changed size since it was listed (%d bytes, then %d)", size, f.Size()))
	}
	r := srctree.Stream(ctx, f)
	defer r.Close()
	return w.Add(key, r, size, group)
}

// split cuts f into one container per episode under dir, reading its blob
// in place for a dataset stored as Lance, its object through ranged reads
// for a dataset in a bucket.
func (ins *Inspection) split(ctx context.Context, f *VideoFile, dir string) ([]video.Output, error) {
	if f.Row < 0 && !ins.Dataset.tree.Remote() {
		return ins.Options.Engine.Split(ctx, f.Report, video.DirDest(dir))
	}
	r, in, err := ins.input(ctx, f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	s := *f.Report.Scan
	s.Input = &in
	rep := *f.Report
	rep.Scan = &s
	return ins.Options.Engine.Split(ctx, &rep, video.DirDest(dir))
}

// copyTree copies every regular file under dir (relative to the root)
// into dst (same relative paths), returning how many. A missing dir copies
// nothing. Other kinds of files (symlinks, devices) are refused, named by
// their path relative to the root. Objects of a dataset in a bucket are
// fetched front to back, a few at once.
func (d *Dataset) copyTree(ctx context.Context, dir, dst string) (int, error) {
	if !d.tree.Remote() {
		return copyTree(ctx, d.Root, dir, dst)
	}
	var names []string
	err := d.tree.Walk(ctx, dir, func(e srctree.Entry) error {
		names = append(names, e.Name)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	err = workpool.Run(ctx, len(names), copiesInFlight, func(ctx context.Context, i int) error {
		rel := names[i]
		out := filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(rel, dir+"/")))
		return d.copyObject(ctx, rel, out)
	})
	if err != nil {
		return 0, err
	}
	return len(names), ctx.Err()
}

// copiesInFlight bounds the objects copyTree fetches at once.
const copiesInFlight = 4

// copyObject copies the object rel to the new file out, written under a
// temporary name and renamed into place.
func (d *Dataset) copyObject(ctx context.Context, rel, out string) error {
	f, err := d.tree.Open(ctx, rel)
	if err != nil {
		return invalid(rel, srcfile.Cause(err))
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	w, err := atomicfile.Create(out, 0o644)
	if err != nil {
		return err
	}
	defer w.Abort()
	r := srctree.Stream(ctx, f)
	defer r.Close()
	if n, err := io.Copy(w, r); err != nil {
		return fmt.Errorf("lerobot: %s: %w", d.tree.Path(rel), err)
	} else if n != f.Size() {
		return invalid(rel, fmt.Errorf("%d bytes read of %d", n, f.Size()))
	}
	return w.Commit()
}

// copyTree copies every regular file under root/dir into dst (same
// relative paths), returning how many. A missing root/dir copies nothing.
// Other kinds of files (symlinks, devices) are refused, named by their path
// relative to root.
func copyTree(ctx context.Context, root, dir, dst string) (int, error) {
	src := filepath.Join(root, dir)
	n := 0
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(out, 0o755)
		case e.Type().IsRegular():
			n++
			return stage.CopyFile(ctx, p, out)
		}
		return invalid(path.Join(dir, filepath.ToSlash(rel)), errors.New("not a regular file or directory"))
	})
	if errors.Is(err, fs.ErrNotExist) && n == 0 {
		if _, serr := os.Stat(src); errors.Is(serr, fs.ErrNotExist) {
			return 0, nil
		}
	}
	return n, err
}
