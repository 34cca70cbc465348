package lerobot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/convert/parquet"
	"github.com/bpconvert/bpconvert/packcore"
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
	// Pack is what the pack writer wrote.
	Pack packcore.Stats
}

// videoBlob is one video blob to pack.
type videoBlob struct {
	episode int64 // first episode it holds, for ordering and its group
	key     string
	member  string
	path    string
	size    int64
	temp    bool // a cut container to remove once packed
	entries []videoindex.Entry
}

// Convert writes the converted dataset to dst, which must not exist (or be
// an empty directory) and must not overlap the source. Everything is written
// into a staging directory beside dst, renamed into place only when complete;
// on error nothing is left at dst.
//
// Camera files are packed in (episode, camera) order with the placement
// group episode-<N>, so one episode's cameras share a shard: whole files under
// their path relative to the dataset, cut episodes under
// <path without suffix>/episode_<N:06d><suffix>. Cutting writes every episode
// container of the dataset to the staging directory before packing them, so
// it needs free space for one more copy of the cut files.
func Convert(ctx context.Context, ins *Inspection, dst string) (res *Result, err error) {
	o := ins.Options
	d := ins.Dataset
	absDst, err := filepath.Abs(dst)
	if err != nil {
		return nil, err
	}
	if err := stage.CheckDisjoint(d.Root, absDst); err != nil {
		return nil, err
	}
	st, err := stage.Begin(absDst)
	if err != nil {
		return nil, err
	}
	defer st.Abort()
	w, err := packcore.Create(ctx, filepath.Join(st.Dir, parquet.MediaDir), packcore.WriterOptions{
		MaxPackBytes: o.MaxPackBytes,
		MaxMembers:   o.MaxMembers,
		NoManifest:   o.NoManifest,
		RefBase:      parquet.MediaDir,
		NoLock:       true,
		OnShard: func(s packcore.ShardInfo) {
			o.Progress.Milestone(fmt.Sprintf("wrote %s/%s (%d members)", parquet.MediaDir, s.Name, s.Members))
		},
	})
	if err != nil {
		return nil, err
	}
	defer w.Abort()

	res = &Result{}
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
	o.Progress.SetTotal(items, bytes)

	blobs, err := ins.cut(ctx, filepath.Join(st.Dir, cutDir))
	if err != nil {
		return nil, err
	}
	var entries []videoindex.Entry
	for _, b := range blobs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ref, err := addFile(ctx, w, b.member, b.path, b.size, fmt.Sprintf("episode-%d", b.episode))
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
		o.Progress.Add(1, b.size)
		for _, e := range b.entries {
			e.Ref = ref
			entries = append(entries, e)
		}
	}
	if err := os.RemoveAll(filepath.Join(st.Dir, cutDir)); err != nil {
		return nil, err
	}

	if ins.Tables != nil {
		r, err := parquet.ConvertTo(ctx, ins.Tables, ins.selection, filepath.Join(st.Dir, "data"), w, ins.parquetOptions())
		if err != nil {
			return nil, tableErr(err)
		}
		res.Tables = r.Rewritten
		res.Copied += r.Copied + r.Files
	} else {
		n, err := copyTree(ctx, filepath.Join(d.Root, "data"), filepath.Join(st.Dir, "data"))
		if err != nil {
			return nil, err
		}
		res.Copied += n
	}
	n, err := copyTree(ctx, filepath.Join(d.Root, "meta"), filepath.Join(st.Dir, "meta"))
	if err != nil {
		return nil, err
	}
	res.Copied += n

	if len(entries) > 0 {
		var keys []string
		for _, vf := range ins.Videos {
			keys = append(keys, vf.Key)
		}
		ix := videoindex.New(videoindex.Source{CodebaseVersion: d.Version, FPS: videoindex.Float(d.FPS), VideoKeys: keys}, entries)
		if err := videoindex.WriteFile(filepath.Join(st.Dir, videoindex.FileName), ix); err != nil {
			return nil, fmt.Errorf("lerobot: %w", err)
		}
		res.IndexEntries = len(entries)
	}
	stats, err := w.Close()
	if err != nil {
		return nil, err
	}
	res.Pack = stats
	res.Frames = stats.Members - int64(res.Videos)
	if err := st.Commit(); err != nil {
		return nil, err
	}
	return res, nil
}

// cut splits the files planned for it into containers under dir and returns
// every video blob to pack, in (episode, camera) order, with the index
// entries each one carries (references filled in when packed).
func (ins *Inspection) cut(ctx context.Context, dir string) ([]videoBlob, error) {
	var blobs []videoBlob
	for _, vf := range ins.Videos {
		for fi, f := range vf.Files {
			if !f.Split {
				b := videoBlob{episode: int64(f.Episodes[0].Index), key: f.Key, member: f.Rel, path: f.Path, size: f.Size}
				for _, e := range f.Episodes {
					b.episode = min(b.episode, int64(e.Index))
					b.entries = append(b.entries, videoindex.Entry{EpisodeIndex: int64(e.Index), VideoKey: f.Key,
						FromNS: e.FromNS, ToNS: e.ToNS, Frames: e.Frames})
				}
				blobs = append(blobs, b)
				continue
			}
			out := filepath.Join(dir, fmt.Sprintf("%s-%d", vf.Key, fi))
			if err := os.MkdirAll(out, 0o755); err != nil {
				return nil, err
			}
			outs, err := video.Split(ctx, f.Report, video.DirDest(out))
			if err != nil {
				if errors.Is(err, video.ErrNotSplittable) || errors.Is(err, video.ErrInconsistent) {
					return nil, invalid(fmt.Errorf("%s: %s: %w", f.Key, f.Rel, err))
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
				blobs = append(blobs, videoBlob{
					episode: int64(e.Index), key: f.Key, path: o.Path, size: o.Bytes, temp: true,
					member: fmt.Sprintf("%s/episode_%06d%s", base, e.Index, ext),
					entries: []videoindex.Entry{{EpisodeIndex: int64(e.Index), VideoKey: f.Key,
						FromNS: 0, ToNS: span, Frames: e.Frames}},
				})
			}
		}
	}
	slices.SortStableFunc(blobs, func(a, b videoBlob) int {
		return cmp.Or(cmp.Compare(a.episode, b.episode), strings.Compare(a.key, b.key), strings.Compare(a.member, b.member))
	})
	return blobs, nil
}

// addFile packs one file.
func addFile(ctx context.Context, w *packcore.Writer, key, p string, size int64, group string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return w.Add(key, f, size, group)
}

// copyTree copies every regular file under src into dst (same relative
// paths), returning how many. A missing src copies nothing. Other kinds of
// files (symlinks, devices) are refused.
func copyTree(ctx context.Context, src, dst string) (int, error) {
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
		return invalid(fmt.Errorf("%s is not a regular file or directory", p))
	})
	if errors.Is(err, fs.ErrNotExist) && n == 0 {
		if _, serr := os.Stat(src); errors.Is(serr, fs.ErrNotExist) {
			return 0, nil
		}
	}
	return n, err
}
