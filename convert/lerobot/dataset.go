package lerobot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/bpconvert/bpconvert/convert"
	"github.com/bpconvert/bpconvert/internal/srcfile"
	"github.com/bpconvert/bpconvert/objstore"
	"github.com/bpconvert/bpconvert/srctree"
)

// Versions are the codebase versions this package converts.
var Versions = []string{"v2.0", "v2.1", "v3.0"}

// defaultChunksSize is LeRobot's DEFAULT_CHUNK_SIZE, used when info.json
// has no chunks_size.
const defaultChunksSize = 1000

// Dataset is what a LeRobot dataset's metadata says, read without touching
// its tables' rows or its videos.
type Dataset struct {
	// Root is the dataset directory (absolute), or its s3:// location.
	Root string
	// Version is info.json's codebase_version: "v2.0", "v2.1" or "v3.0".
	Version string
	// FPS is info.json's fps.
	FPS float64
	// ChunksSize is info.json's chunks_size (episodes per chunk directory
	// in v2.x).
	ChunksSize int64
	// DataPath and VideoPath are the info.json templates; VideoPath is ""
	// when info.json has none (null).
	DataPath, VideoPath string
	// TotalEpisodes and TotalFrames are info.json's totals (0 when absent).
	TotalEpisodes, TotalFrames int64
	// VideoKeys and ImageKeys are the features with dtype "video" and
	// "image", sorted; Features every feature's name, sorted.
	VideoKeys, ImageKeys, Features []string
	// Episodes are sorted by Index.
	Episodes []Episode
	// EpisodeFiles are the files the episodes were read from, relative to
	// Root, slash-separated.
	EpisodeFiles []string
	// StorageFormat is info.json's storage_format: StorageParquet (also
	// when absent, LeRobot's default: tables under data/, camera files
	// under videos/) or StorageLance (frames.lance, videos.lance and
	// meta.lance; see lancestore.go).
	StorageFormat string

	// lance holds what the Lance tables say, for StorageLance.
	lance *lanceStore

	// tree reads the dataset's files, from a directory or a bucket.
	tree *srctree.Tree
	// rootReal is a local Root with its symbolic links resolved: no file
	// the conversion reads may resolve outside it.
	rootReal string
}

// maxInfoBytes bounds meta/info.json (real ones are a few KiB).
const maxInfoBytes = 64 << 20

// file checks that rel (slash-separated, relative to the root) is a
// regular file of the dataset, whose symbolic links stay inside it, and
// returns the path to open (the real path of a local file, "" for an
// object in a bucket). Errors do not repeat rel, which callers name; a
// missing file matches fs.ErrNotExist.
func (d *Dataset) file(rel string) (string, error) {
	e, err := d.tree.Stat(rel)
	if err != nil {
		return "", srcfile.Cause(err)
	}
	return e.Path, nil
}

// missing says that rel is not in the dataset, naming the object of a
// dataset in a bucket.
func (d *Dataset) missing(rel string) string {
	if d.tree.Remote() {
		return d.tree.Path(rel) + " is missing (no such object)"
	}
	return rel + " is missing from " + d.Root
}

// storeFirst returns the failure of the store a read of the dataset met,
// when there was one, instead of err: a table that does not parse because
// the bucket stopped answering is not bad input (exit 3) but a failure
// (exit 1, or 2 for refused credentials).
func storeFirst(t *srctree.Tree, err error) error {
	if err == nil || t == nil {
		return err
	}
	if serr := t.Err(); serr != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("lerobot: %w", serr)
	}
	return err
}

// V3 reports whether the dataset uses the v3.0 layout (many episodes per file).
func (d *Dataset) V3() bool { return strings.HasPrefix(d.Version, "v3.") }

// Frames returns the frame count: the sum of the episode lengths, or
// info.json's total_frames when no episode has a length.
func (d *Dataset) Frames() int64 {
	var n int64
	for _, e := range d.Episodes {
		n += e.Length
	}
	if n == 0 {
		return d.TotalFrames
	}
	return n
}

