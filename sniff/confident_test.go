package sniff

import (
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

// TestRandomStaysBin: incompressible payloads get ".bin", also when their
// first bytes are set to the short magic of a format (frame sync, a two- or
// three-byte magic). 20,000 payloads of 64 bytes to 64 KiB from a fixed
// seed; before sniff required confident signatures, 9 of 20,000 such
// payloads were named .mp3, .aac, .cpio or .txt.
func TestRandomStaysBin(t *testing.T) {
	t.Parallel()
	weak := []string{"", "\xFF\xFB", "\xFF\xF3", "\xFF\xE3", "\xFF\xFD", "\xFF\xF1", "\xFF\xF9", "\x71\xC7", "\xC7\x71",
		"\xFF\x0A", "MZ", "\x1F\x8B", "\x1F\x8B\x08", "BM", "\xFF\xD8\xFF", "\xFF\xD8\xFF\xE0", "\xFF\xD8\xFF\xDB",
		"ID3", "II*\x00", "MM\x00*"}
	r := rand.New(rand.NewSource(20000))
	named := map[string]int{}
	const n = 20000
	for i := range n {
		size := 64 << r.Intn(11) // 64 B .. 64 KiB
		size += r.Intn(size)
		b := make([]byte, size)
		r.Read(b)
		magic := weak[i%len(weak)]
		if magic == "II*\x00" || magic == "MM\x00*" {
			// TIFF's four bytes are a confident signature; what is weak is any
			// IFD offset below 8 (the header's own bytes).
			copy(b, magic+"\x00\x00\x00\x00")
		} else {
			copy(b, magic)
		}
		if k := Detect(b); k.Ext != ".bin" {
			named[k.Label]++
			if named[k.Label] == 1 {
				t.Errorf("payload %d (%d bytes, starts %q): %+v, want .bin", i, size, short(b), k)
			}
		}
		if e := Ext("", b); e != ".bin" && len(named) == 0 {
			t.Fatalf("Ext of payload %d = %q", i, e)
		}
	}
	if len(named) > 0 {
		t.Fatalf("%d random payloads named: %v", n, named)
	}
}

// TestConfidentText: text is UTF-8 without control characters across the
// sniffed window; a character cut by the end of a full window still counts.
func TestConfidentText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("naïve café ", PrefixLen) // multi-byte characters throughout
	tests := []struct {
		name string
		in   []byte
		ext  string
	}{
		{"ascii caption", []byte("a photo of a dog on a beach\n"), ".txt"},
		{"utf-8 caption", []byte("ein Hund am Strand, größer als ein Ball\n"), ".txt"},
		{"japanese", []byte("浜辺の犬の写真です。"), ".txt"},
		{"window of multi-byte text", []byte(long), ".txt"},
		{"window cut inside a character", []byte(long[:PrefixLen-1]), ".txt"},
		{"tabs and crlf", []byte("a\tb\r\nc\fd"), ".txt"},
		{"latin-1", []byte("caf\xE9 au lait, cr\xE8me br\xFBl\xE9e"), ".bin"},
		{"nul byte", []byte("abc\x00def ghi jkl"), ".bin"},
		{"escape", []byte("abc\x1B[0m def ghi"), ".bin"},
		{"C1 control", []byte("abc \u0085 def ghi"), ".bin"},
		{"invalid at the end of a short value", []byte("abc def \xE2\x82"), ".bin"},
		{"weak magic, then text", []byte("MZ is the name of the town"), ".txt"},
	}
	for _, tc := range tests {
		if got := Detect(tc.in).Ext; got != tc.ext {
			t.Errorf("%s: Detect = %+v, want %s", tc.name, Detect(tc.in), tc.ext)
		}
	}
}

