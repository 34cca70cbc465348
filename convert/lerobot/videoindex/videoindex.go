// Package videoindex writes and reads video_index.json, the file that tells
// a loader where each LeRobot episode's video lives after conversion: one
// entry per episode and camera with a blob reference and a half-open
// [from_ns, to_ns) interval in integer nanoseconds on the referenced
// container's own stream axis (the presentation timestamps a decoder of the
// blob reports, in nanoseconds rounded up), which the index says in its
// interval_axis field. The schema is the reference converter's
// ("blobpack/lerobot-video-index@1") plus that field, written as its
// json.dumps(indent=1) output, so loaders written for it work unchanged.
//
// It is free of cgo on purpose: the rest of bpconvert builds without libav.
// It does not compute intervals or cut video (that is convert/lerobot/video)
// and does not resolve references into packs.
package videoindex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/srcfile"
)

// Format is the format id written in every index.
const Format = "blobpack/lerobot-video-index@1"

// Note is the fixed explanation the reference writes into every index.
const Note = "Video is packet-copied, never re-encoded. Each entry addresses one episode as a half-open [from_ns, to_ns) interval of its blob, per the Blob Pack media-container rule; an episode cut into its own container spans that container whole."

// StreamAxis is the interval_axis of an index whose intervals are on the
// referenced container's stream axis: from_ns and to_ns are presentation
// timestamps as a decoder of the blob reports them, ceil(pts * 1e9 *
// time_base), so a file whose stream starts after 0 has its episodes
// there, not at 0. It is the axis of the pts_ns of MediaRef frame cells.
const StreamAxis = "stream_pts_ns"

// FileName is the index's name at the root of the converted dataset.
const FileName = "video_index.json"

// Float is a float64 that is always written with a decimal point or
// exponent, as Python writes floats (10.0, not 10).
type Float float64

// MarshalJSON writes f the way Python's json module does.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("videoindex: %v is not a JSON number", v)
	}
	var s string
	if abs := math.Abs(v); abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		// Python's repr switches to exponents outside [1e-4, 1e16); both
		// write at least two exponent digits ("1e-05", "1e+16")
		s = strconv.FormatFloat(v, 'e', -1, 64)
	} else {
		s = strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
	}
	return []byte(s), nil
}

// Source describes the dataset the index was made from.
type Source struct {
	CodebaseVersion string   `json:"codebase_version"` // as in meta/info.json, e.g. "v3.0"
	FPS             Float    `json:"fps"`
	VideoKeys       []string `json:"video_keys"` // the converted video features
}

// Entry addresses one episode of one camera.
type Entry struct {
	EpisodeIndex int64  `json:"episode_index"`
	VideoKey     string `json:"video_key"`
	// Ref is a blob reference, "zip://<member>::<ref base>/pack-NNNN.zip".
	Ref string `json:"ref"`
	// FromNS and ToNS are the half-open interval in nanoseconds on the
	// blob's stream axis (Index.IntervalAxis); an episode cut into its own
	// container starts where that container's footage starts (0 as the
	// cut writes it).
	FromNS int64 `json:"from_ns"`
	ToNS   int64 `json:"to_ns"`
	Frames int64 `json:"frames"`
}

// Index is the whole video_index.json.
type Index struct {
	Format string `json:"format"`
	Source Source `json:"source"`
	Note   string `json:"note"`
	// IntervalAxis says which time axis the intervals are on: StreamAxis.
	// An index written before it existed has none.
	IntervalAxis string  `json:"interval_axis,omitempty"`
	Episodes     []Entry `json:"episodes"`
}

// New returns an index of entries (sorted by episode, then video key)
// with the format id and note filled in.
func New(src Source, entries []Entry) *Index {
	e := append([]Entry(nil), entries...)
	sort.SliceStable(e, func(i, j int) bool {
		if e[i].EpisodeIndex != e[j].EpisodeIndex {
			return e[i].EpisodeIndex < e[j].EpisodeIndex
		}
		return e[i].VideoKey < e[j].VideoKey
	})
	if src.VideoKeys == nil {
		src.VideoKeys = []string{}
	}
	return &Index{Format: Format, Source: src, Note: Note, IntervalAxis: StreamAxis, Episodes: e}
}