// Episode is one row of the episode metadata.
type Episode struct {
	Index int64
	// Length is the episode's frame count ("length", or
	// dataset_to_index - dataset_from_index).
	Length int64
	// DataChunk and DataFile locate the v3.0 data file (-1 when absent).
	DataChunk, DataFile int64
	// From and To are dataset_from_index and dataset_to_index, the
	// episode's frames [From, To) of the whole dataset (v3.0; -1 when
	// absent).
	From, To int64
	// Videos holds the v3.0 per-camera location and interval, by video key.
	Videos map[string]EpisodeVideo
}

// EpisodeVideo is where one v3.0 episode lives in one camera's files.
type EpisodeVideo struct {
	Chunk, File int64
	// From and To are from_timestamp and to_timestamp in seconds; HasFrom
	// and HasTo say whether the metadata holds them.
	From, To       float64
	HasFrom, HasTo bool
	// Missing names the per-camera columns absent or null for this episode.
	Missing []string
}

// rawInfo is the part of meta/info.json this package reads.
type rawInfo struct {
	CodebaseVersion *string                    `json:"codebase_version"`
	FPS             *float64                   `json:"fps"`
	ChunksSize      *float64                   `json:"chunks_size"`
	DataPath        *string                    `json:"data_path"`
	VideoPath       *string                    `json:"video_path"`
	TotalEpisodes   *float64                   `json:"total_episodes"`
	StorageFormat   *string                    `json:"storage_format"`
	TotalFrames     *float64                   `json:"total_frames"`
	Features        map[string]json.RawMessage `json:"features"`
}

// Open reads meta/info.json and the episode metadata of the dataset at src
// (meta/episodes.jsonl for v2.x, every meta/episodes/**/*.parquet for v3.0)
// and, for a dataset stored as Lance, the Lance tables' metadata and the
// rows of videos.lance but their bytes (see openLanceStore). It reads no
// video and writes nothing. src is a local directory or an s3:// location
// (see OpenTree). Problems with the dataset are *convert.InputError values.
func Open(ctx context.Context, src string) (*Dataset, error) {
	t, err := openTree(ctx, src, objstore.Options{})
	if err != nil {
		return nil, err
	}
	return OpenTree(ctx, t)
}

// openTree opens src as a source tree, wording the failures of a local
// directory as Open always has; a bucket's failures (missing bucket,
// refused credentials) stay the store's errors.
func openTree(ctx context.Context, src string, o objstore.Options) (*srctree.Tree, error) {
	t, err := srctree.Open(ctx, src, o)
	var local *srctree.LocalError
	switch {
	case err == nil:
		return t, nil
	case !errors.As(err, &local):
		return nil, fmt.Errorf("lerobot: %w", err)
	case errors.Is(err, srctree.ErrNotDir):
		return nil, notDir(src)
	}
	return nil, invalid(src, srcfile.Cause(err))
}

// OpenSource opens the dataset at src (a local directory, or a prefix in a
// bucket listed now, its reads counted in o.Stats when set) as a
// converter's source (see convert.Options.Source). A local file is opened
// as such, for the checks that come before the dataset is read (the plan
// refuses it); another local path that cannot be opened gives a
// *srctree.LocalError, and a store's failures (a missing bucket, refused
// credentials) are its own. A directory or prefix that holds nothing is
// an *InputError.
func OpenSource(ctx context.Context, src string, o objstore.Options) (convert.Source, error) {
	t, err := srctree.Open(ctx, src, o)
	if errors.Is(err, srctree.ErrNotDir) {
		var file string
		if t, file, err = srctree.OpenSource(ctx, src, o); err == nil {
			return convert.Source{Tree: t, File: file}, nil
		}
	}
	if err != nil {
		return convert.Source{}, err
	}
	if t.Empty() {
		return convert.Source{}, convert.Invalid("convert-lerobot", "", fmt.Errorf("%s holds no objects; a LeRobot dataset holds meta/info.json", t.Location()))
	}
	return convert.Source{Tree: t}, nil
}