// TestConfidentChecks holds each structural check to real-looking headers
// and to their near misses.
func TestConfidentChecks(t *testing.T) {
	t.Parallel()
	frame := func(h string, size int) string { // an MPEG or ADTS frame: header, zero padding
		return h + strings.Repeat("\x00", size-len(h))
	}
	mp3 := frame("\xFF\xFB\x90\x64", 417)              // MPEG-1 layer III, 128 kb/s, 44.1 kHz, no padding: 417 bytes
	adts := frame("\xFF\xF1\x50\x80\x2E\x7F\xFC", 371) // frame length 371
	tests := []struct {
		name string
		in   string
		ext  string
	}{
		{"mp3: three frames", mp3 + mp3 + mp3, ".mp3"},
		{"mp3: two frames, whole value", mp3 + mp3, ".mp3"},
		{"mp3: one frame", mp3, ".bin"},
		{"mp3: second frame at the wrong offset", mp3 + "\x00" + mp3 + mp3, ".bin"},
		{"mp3: second frame of another sample rate", mp3 + "\xFF\xFB\x94\x64" + mp3[4:] + mp3, ".bin"},
		{"aac: three frames", adts + adts + adts, ".aac"},
		{"aac: one frame", adts, ".bin"},
		{"jpeg: JFIF", "\xFF\xD8\xFF\xE0\x00\x10JFIF\x00\x01\x02\x00\x00\x01\x00\x01\x00\x00\xFF\xDB\x00\x43\x00", ".jpg"},
		{"jpeg: Exif", "\xFF\xD8\xFF\xE1\x10\x00Exif\x00\x00MM\x00*", ".jpg"},
		{"jpeg: DQT then DHT", "\xFF\xD8\xFF\xDB\x00\x04\x00\x00\xFF\xC4\x00\x10", ".jpg"},
		{"jpeg: APP0 without identifier", "\xFF\xD8\xFF\xE0\x00\x10ABCD\x00\x01\x02\x00\x00\x01\x00\x01\x00\x00\x12\x34", ".bin"},
		{"jpeg: bad marker", "\xFF\xD8\xFF\x12\x00\x10JFIF\x00", ".bin"},
		{"gzip", "\x1F\x8B\x08\x00\x00\x00\x00\x00\x00\x03rest", ".gz"},
		{"gzip: reserved flags", "\x1F\x8B\x08\xE0\x00\x00\x00\x00\x00\x03rest", ".bin"},
		{"cpio: ascii", "070701" + strings.Repeat("0", 104), ".cpio"},
		{"bmp: bad DIB size", "BM\x36\x03\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x29\x00\x00\x00\x10\x00\x00\x00\x10\x00\x00\x00", ".bin"},
		{"tiff: IFD inside the header", "II*\x00\x04\x00\x00\x00\x00\x00", ".bin"},
		{"flac: no STREAMINFO", "fLaC\x01\x00\x00\x22" + strings.Repeat("\x00", 34), ".bin"},
		{"id3v2", "ID3\x04\x00\x00\x00\x00\x00\x1F" + strings.Repeat("\x00", 40), ".mp3"},
		{"id3v2: bad version", "ID3\x07\x00\x00\x00\x00\x00\x1F" + strings.Repeat("\x00", 40), ".bin"},
	}
	for _, tc := range tests {
		if got := Detect([]byte(tc.in)); got.Ext != tc.ext {
			t.Errorf("%s: Detect = %+v, want %s", tc.name, got, tc.ext)
		}
	}
}

