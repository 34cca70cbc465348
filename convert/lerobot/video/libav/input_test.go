//go:build cgo

package libav

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/convert/lerobot/video"
)

// embedded returns the bytes of path inside a larger buffer (junk before
// and after, as a blob sits inside a Lance data file) and a reader of
// exactly the file's range.
func embedded(t *testing.T, path string) (*io.SectionReader, int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pre, post := bytes.Repeat([]byte{0xA5}, 4099), bytes.Repeat([]byte("moov"), 1000)
	buf := append(append(append([]byte{}, pre...), b...), post...)
	return io.NewSectionReader(bytes.NewReader(buf), int64(len(pre)), int64(len(b))), int64(len(b))
}

// TestScanInput reads camera files through a reader of a range of a larger
// buffer: the scan equals the scan of the file, and the episode containers
// Split cuts from the reader are byte-identical to those cut from the file.
func TestScanInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, codec := range []string{"h264_bframes", "mpeg4"} { // mpeg4: Split probes the frame size
		t.Run(codec, func(t *testing.T) {
			fx := concatenated(t, codec)
			if fx.Skip != "" {
				t.Skip(fx.Skip)
			}
			want, err := ScanKeyframes(ctx, fx.Path)
			if err != nil {
				t.Fatal(err)
			}
			r, size := embedded(t, fx.Path)
			got, err := Engine{}.ScanInput(ctx, video.Input{Name: "videos.lance row 1", R: r, Size: size})
			if err != nil {
				t.Fatal(err)
			}
			if got.Path != "videos.lance row 1" || got.Input == nil || got.Input.Size != size {
				t.Errorf("scan names %q, input %+v", got.Path, got.Input)
			}
			g, w := *got, *want
			g.Path, g.Input, w.Path = "", nil, ""
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("scan of the reader differs from the scan of the file:\n got %+v\nwant %+v", g, w)
			}
			cut := func(s *video.Scan) []video.Output {
				rep, err := video.CheckBoundaries(s, "cam", "concat.mp4", fx.Episodes, video.Options{FPS: fixFPS})
				if err != nil {
					t.Fatal(err)
				}
				outs, err := Split(ctx, rep, video.DirDest(t.TempDir()))
				if err != nil {
					t.Fatal(err)
				}
				return outs
			}
			fromFile, fromReader := cut(want), cut(got)
			if len(fromReader) != len(fx.Episodes) || len(fromFile) != len(fromReader) {
				t.Fatalf("%d containers from the reader, %d from the file, %d episodes", len(fromReader), len(fromFile), len(fx.Episodes))
			}
			for i := range fromFile {
				a, _ := os.ReadFile(fromFile[i].Path)
				b, _ := os.ReadFile(fromReader[i].Path)
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("episode %d: container from the reader (%d bytes) differs from the one from the file (%d bytes)", i, len(b), len(a))
				}
				verifyCut(t, fx.Path, fx.Episodes[i], fromReader[i])
			}
		})
	}
}

// failingReader fails every read at or beyond off.
type failingReader struct {
	r   io.ReaderAt
	off int64
}

var errDisk = errors.New("disk on fire")

func (f failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.off {
		if off >= f.off {
			return 0, errDisk
		}
		n, _ := f.r.ReadAt(p[:f.off-off], off)
		return n, errDisk
	}
	return f.r.ReadAt(p, off)
}

// TestScanInputErrors: a reader that fails or ends before its size where
// the scan reads (the boxes ahead of the media data) is an error naming
// the input and the cause, never a shorter scan; one that fails inside the
// media data, which the scan leaves unread, fails Split the same way.
func TestScanInputErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fx := concatenated(t, "h264")
	if fx.Skip != "" {
		t.Skip(fx.Skip)
	}
	r, size := embedded(t, fx.Path)
	b, _ := os.ReadFile(fx.Path)
	media := video.MediaData(bytes.NewReader(b), size)
	if len(media) != 1 || media[0].Off > 4096 {
		t.Fatalf("media data %+v: the fixture's moov box should come first (+faststart)", media)
	}
	cases := []struct {
		name  string
		in    video.Input
		split bool // the scan succeeds, Split fails
		want  []string
	}{
		{"read error in the boxes", video.Input{Name: "row 7", R: failingReader{r, media[0].Off / 2}, Size: size}, false, []string{"row 7", "disk on fire"}},
		{"shorter than its size, in the boxes", video.Input{Name: "row 8", R: bytes.NewReader(b[:media[0].Off/2]), Size: size}, false, []string{"row 8", "unexpected EOF", "of " + strconv.FormatInt(size, 10) + " bytes"}},
		{"read error in the media data", video.Input{Name: "row 11", R: failingReader{r, size / 2}, Size: size}, true, []string{"row 11", "disk on fire"}},
		{"shorter than its size, in the media data", video.Input{Name: "row 12", R: bytes.NewReader(b[:size-1000]), Size: size}, true, []string{"row 12", "unexpected EOF", "of " + strconv.FormatInt(size, 10) + " bytes"}},
		{"not a video", video.Input{Name: "row 9", R: strings.NewReader(strings.Repeat("x", 5000)), Size: 5000}, false, []string{"row 9", "open"}},
		{"no reader", video.Input{Name: "row 10", Size: 5}, false, []string{"row 10", "no reader"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ScanInput(ctx, tc.in)
			if tc.split {
				if err != nil {
					t.Fatalf("ScanInput read the media data: %v", err)
				}
				rep, rerr := video.CheckBoundaries(s, "cam", "concat.mp4", fx.Episodes, video.Options{FPS: fixFPS})
				if rerr != nil {
					t.Fatal(rerr)
				}
				dir := t.TempDir()
				if _, err = Split(ctx, rep, video.DirDest(dir)); err == nil {
					t.Fatal("Split: no error")
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 0 {
					t.Errorf("a failed Split left %d files", len(ents))
				}
			} else if err == nil {
				t.Fatalf("ScanInput: %d packets, no error", len(s.Packets))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