// notDir is the error of a dataset named as a file.
func notDir(name string) error {
	return invalid("", fmt.Errorf("%s is not a directory; a LeRobot dataset is a directory holding meta/info.json", name))
}

// OpenTree is Open for a dataset opened as a source tree: a local
// directory, or a prefix in a bucket, whose files are read with ranged
// requests (meta/ files whole, episode tables by footer and column; the
// Lance tables of a dataset stored as Lance by manifest, file metadata and
// pages, through lancefmt/lancestore).
func OpenTree(ctx context.Context, t *srctree.Tree) (*Dataset, error) {
	d, err := openTreeDataset(ctx, t)
	return d, storeFirst(t, err)
}

func openTreeDataset(ctx context.Context, t *srctree.Tree) (*Dataset, error) {
	root := t.Location()
	d := &Dataset{Root: root, tree: t, ChunksSize: defaultChunksSize, StorageFormat: StorageParquet}
	if !t.Remote() {
		real, err := filepath.EvalSymlinks(root)
		if err != nil {
			return nil, invalid(root, err)
		}
		d.rootReal = real
	} else if t.Empty() {
		return nil, invalid("", fmt.Errorf("%s holds no objects; a LeRobot dataset holds meta/info.json", root))
	}
	ri, err := readInfo(ctx, t)
	if err != nil {
		return nil, err
	}
	for _, step := range []func(*rawInfo) error{d.infoVersion, d.infoPaths, d.infoFeatures} {
		if err := step(&ri); err != nil {
			return nil, err
		}
	}
	if d.V3() {
		err = d.readEpisodesV3(ctx)
	} else {
		err = d.readEpisodesV2(ctx)
	}
	if err != nil {
		return nil, err
	}
	if len(d.Episodes) == 0 {
		return nil, invalid("", fmt.Errorf("%s: no episodes", strings.Join(d.EpisodeFiles, ", ")))
	}
	if d.StorageFormat == StorageLance {
		if d.lance, err = openLanceStore(ctx, d); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(d.Episodes, func(a, b Episode) int { return cmpInt(a.Index, b.Index) })
	for i := 1; i < len(d.Episodes); i++ {
		if d.Episodes[i].Index == d.Episodes[i-1].Index {
			return nil, invalid("", fmt.Errorf("episode %d appears twice in the episode metadata", d.Episodes[i].Index))
		}
	}
	return d, nil
}

// readInfo reads and parses meta/info.json.
func readInfo(ctx context.Context, t *srctree.Tree) (rawInfo, error) {
	root := t.Location()
	b, err := t.ReadFile(ctx, "meta/info.json", maxInfoBytes)
	if errors.Is(err, fs.ErrNotExist) {
		ie := convert.Invalid("lerobot", "", fmt.Errorf("%s does not look like a LeRobot dataset (meta/info.json is missing)", root))
		if t.Remote() {
			ie.Err = fmt.Errorf("%s does not look like a LeRobot dataset (%s is missing)", root, t.Path("meta/info.json"))
		}
		if isDir, _ := t.IsDir(framesTable); isDir {
			ie.Hint = "a LeRobot dataset stored as Lance keeps meta/ beside frames.lance; copy it too (converting from meta.lance, its copy for object storage, is not supported)"
		}
		return rawInfo{}, ie
	}
	if err != nil {
		return rawInfo{}, invalid("meta/info.json", srcfile.Cause(err))
	}
	var ri rawInfo
	if err := json.Unmarshal(b, &ri); err != nil {
		return rawInfo{}, invalid("meta/info.json", err)
	}
	if ri.CodebaseVersion == nil {
		return rawInfo{}, invalid("meta/info.json", errors.New("no codebase_version"))
	}
	return ri, nil
}

// infoVersion takes the codebase version and storage format from info.json.
func (d *Dataset) infoVersion(ri *rawInfo) error {
	d.Version = *ri.CodebaseVersion
	if !slices.Contains(Versions, d.Version) {
		return invalid("meta/info.json", fmt.Errorf("unsupported codebase_version %q; expected one of %s", d.Version, strings.Join(Versions, ", ")))
	}
	if sf := ri.StorageFormat; sf != nil && *sf != "" {
		switch *sf {
		case StorageParquet:
		case StorageLance:
			if !d.V3() {
				return invalid("meta/info.json", fmt.Errorf("storage_format %q with codebase_version %q: LeRobot stores only v3.0 datasets as Lance", *sf, d.Version))
			}
			d.StorageFormat = StorageLance
		default:
			return invalid("meta/info.json", fmt.Errorf("unsupported storage_format %q; expected %q (tables under data/, mp4 files under videos/) or %q (frames.lance, videos.lance and meta.lance)", *sf, StorageParquet, StorageLance))
		}
	}
	return nil
}

// infoPaths takes the frame rate, chunk size, path templates and totals
// from info.json.
func (d *Dataset) infoPaths(ri *rawInfo) error {
	if ri.FPS == nil || !(*ri.FPS > 0) || math.IsInf(*ri.FPS, 0) {
		return invalid("meta/info.json", errors.New("fps is missing or not a positive number"))
	}
	d.FPS = *ri.FPS
	if ri.ChunksSize != nil {
		if *ri.ChunksSize < 1 || *ri.ChunksSize != math.Trunc(*ri.ChunksSize) {
			return invalid("meta/info.json", fmt.Errorf("chunks_size %v is not a positive integer", *ri.ChunksSize))
		}
		d.ChunksSize = int64(*ri.ChunksSize)
	}
	if ri.DataPath == nil || *ri.DataPath == "" {
		return invalid("meta/info.json", errors.New("no data_path template"))
	}
	d.DataPath = *ri.DataPath
	if ri.VideoPath != nil {
		d.VideoPath = *ri.VideoPath
	}
	if ri.TotalEpisodes != nil {
		d.TotalEpisodes = int64(*ri.TotalEpisodes)
	}
	if ri.TotalFrames != nil {
		d.TotalFrames = int64(*ri.TotalFrames)
	}
	return nil
}

// infoFeatures takes the features from info.json: video and image ones
// sorted by name, at least one of them.
func (d *Dataset) infoFeatures(ri *rawInfo) error {
	for name, raw := range ri.Features {
		var f struct {
			DType string `json:"dtype"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return invalid("meta/info.json", fmt.Errorf("feature %q: %w", name, err))
		}
		d.Features = append(d.Features, name)
		switch f.DType {
		case "video":
			d.VideoKeys = append(d.VideoKeys, name)
		case "image":
			d.ImageKeys = append(d.ImageKeys, name)
		}
	}
	slices.Sort(d.VideoKeys)
	slices.Sort(d.ImageKeys)
	slices.Sort(d.Features)
	if len(d.VideoKeys) == 0 && len(d.ImageKeys) == 0 {
		return invalid("meta/info.json", errors.New("no video or image features; nothing to convert"))
	}
	if len(d.VideoKeys) > 0 && d.VideoPath == "" {
		return invalid("meta/info.json", errors.New("video features but no video_path template"))
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readEpisodesV2 reads meta/episodes.jsonl.
func (d *Dataset) readEpisodesV2(ctx context.Context) error {
	const rel = "meta/episodes.jsonl"
	f, err := d.tree.Open(ctx, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return invalid("", fmt.Errorf("%s is missing", rel))
	}
	if err != nil {
		return invalid(rel, srcfile.Cause(err))
	}
	defer f.Close()
	r := srctree.Stream(ctx, f)
	defer r.Close()
	d.EpisodeFiles = []string{rel}
	eps, err := parseEpisodesJSONL(r, rel)
	if err != nil {
		return err
	}
	d.Episodes = append(d.Episodes, eps...)
	return nil
}

// parseEpisodesJSONL parses the v2.x episode metadata rel (one JSON object
// a line), refusing rows without an index or a positive length.
func parseEpisodesJSONL(r io.Reader, rel string) ([]Episode, error) {
	var eps []Episode
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var row struct {
			EpisodeIndex *int64 `json:"episode_index"`
			Length       *int64 `json:"length"`
		}
		if err := json.Unmarshal(text, &row); err != nil {
			return nil, invalid(rel, fmt.Errorf("line %d: %w", line, err))
		}
		if row.EpisodeIndex == nil || *row.EpisodeIndex < 0 {
			return nil, invalid(rel, fmt.Errorf("line %d: no episode_index", line))
		}
		if row.Length == nil || *row.Length <= 0 {
			return nil, invalid(rel, fmt.Errorf("line %d: episode %d has no positive length", line, *row.EpisodeIndex))
		}
		eps = append(eps, Episode{Index: *row.EpisodeIndex, Length: *row.Length, DataChunk: -1, DataFile: -1, From: -1, To: -1})
	}
	if err := sc.Err(); err != nil {
		return nil, invalid(rel, err)
	}
	return eps, nil
}

// readEpisodesV3 reads every meta/episodes/**/*.parquet.
func (d *Dataset) readEpisodesV3(ctx context.Context) error {
	var files []string
	err := d.tree.Walk(ctx, "meta/episodes", func(e srctree.Entry) error {
		if !e.Mode.IsDir() && strings.HasSuffix(e.Name, ".parquet") {
			files = append(files, e.Name)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(files) == 0) {
		return invalid("", errors.New("meta/episodes/**/*.parquet: no episode metadata"))
	}
	if err != nil {
		return err
	}
	slices.Sort(files)
	for _, rel := range files {
		d.EpisodeFiles = append(d.EpisodeFiles, rel)
		f, err := d.tree.Open(ctx, rel)
		if err != nil {
			return invalid(rel, srcfile.Cause(err))
		}
		eps, err := readEpisodeTable(ctx, f, d.VideoKeys)
		f.Close()
		if err != nil {
			return invalid(rel, err)
		}
		d.Episodes = append(d.Episodes, eps...)
	}
	return nil
}

// readEpisodeTable reads the columns this package needs from one v3.0
// episode metadata table: its footer, then those columns' chunks.
func readEpisodeTable(ctx context.Context, r sizedReaderAt, videoKeys []string) ([]Episode, error) {
	mem := memory.DefaultAllocator
	pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, r.Size()))
	if err != nil {
		return nil, fmt.Errorf("not a readable parquet file: %w", err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, err
	}
	sc, err := fr.Schema()
	if err != nil {
		return nil, err
	}
	n := int(pf.NumRows())
	cols := map[string][]*float64{}
	read := func(name string) error {
		idx := sc.FieldIndices(name)
		if len(idx) == 0 {
			return nil
		}
		cr, err := fr.GetColumn(ctx, idx[0])
		if err != nil {
			return fmt.Errorf("column %q: %w", name, err)
		}
		rgs := make([]int, pf.NumRowGroups())
		for i := range rgs {
			rgs[i] = i
		}
		ch, err := fr.ReadColumn(rgs, cr)
		if err != nil {
			return fmt.Errorf("column %q: %w", name, err)
		}
		defer ch.Release()
		vals, err := numbers(ch)
		if err != nil {
			return fmt.Errorf("column %q: %w", name, err)
		}
		if len(vals) != n {
			return fmt.Errorf("column %q: %d values for %d rows", name, len(vals), n)
		}
		cols[name] = vals
		return nil
	}
	names := []string{"episode_index", "length", "dataset_from_index", "dataset_to_index", "data/chunk_index", "data/file_index"}
	for _, k := range videoKeys {
		for _, c := range videoColumns {
			names = append(names, "videos/"+k+"/"+c)
		}
	}
	for _, name := range names {
		if err := read(name); err != nil {
			return nil, err
		}
	}
	if cols["episode_index"] == nil {
		return nil, errors.New("no episode_index column")
	}
	at := func(name string, i int) (float64, bool) {
		c := cols[name]
		if c == nil || c[i] == nil {
			return 0, false
		}
		return *c[i], true
	}
	eps := make([]Episode, 0, n)
	for i := 0; i < n; i++ {
		idx, ok := at("episode_index", i)
		if !ok || idx < 0 {
			return nil, fmt.Errorf("row %d: no episode_index", i)
		}
		e := Episode{Index: int64(idx), DataChunk: -1, DataFile: -1, From: -1, To: -1}
		if from, ok := at("dataset_from_index", i); ok {
			if to, ok := at("dataset_to_index", i); ok {
				e.From, e.To = int64(from), int64(to)
			}
		}
		if l, ok := at("length", i); ok {
			e.Length = int64(l)
		} else if e.From >= 0 {
			e.Length = e.To - e.From
		}
		if e.Length <= 0 {
			return nil, fmt.Errorf("episode %d: no positive length (length or dataset_to_index - dataset_from_index)", e.Index)
		}
		if c, ok := at("data/chunk_index", i); ok {
			if f, ok := at("data/file_index", i); ok {
				e.DataChunk, e.DataFile = int64(c), int64(f)
			}
		}
		if len(videoKeys) > 0 {
			e.Videos = map[string]EpisodeVideo{}
		}
		for _, k := range videoKeys {
			var v EpisodeVideo
			pre := "videos/" + k + "/"
			var c, f float64
			var okc, okf bool
			if c, okc = at(pre+"chunk_index", i); !okc {
				v.Missing = append(v.Missing, pre+"chunk_index")
			}
			if f, okf = at(pre+"file_index", i); !okf {
				v.Missing = append(v.Missing, pre+"file_index")
			}
			v.Chunk, v.File = int64(c), int64(f)
			if v.From, v.HasFrom = at(pre+"from_timestamp", i); !v.HasFrom {
				v.Missing = append(v.Missing, pre+"from_timestamp")
			}
			if v.To, v.HasTo = at(pre+"to_timestamp", i); !v.HasTo {
				v.Missing = append(v.Missing, pre+"to_timestamp")
			}
			e.Videos[k] = v
		}
		eps = append(eps, e)
	}
	return eps, nil
}

// sizedReaderAt reads a file of known size.
type sizedReaderAt interface {
	io.ReaderAt
	Size() int64
}

// videoColumns are the per-camera columns of v3.0 episode metadata.
var videoColumns = []string{"chunk_index", "file_index", "from_timestamp", "to_timestamp"}

// numbers returns a numeric column's values as float64 (nil for null).
func numbers(ch *arrow.Chunked) ([]*float64, error) {
	var out []*float64
	for _, a := range ch.Chunks() {
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				out = append(out, nil)
				continue
			}
			var v float64
			switch a := a.(type) {
			case *array.Int64:
				v = float64(a.Value(i))
			case *array.Int32:
				v = float64(a.Value(i))
			case *array.Int16:
				v = float64(a.Value(i))
			case *array.Int8:
				v = float64(a.Value(i))
			case *array.Uint64:
				v = float64(a.Value(i))
			case *array.Uint32:
				v = float64(a.Value(i))
			case *array.Uint16:
				v = float64(a.Value(i))
			case *array.Uint8:
				v = float64(a.Value(i))
			case *array.Float64:
				v = a.Value(i)
			case *array.Float32:
				v = float64(a.Value(i))
			default:
				return nil, fmt.Errorf("type %s is not numeric", a.DataType())
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				out = append(out, nil)
				continue
			}
			out = append(out, &v)
		}
	}
	return out, nil
}
