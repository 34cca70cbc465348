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
	})
}