// TestRealMedia: files written by ffmpeg (encoders and muxers in many
// settings: sample rates, bit rates, VBR, tags, pixel formats, sizes) are
// named as before confident signatures were required, from their first
// PrefixLen bytes and with no source name.
func TestRealMedia(t *testing.T) {
	testtool.Require(t, "ffmpeg")
	dir := t.TempDir()
	sine := func(rate string, d string) []string {
		return []string{"-f", "lavfi", "-i", "sine=frequency=440:sample_rate=" + rate + ":duration=" + d}
	}
	src := func(size string) []string {
		return []string{"-f", "lavfi", "-i", "testsrc=size=" + size + ":rate=10:duration=0.3"}
	}
	img := func(size string) []string {
		return []string{"-f", "lavfi", "-i", "testsrc=size=" + size + ":rate=1", "-frames:v", "1"}
	}
	cat := func(a ...[]string) []string {
		var out []string
		for _, x := range a {
			out = append(out, x...)
		}
		return out
	}
	type variant struct {
		name string
		args []string
		ext  string
	}
	var vs []variant
	for _, rate := range []string{"8000", "11025", "16000", "22050", "32000", "44100", "48000"} {
		vs = append(vs, variant{"mp3-cbr-" + rate, cat(sine(rate, "1"), []string{"-c:a", "libmp3lame", "-b:a", "32k", "-id3v2_version", "0", "-write_xing", "0"}), ".mp3"})
	}
	for _, rate := range []string{"8000", "22050", "44100"} {
		vs = append(vs,
			variant{"mp3-vbr-" + rate, cat(sine(rate, "1"), []string{"-ac", "2", "-c:a", "libmp3lame", "-q:a", "2"}), ".mp3"},
			variant{"aac-" + rate, cat(sine(rate, "1"), []string{"-c:a", "aac", "-f", "adts"}), ".aac"},
			variant{"flac-" + rate, cat(sine(rate, "0.2"), []string{"-c:a", "flac"}), ".flac"},
		)
	}
	vs = append(vs,
		variant{"mp3-id3", cat(sine("22050", "1"), []string{"-c:a", "libmp3lame", "-id3v2_version", "3", "-metadata", "title=t"}), ".mp3"},
		variant{"aac-48000-stereo", cat(sine("48000", "1"), []string{"-ac", "2", "-c:a", "aac", "-b:a", "256k", "-f", "adts"}), ".aac"},
		variant{"wav-s16", cat(sine("16000", "0.2"), []string{"-c:a", "pcm_s16le"}), ".wav"},
	)
	for _, br := range []string{"8k", "64k", "128k", "320k"} {
		vs = append(vs, variant{"mp3-44k-" + br, cat(sine("44100", "1"), []string{"-ac", "2", "-c:a", "libmp3lame", "-b:a", br, "-id3v2_version", "0"}), ".mp3"})
	}
	vs = append(vs,
		variant{"mp2-48k", cat(sine("48000", "1"), []string{"-c:a", "mp2", "-f", "mp2"}), ".mp3"},
		variant{"wav-f32", cat(sine("16000", "0.2"), []string{"-c:a", "pcm_f32le"}), ".wav"},
		variant{"wav-u8", cat(sine("16000", "0.2"), []string{"-c:a", "pcm_u8"}), ".wav"},
		variant{"ogg-vorbis", cat(sine("44100", "0.5"), []string{"-c:a", "libvorbis"}), ".ogg"},
		variant{"ogg-opus", cat(sine("48000", "0.5"), []string{"-c:a", "libopus", "-f", "ogg"}), ".ogg"},
		variant{"ogg-flac", cat(sine("16000", "0.5"), []string{"-c:a", "flac", "-f", "ogg"}), ".ogg"},
		variant{"mp4-h264", cat(src("64x64"), []string{"-c:v", "libx264", "-pix_fmt", "yuv420p", "-f", "mp4"}), ".mp4"},
		variant{"mp4-faststart", cat(src("64x64"), []string{"-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "+faststart", "-f", "mp4"}), ".mp4"},
		variant{"mp4-mpeg4", cat(src("64x64"), []string{"-c:v", "mpeg4", "-f", "mp4"}), ".mp4"},
		variant{"mov", cat(src("64x64"), []string{"-c:v", "libx264", "-pix_fmt", "yuv420p", "-f", "mov"}), ".mov"},
		variant{"mkv", cat(src("64x64"), []string{"-c:v", "libx264", "-pix_fmt", "yuv420p", "-f", "matroska"}), ".mkv"},
		variant{"webm", cat(src("64x64"), []string{"-c:v", "libvpx", "-b:v", "100k", "-f", "webm"}), ".webm"},
		variant{"avi", cat(src("64x64"), []string{"-c:v", "mjpeg", "-f", "avi"}), ".avi"},
	)
	for _, size := range []string{"1x1", "320x240"} {
		for _, q := range []string{"2", "31"} {
			vs = append(vs, variant{"jpeg-" + size + "-q" + q, cat(img(size), []string{"-c:v", "mjpeg", "-q:v", q, "-f", "image2", "-update", "1"}), ".jpg"})
		}
		vs = append(vs,
			variant{"jpeg-bitexact-" + size, cat(img(size), []string{"-c:v", "mjpeg", "-bitexact", "-f", "image2", "-update", "1"}), ".jpg"},
			variant{"jpeg-444-" + size, cat(img(size), []string{"-c:v", "mjpeg", "-pix_fmt", "yuvj444p", "-f", "image2", "-update", "1"}), ".jpg"},
			variant{"png-rgb-" + size, cat(img(size), []string{"-c:v", "png", "-f", "image2", "-update", "1"}), ".png"},
			variant{"png-gray16-" + size, cat(img(size), []string{"-c:v", "png", "-pix_fmt", "gray16be", "-f", "image2", "-update", "1"}), ".png"},
			variant{"png-pal8-" + size, cat(img(size), []string{"-c:v", "png", "-pix_fmt", "pal8", "-f", "image2", "-update", "1"}), ".png"},
			variant{"webp-lossy-" + size, cat(img(size), []string{"-c:v", "libwebp", "-f", "webp"}), ".webp"},
			variant{"webp-lossless-" + size, cat(img(size), []string{"-c:v", "libwebp", "-lossless", "1", "-f", "webp"}), ".webp"},
			variant{"gif-" + size, cat(img(size), []string{"-c:v", "gif", "-f", "gif"}), ".gif"},
			variant{"bmp-" + size, cat(img(size), []string{"-c:v", "bmp", "-f", "image2", "-update", "1"}), ".bmp"},
			variant{"bmp-rgba-" + size, cat(img(size), []string{"-c:v", "bmp", "-pix_fmt", "bgra", "-f", "image2", "-update", "1"}), ".bmp"},
			variant{"tiff-" + size, cat(img(size), []string{"-c:v", "tiff", "-f", "image2", "-update", "1"}), ".tiff"},
			variant{"tiff-deflate-" + size, cat(img(size), []string{"-c:v", "tiff", "-compression_algo", "deflate", "-f", "image2", "-update", "1"}), ".tiff"},
		)
	}
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(dir, v.name+v.ext)
			args := append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y"}, v.args...)
			if out, err := exec.Command("ffmpeg", append(args, out)...).CombinedOutput(); err != nil {
				t.Fatalf("ffmpeg %s: %v\n%s", strings.Join(v.args, " "), err, out)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if got := Detect(b[:min(len(b), PrefixLen)]); got.Ext != v.ext {
				t.Fatalf("ffmpeg %s: %d bytes starting %q: Detect = %+v, want %s", strings.Join(v.args, " "), len(b), short(b), got, v.ext)
			}
			if got := Ext("", b); got != v.ext {
				t.Fatalf("Ext = %q, want %s", got, v.ext)
			}
		})
	}
}
