package videoindex

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpconvert/bpconvert/internal/testtool"
)

func sample(fps Float, key string) *Index {
	return New(Source{CodebaseVersion: "v3.0", FPS: fps, VideoKeys: []string{key, "observation.images.wrist"}}, []Entry{
		{EpisodeIndex: 1, VideoKey: "observation.images.wrist", Ref: "zip://videos/observation.images.wrist/chunk-000/file-000/episode_000001.mp4::media/pack-0000.zip", FromNS: 0, ToNS: 3_000_000_000, Frames: 30},
		{EpisodeIndex: 0, VideoKey: key, Ref: "zip://videos/" + key + "/chunk-000/file-000.mp4::media/pack-0000.zip", FromNS: 0, ToNS: 2_300_000_000, Frames: 23},
		{EpisodeIndex: 1, VideoKey: key, Ref: "zip://videos/" + key + "/chunk-000/file-000.mp4::media/pack-0000.zip", FromNS: 2_300_000_000, ToNS: 5_300_000_000, Frames: 30},
	})
}

// pythonDumps renders the same document with Python's json module, the
// way the reference writes it: json.dumps(obj, indent=1) + "\n", with the
// fps as a Python float.
func pythonDumps(t *testing.T, ix *Index) []byte {
	t.Helper()
	testtool.Require(t, "python3")
	in, err := json.Marshal(ix)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-c", `import json, sys
d = json.load(sys.stdin)
d["source"]["fps"] = float(d["source"]["fps"])
sys.stdout.write(json.dumps(d, indent=1) + "\n")`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	return out
}

func TestEncodeMatchesPython(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		ix   *Index
	}{
		{"integral fps", sample(10, "observation.image")},
		{"fractional fps", sample(29.97, "observation.image")},
		{"non-ASCII key and HTML characters", sample(30, "caméra<&>😀")},
		{"no entries", New(Source{CodebaseVersion: "v2.1", FPS: 50}, nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := c.ix.Encode(&got); err != nil {
				t.Fatal(err)
			}
			want := pythonDumps(t, c.ix)
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("encoding differs from Python's json.dumps(indent=1):\n--- got\n%s\n--- python\n%s", got.Bytes(), want)
			}
			back, err := Read(bytes.NewReader(got.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			if err := back.Encode(&again); err != nil || !bytes.Equal(again.Bytes(), got.Bytes()) {
				t.Fatalf("round trip: %v\n%s", err, again.Bytes())
			}
		})
	}
}

func TestNewSorts(t *testing.T) {
	t.Parallel()
	ix := sample(10, "observation.image")
	var got []string
	for _, e := range ix.Episodes {
		got = append(got, e.VideoKey+"#"+string(rune('0'+e.EpisodeIndex)))
	}
	if want := "observation.image#0,observation.image#1,observation.images.wrist#1"; strings.Join(got, ",") != want {
		t.Fatalf("order %v, want %s", got, want)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		mutate func(ix *Index)
		want   string
	}{
		{"valid", func(*Index) {}, ""},
		{"format", func(ix *Index) { ix.Format = "x" }, `format "x"`},
		{"axis absent (an older index)", func(ix *Index) { ix.IntervalAxis = "" }, ""},
		{"other axis", func(ix *Index) { ix.IntervalAxis = "blob" }, `interval_axis "blob", want "stream_pts_ns"`},
		{"empty ref", func(ix *Index) { ix.Episodes[0].Ref = "" }, `episode 0 "observation.image": empty ref`},
		{"unlisted key", func(ix *Index) { ix.Source.VideoKeys = ix.Source.VideoKeys[:1] }, `"observation.images.wrist": video key not listed`},
		{"reversed", func(ix *Index) { ix.Episodes[1].ToNS = 1 }, `episode 1 "observation.image": interval [2300000000, 1) is empty`},
		{"negative", func(ix *Index) { ix.Episodes[0].FromNS = -1 }, `interval [-1, 2300000000)`},
		{"frames", func(ix *Index) { ix.Episodes[0].Frames = 0 }, `frames 0 is not positive`},
		{"duplicate", func(ix *Index) { ix.Episodes[2] = ix.Episodes[1] }, `episode 1 "observation.image": listed twice`},
		{"unsorted", func(ix *Index) { ix.Episodes[0], ix.Episodes[1] = ix.Episodes[1], ix.Episodes[0] }, `not sorted`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ix := sample(10, "observation.image")
			c.mutate(ix)
			err := ix.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if err := ix.Encode(&bytes.Buffer{}); err == nil {
				t.Fatalf("Encode accepted an invalid index")
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	ix := sample(10, "observation.image")
	if err := WriteFile(p, ix); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	back, err := Read(f)
	if err != nil || len(back.Episodes) != 3 || back.Episodes[1].ToNS != 5_300_000_000 || back.IntervalAxis != StreamAxis {
		t.Fatalf("read back: %v %+v", err, back)
	}
	if err := WriteFile(p, ix); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second write: %v, want os.ErrExist", err)
	}
	bad := sample(10, "observation.image")
	bad.Episodes[0].Ref = ""
	if err := WriteFile(filepath.Join(dir, "other.json"), bad); err == nil {
		t.Fatal("invalid index written")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != FileName {
		t.Fatalf("directory holds %v", ents)
	}
}
