package video

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// ffmpegMP4 encodes a one-second test video with the ffmpeg CLI, its moov
// box at the end (ffmpeg's default) or first (-movflags +faststart).
func ffmpegMP4(t testing.TB, faststart bool) []byte {
	t.Helper()
	testtool.Require(t, "ffmpeg")
	p := filepath.Join(t.TempDir(), "v.mp4")
	args := []string{"-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=1", "-c:v", "mpeg4", "-g", "5"}
	if faststart {
		args = append(args, "-movflags", "+faststart")
	}
	out, err := exec.Command("ffmpeg", append(args, p)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckBoxes: whole files made by ffmpeg pass; the same files missing
// their last bytes (the moov box, or the end of mdat when moov comes
// first) are truncated.
func TestCheckBoxes(t *testing.T) {
	t.Parallel()
	for _, faststart := range []bool{false, true} {
		b := ffmpegMP4(t, faststart)
		if err := CheckBoxes(bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatalf("faststart %v: whole file refused: %v", faststart, err)
		}
		for _, cut := range []int{1, 7, 40, len(b) / 2, len(b) - 9} {
			c := b[:len(b)-cut]
			if err := CheckBoxes(bytes.NewReader(c), int64(len(c))); !errors.Is(err, ErrTruncated) {
				t.Errorf("faststart %v, %d bytes cut: %v, want ErrTruncated", faststart, cut, err)
			}
		}
		grown := append(bytes.Clone(b), 0, 0, 0)
		if err := CheckBoxes(bytes.NewReader(grown), int64(len(grown))); err == nil {
			t.Errorf("faststart %v: stray bytes at the end accepted", faststart)
		}
	}
	if err := CheckBoxes(bytes.NewReader([]byte("\x1aE\xdf\xa3 matroska")), 16); err != nil {
		t.Errorf("a file that is not ISO media was checked: %v", err)
	}
}

// TestMediaData: the payload of the one mdat box of files made by ffmpeg,
// its moov box first or last; nothing for a truncated file or one that is
// not ISO media (they are read whole).
func TestMediaData(t *testing.T) {
	t.Parallel()
	for _, faststart := range []bool{false, true} {
		b := ffmpegMP4(t, faststart)
		got := MediaData(bytes.NewReader(b), int64(len(b)))
		if len(got) != 1 {
			t.Fatalf("faststart %v: %d ranges, want 1", faststart, len(got))
		}
		r := got[0]
		if r.Off < 16 || r.Off+r.Len > int64(len(b)) || string(b[r.Off-4:r.Off]) != "mdat" {
			t.Fatalf("faststart %v: range %+v of %d bytes is not an mdat payload", faststart, r, len(b))
		}
		if moovFirst := bytes.Index(b, []byte("moov")) < int(r.Off); moovFirst != faststart {
			t.Errorf("faststart %v: moov before the media data: %v", faststart, moovFirst)
		}
		if c := b[:len(b)-40]; MediaData(bytes.NewReader(c), int64(len(c))) != nil {
			t.Errorf("faststart %v: ranges for a truncated file", faststart)
		}
	}
	if MediaData(bytes.NewReader([]byte("\x1aE\xdf\xa3 matroska")), 16) != nil {
		t.Error("ranges for a file that is not ISO media")
	}
}

// FuzzCheckBoxes: no input makes the box walk panic or loop, and an
// accepted file's boxes tile it.
func FuzzCheckBoxes(f *testing.F) {
	if _, err := exec.LookPath("ffmpeg"); err == nil {
		for _, fs := range []bool{false, true} {
			b := ffmpegMP4(f, fs)
			f.Add(b)
			f.Add(b[:len(b)-40])
		}
	}
	f.Add([]byte("\x00\x00\x00\x10ftypisom\x00\x00\x00\x00\x00\x00\x00\x08moov"))
	f.Add([]byte("\x00\x00\x00\x01ftyp\xff\xff\xff\xff\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckBoxes(bytes.NewReader(b), int64(len(b)))
		if err == nil && len(b) >= 8 && string(b[4:8]) == "ftyp" && !bytes.Contains(b, []byte("moov")) {
			t.Fatalf("accepted a file without a moov box")
		}
		var end int64
		for _, r := range MediaData(bytes.NewReader(b), int64(len(b))) {
			if r.Off < end+8 || r.Len <= 0 || r.Off+r.Len > int64(len(b)) {
				t.Fatalf("range %+v after %d in a file of %d bytes", r, end, len(b))
			}
			end = r.Off + r.Len
		}
	})
}
