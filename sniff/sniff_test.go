package sniff

import (
	"archive/zip"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// fixtures lists the files in testdata (made by testdata/gen.sh, see testdata/README.md)
// with the kind each must be detected as.
var fixtures = []struct {
	file  string
	label string
	ext   string
}{
	{"sample.jpg", LabelJPEG, ".jpg"},
	{"sample.png", LabelPNG, ".png"},
	{"sample.webp", LabelWebP, ".webp"},
	{"sample.gif", LabelGIF, ".gif"},
	{"sample.bmp", LabelBMP, ".bmp"},
	{"sample.tiff", LabelTIFF, ".tiff"},
	{"sample.flac", LabelFLAC, ".flac"},
	{"sample.wav", LabelWAV, ".wav"},
	{"sample.ogg", LabelOgg, ".ogg"},
	{"sample.opus", LabelOgg, ".ogg"},
	{"sample.mp3", LabelMP3, ".mp3"},
	{"sample-id3.mp3", LabelMP3, ".mp3"},
	{"sample.mp4", LabelMP4, ".mp4"},
	{"sample.mkv", LabelMatroska, ".mkv"},
	{"sample.webm", LabelWebM, ".webm"},
	{"sample.npy", LabelNPY, ".npy"},
	{"sample.pdf", LabelPDF, ".pdf"},
	{"sample.json", LabelJSON, ".json"},
	{"sample-long.json", LabelJSON, ".json"},
	{"sample.txt", LabelText, ".txt"},
}

func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestDetectFixtures(t *testing.T) {
	t.Parallel()
	for _, tc := range fixtures {
		t.Run(tc.file, func(t *testing.T) {
			b := readFixture(t, tc.file)
			got := Detect(b)
			if got.Label != tc.label || got.Ext != tc.ext {
				t.Fatalf("Detect(%s) = %+v, want label %q ext %q", tc.file, got, tc.label, tc.ext)
			}
			if !got.Known() {
				t.Fatalf("Detect(%s).Known() = false", tc.file)
			}
			// A prefix of PrefixLen bytes must give the same answer as the whole file.
			if len(b) > PrefixLen {
				if p := Detect(b[:PrefixLen]); p != got {
					t.Fatalf("Detect(first %d bytes of %s) = %+v, whole file %+v", PrefixLen, tc.file, p, got)
				}
			}
			// With no usable source extension, Ext falls back to sniffing.
			if e := Ext("000000000042", b); e != tc.ext {
				t.Fatalf("Ext(no extension, %s) = %q, want %q", tc.file, e, tc.ext)
			}
		})
	}
}

func TestDetectEdges(t *testing.T) {
	t.Parallel()
	random := make([]byte, 2*PrefixLen)
	for i := range random {
		random[i] = byte(i*7919>>3 ^ i*31) // fixed, not text, no signature
	}
	random[0], random[1] = 0x01, 0x02
	tests := []struct {
		name  string
		in    []byte
		label string
		ext   string
	}{
		{"nil", nil, LabelEmpty, ".bin"},
		{"empty", []byte{}, LabelEmpty, ".bin"},
		{"class label", []byte("3"), LabelText, ".txt"},
		{"caption", []byte("a photo of a dog"), LabelText, ".txt"},
		{"caption with comma", []byte("a dog, a ball\nand a park, sunny\n"), LabelText, ".txt"},
		{"json array", []byte(`[1,2,3]`), LabelJSON, ".json"},
		{"broken json", []byte(`{"a":`), LabelText, ".txt"},
		{"binary", random, LabelUnknown, ".bin"},
		{"npy magic only", []byte("\x93NUMPY\x01\x00"), LabelNPY, ".npy"},
		{"ebml without doctype", []byte("\x1A\x45\xDF\xA3\x00\x00\x00\x00\x00\x00\x00\x00"), LabelMatroska, ".mkv"},
		{"mp4 ftyp box only", []byte("\x00\x00\x00\x18ftypisom\x00\x00\x02\x00"), LabelMP4, ".mp4"},
		{"zip (not named by sniff)", []byte("PK\x03\x04\x14\x00\x00\x00\x00\x00"), "ZIP", ".zip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Detect(tc.in)
			if got.Label != tc.label || got.Ext != tc.ext {
				t.Fatalf("Detect(%q) = %+v, want label %q ext %q", short(tc.in), got, tc.label, tc.ext)
			}
		})
	}
}

