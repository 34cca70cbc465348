package lerobot

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bpconvert/bpconvert/convert"
)

// TestSourceFilesRefused: files that are not regular (a FIFO would block
// the read forever), files and directories linked out of the dataset, a
// camera file that lost its last bytes, and absurd episode lengths are
// refused as invalid input naming the file, promptly.
func TestSourceFilesRefused(t *testing.T) {
	t.Parallel()
	video := filepath.Join("videos", "chunk-000", wrist, "episode_000001.mp4")
	replace := func(rel string, make func(p string) error) func(t *testing.T, root string) {
		return func(t *testing.T, root string) {
			p := filepath.Join(root, rel)
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if err := make(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	socket := func(p string) error {
		l, err := net.Listen("unix", p)
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	}
	// outsideCopy links p to a copy of itself outside the dataset.
	outsideLink := func(t *testing.T, root, rel string) {
		p := filepath.Join(root, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), filepath.Base(p))
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(p)
		if err := os.Symlink(out, p); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		base    string
		change  func(t *testing.T, root string)
		scans   bool
		wantErr []string
	}{
		{"info.json FIFO", "v2.0", replace("meta/info.json", fifo), false, []string{"meta/info.json", "is a FIFO"}},
		{"info.json socket", "v2.0", replace("meta/info.json", socket), false, []string{"meta/info.json", "is a socket"}},
		{"episodes.jsonl FIFO", "v2.0", replace("meta/episodes.jsonl", fifo), false, []string{"meta/episodes.jsonl", "is a FIFO"}},
		{"episode table FIFO", "v3.0", func(t *testing.T, root string) {
			m, _ := filepath.Glob(filepath.Join(root, "meta", "episodes", "*", "*.parquet"))
			if len(m) == 0 {
				t.Fatal("no episode table")
			}
			replace(strings.TrimPrefix(m[0], root+"/"), fifo)(t, root)
		}, false, []string{"meta/episodes/", "is a FIFO"}},
		{"data table FIFO", "v2.0", replace("data/chunk-000/episode_000001.parquet", fifo), false, []string{"episode_000001.parquet", "is a FIFO"}},
		{"video FIFO", "v2.0", replace(video, fifo), false, []string{"episode_000001.mp4", "is a FIFO"}},
		{"video linked outside", "v2.0", func(t *testing.T, root string) { outsideLink(t, root, video) },
			false, []string{"episode_000001.mp4", "outside the source directory"}},
		{"videos directory linked outside", "v2.0", func(t *testing.T, root string) {
			out := filepath.Join(t.TempDir(), "videos")
			if err := os.Rename(filepath.Join(root, "videos"), out); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(out, filepath.Join(root, "videos")); err != nil {
				t.Fatal(err)
			}
		}, false, []string{"videos/", "outside the source directory"}},
		{"info.json linked outside", "v2.0", func(t *testing.T, root string) { outsideLink(t, root, "meta/info.json") },
			false, []string{"meta/info.json", "outside the source directory"}},
		{"video missing its last 40 bytes", "v2.0", func(t *testing.T, root string) {
			p := filepath.Join(root, video)
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, fi.Size()-40); err != nil {
				t.Fatal(err)
			}
		}, true, []string{"episode_000001.mp4", "not a complete MP4 file", "truncated"}},
		{"episode length 10^15", "v2.1", func(t *testing.T, root string) {
			editFile(t, filepath.Join(root, "meta", "episodes.jsonl"), func(s string) string {
				return strings.Replace(s, `"length":9`, `"length":1000000000000000`, 1)
			})
		}, false, []string{"meta/episodes.jsonl", "episode 2", "1000000000000000 frames", "beyond any video"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyDataset(t, tc.base)
			tc.change(t, root)
			done := make(chan error, 1)
			go func() {
				_, err := Inspect(context.Background(), root, Options{Engine: testEngine(t, tc.scans)})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Inspect blocked")
			}
			var ie *convert.InputError
			t.Log(err)
			if !errors.As(err, &ie) || !errors.Is(err, convert.ErrInvalidInput) {
				t.Fatalf("Inspect: %v; want a *convert.InputError", err)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "--") || strings.Contains(err.Error(), ".-") {
				t.Errorf("error %q shows a wrapped-around number", err)
			}
		})
	}
}