// Validate checks what a loader relies on: the format id, every entry with
// a reference, a non-empty interval starting at or after 0 and a positive
// frame count, its video key listed in the source, one entry per episode
// and key, sorted by episode then key.
func (ix *Index) Validate() error {
	if ix.Format != Format {
		return fmt.Errorf("videoindex: format %q, want %q", ix.Format, Format)
	}
	if ix.IntervalAxis != "" && ix.IntervalAxis != StreamAxis {
		return fmt.Errorf("videoindex: interval_axis %q, want %q", ix.IntervalAxis, StreamAxis)
	}
	keys := map[string]bool{}
	for _, k := range ix.Source.VideoKeys {
		keys[k] = true
	}
	var errs []error
	for i, e := range ix.Episodes {
		at := fmt.Sprintf("videoindex: episode %d %q", e.EpisodeIndex, e.VideoKey)
		switch {
		case e.Ref == "":
			errs = append(errs, fmt.Errorf("%s: empty ref", at))
		case !keys[e.VideoKey]:
			errs = append(errs, fmt.Errorf("%s: video key not listed in source.video_keys", at))
		case e.FromNS < 0 || e.ToNS <= e.FromNS:
			errs = append(errs, fmt.Errorf("%s: interval [%d, %d) is empty, reversed or negative", at, e.FromNS, e.ToNS))
		case e.Frames <= 0:
			errs = append(errs, fmt.Errorf("%s: frames %d is not positive", at, e.Frames))
		}
		if i > 0 {
			p := ix.Episodes[i-1]
			if p.EpisodeIndex == e.EpisodeIndex && p.VideoKey == e.VideoKey {
				errs = append(errs, fmt.Errorf("%s: listed twice", at))
			} else if p.EpisodeIndex > e.EpisodeIndex || (p.EpisodeIndex == e.EpisodeIndex && p.VideoKey > e.VideoKey) {
				errs = append(errs, fmt.Errorf("%s: not sorted by (episode_index, video_key)", at))
			}
		}
	}
	return errors.Join(errs...)
}

// Encode writes ix as the reference does (json.dumps(indent=1), ASCII
// only, then a newline). It validates first.
func (ix *Index) Encode(w io.Writer) error {
	if err := ix.Validate(); err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(ix); err != nil {
		return fmt.Errorf("videoindex: %w", err)
	}
	_, err := w.Write(asciiEscape(buf.Bytes()))
	return err
}

// asciiEscape rewrites every non-ASCII character as \uXXXX (a surrogate
// pair above U+FFFF), as Python's ensure_ascii does. In JSON text such
// characters occur only inside strings, so this is safe.
func asciiEscape(b []byte) []byte {
	var out bytes.Buffer
	for _, r := range string(b) {
		if r < 0x80 {
			out.WriteByte(byte(r))
			continue
		}
		if r > 0xFFFF {
			a, c := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, a, c)
			continue
		}
		fmt.Fprintf(&out, `\u%04x`, r)
	}
	return out.Bytes()
}

// Read parses and validates an index.
func Read(r io.Reader) (*Index, error) {
	var ix Index
	dec := json.NewDecoder(r)
	if err := dec.Decode(&ix); err != nil {
		return nil, fmt.Errorf("videoindex: %w", err)
	}
	if err := ix.Validate(); err != nil {
		return nil, err
	}
	return &ix, nil
}

// ReadFile reads and validates the index at path, a regular file (a FIFO
// is refused, not waited on); errors name path.
func ReadFile(path string) (*Index, error) {
	f, err := srcfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("videoindex: %w", srcfile.Named("open", path, err))
	}
	defer f.Close()
	ix, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ix, nil
}

// WriteFile writes ix to path under a temporary name in the same
// directory, syncs, renames and syncs the directory. It refuses to replace
// an existing file.
func WriteFile(path string, ix *Index) error {
	var buf bytes.Buffer
	if err := ix.Encode(&buf); err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("videoindex: %s: %w", path, os.ErrExist)
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("videoindex: %w", err)
	}
	return nil
}