// TestPrefixLenJSON pins the reason PrefixLen is 4096: a JSON document cut at PrefixLen
// is still JSON, a JSON document cut shorter is taken as a complete, broken document.
func TestPrefixLenJSON(t *testing.T) {
	t.Parallel()
	b := readFixture(t, "sample-long.json")
	if got := Detect(b[:PrefixLen]).Label; got != LabelJSON {
		t.Fatalf("JSON cut at PrefixLen: %q, want %q", got, LabelJSON)
	}
	if got := Detect(b[:PrefixLen-1024]).Label; got != LabelText {
		t.Fatalf("JSON cut at PrefixLen-1024: %q, want %q (mimetype's limit no longer matches PrefixLen?)", got, LabelText)
	}
}

func TestSourceExt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ext  string
		ok   bool
	}{
		{"images/0001.jpg", ".jpg", true},
		{"0001.seg.png", ".png", true},
		{"IMG_0001.JPG", ".jpg", true},
		{"n01440764_10026.JPEG", ".jpeg", true},
		{"clip.tar.gz", ".gz", true},
		{"x.c++", ".c++", true},
		{"a.b/c", "", false},
		{"noext", "", false},
		{"", "", false},
		{".hidden", "", false},
		{"dir/.hidden", "", false},
		{"trailing.", "", false},
		{"a.png::media/pack-0000.zip", ".zip", true},
		{"a.png::x", "", false},
		{"a.p g", "", false},
		{"a.pn\x00g", "", false},
		{"a.png\n", "", false},
		{"a.jpé", "", false},
		{"a.abcdefghijklmnop", ".abcdefghijklmnop", true},
		{"a.abcdefghijklmnopq", "", false},
	}
	for _, tc := range tests {
		ext, ok := SourceExt(tc.name)
		if ext != tc.ext || ok != tc.ok {
			t.Errorf("SourceExt(%q) = %q, %v; want %q, %v", tc.name, ext, ok, tc.ext, tc.ok)
		}
	}
}

func TestExtSourceWins(t *testing.T) {
	t.Parallel()
	png := readFixture(t, "sample.png")
	tests := []struct {
		source string
		want   string
	}{
		{"0001.jpg", ".jpg"}, // the source name wins even when the bytes say PNG
		{"0001.PNG", ".png"},
		{"0001", ".png"},
		{"0001.bad::ext", ".png"},
		{"", ".png"},
	}
	for _, tc := range tests {
		if got := Ext(tc.source, png); got != tc.want {
			t.Errorf("Ext(%q, png) = %q, want %q", tc.source, got, tc.want)
		}
	}
	if got := Ext("", nil); got != ".bin" {
		t.Errorf("Ext(\"\", nil) = %q, want .bin", got)
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sample.png", "sample-long.json", "sample.flac"} {
		want := readFixture(t, name)
		for _, wrap := range []struct {
			name string
			fn   func(io.Reader) io.Reader
		}{
			{"plain", func(r io.Reader) io.Reader { return r }},
			{"one byte", iotest.OneByteReader},
			{"half", iotest.HalfReader},
		} {
			t.Run(name+"/"+wrap.name, func(t *testing.T) {
				r := NewReader(wrap.fn(bytes.NewReader(want)))
				p, err := r.Prefix()
				if err != nil {
					t.Fatal(err)
				}
				if n := min(len(want), PrefixLen); !bytes.Equal(p, want[:n]) {
					t.Fatalf("prefix is %d bytes, want the first %d bytes", len(p), n)
				}
				k, err := r.Kind()
				if err != nil {
					t.Fatal(err)
				}
				if k != Detect(want) {
					t.Fatalf("Kind = %+v, want %+v", k, Detect(want))
				}
				var got bytes.Buffer
				if _, err := io.Copy(&got, r); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Fatalf("replayed %d bytes, want %d identical bytes", got.Len(), len(want))
				}
				if _, err := r.Prefix(); err == nil {
					t.Fatal("Prefix after reading: no error")
				}
				r.Reset(bytes.NewReader(want[:10]))
				if p, err := r.Prefix(); err != nil || len(p) != 10 {
					t.Fatalf("after Reset: Prefix = %d bytes, %v", len(p), err)
				}
			})
		}
	}
}

func TestReaderError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := NewReader(iotest.ErrReader(boom))
	if _, err := r.Prefix(); !errors.Is(err, boom) {
		t.Fatalf("Prefix error = %v, want %v", err, boom)
	}
	if _, _, err := Peek(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Fatalf("Peek error = %v, want %v", err, boom)
	}
}

func TestPeek(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, PrefixLen - 1, PrefixLen, PrefixLen + 1, 3 * PrefixLen} {
		want := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
		p, rr, err := Peek(iotest.HalfReader(bytes.NewReader(want)))
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !bytes.Equal(p, want[:min(n, PrefixLen)]) {
			t.Fatalf("n=%d: prefix has %d bytes", n, len(p))
		}
		got, err := io.ReadAll(rr)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("n=%d: replay gave %d bytes, %v", n, len(got), err)
		}
	}
}

func FuzzDetect(f *testing.F) {
	for _, tc := range fixtures {
		b := readFixture(f, tc.file)
		f.Add(b[:min(len(b), 512)])
	}
	f.Add([]byte{})
	f.Add([]byte("\x93NUMPY"))
	f.Add([]byte("\x1A\x45\xDF\xA3\x42\x82\x88matroska"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k := Detect(b)
		if k.Label == "" {
			t.Fatalf("empty label for %q", short(b))
		}
		if ext, ok := cleanExt(strings.TrimPrefix(k.Ext, ".")); !ok || ext != k.Ext {
			t.Fatalf("Detect(%q) gave a member extension %q that SourceExt would refuse", short(b), k.Ext)
		}
		// The shortcuts in front of mimetype agree with it (NPY aside, which it lacks).
		if len(b) > 0 && (k.Label == LabelJPEG || k.Label == LabelPNG) {
			if m := detectMIME(b[:min(len(b), PrefixLen)]); m.Label != k.Label || m.Ext != k.Ext {
				t.Fatalf("Detect(%q) = %+v, mimetype says %+v", short(b), k, m)
			}
		}
		if again := Detect(bytes.Clone(b)); again != k {
			t.Fatalf("Detect not deterministic: %+v then %+v", k, again)
		}
		if len(b) > PrefixLen {
			if p := Detect(b[:PrefixLen]); p != k {
				t.Fatalf("Detect(first PrefixLen bytes) = %+v, whole input %+v", p, k)
			}
		}
		p, rr, err := Peek(bytes.NewReader(b))
		if err != nil || !bytes.Equal(p, b[:min(len(b), PrefixLen)]) {
			t.Fatalf("Peek: %d bytes, %v", len(p), err)
		}
		if all, _ := io.ReadAll(rr); !bytes.Equal(all, b) {
			t.Fatalf("Peek replay differs")
		}
	})
}

// BenchmarkDetect measures one Detect call per payload kind. Compare it with
// BenchmarkPackWrite, the least a conversion does per payload.
func BenchmarkDetect(b *testing.B) {
	for _, tc := range fixtures {
		data := readFixture(b, tc.file)
		b.Run(tc.label+"/"+tc.file, func(b *testing.B) {
			for b.Loop() {
				Detect(data)
			}
		})
	}
}

// BenchmarkPackWrite is the floor of what writing one payload into a STORED zip shard
// costs on this machine (archive/zip, buffered writes to a file in a temporary
// directory, no reading, no fsync), for the mean payload sizes of the blobpack
// benchmarks: 1.3 KB PushT frames, 133 KB LibriSpeech FLAC, 163 KB COCO JPEGs. Sniffing
// cost relative to a conversion is BenchmarkDetect divided by this.
func BenchmarkPackWrite(b *testing.B) {
	for _, size := range []int{1300, 133 << 10, 163 << 10} {
		payload := bytes.Repeat([]byte{0xA5}, size)
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			dir := b.TempDir()
			var (
				f       *os.File
				bw      *bufio.Writer
				zw      *zip.Writer
				written int64
				n       int
			)
			open := func() {
				var err error
				if f, err = os.Create(filepath.Join(dir, "pack.zip")); err != nil {
					b.Fatal(err)
				}
				bw = bufio.NewWriterSize(f, 1<<20)
				zw = zip.NewWriter(bw)
				written = 0
			}
			closeAll := func() {
				if err := zw.Close(); err != nil {
					b.Fatal(err)
				}
				if err := bw.Flush(); err != nil {
					b.Fatal(err)
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
			open()
			b.SetBytes(int64(size))
			for b.Loop() {
				if written > 64<<20 {
					b.StopTimer()
					closeAll()
					open()
					b.StartTimer()
				}
				w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("images/%012d.jpg", n), Method: zip.Store})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := w.Write(payload); err != nil {
					b.Fatal(err)
				}
				written += int64(size)
				n++
			}
			b.StopTimer()
			closeAll()
		})
	}
}

func short(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}
