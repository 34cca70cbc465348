package lerobot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bpconvert/bpconvert/convert"
)

// FuzzFormatTemplate feeds arbitrary templates (seeded with the forms
// LeRobot writes) to formatTemplate: it must not panic, and whatever it
// accepts must be a clean local path.
func FuzzFormatTemplate(f *testing.F) {
	for _, s := range []string{
		"data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
		"videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
		"data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
		"videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
		"{{x}}/{episode_index:4d}", "{", "}", "{:}", "{video_key:s}", "../{video_key}",
	} {
		f.Add(s, "observation.images.top")
	}
	f.Fuzz(func(t *testing.T, tmpl, key string) {
		vals := map[string]any{"video_key": key, "episode_chunk": int64(1), "episode_index": int64(1234),
			"chunk_index": int64(0), "file_index": int64(7)}
		p, err := formatTemplate(tmpl, vals)
		if err != nil {
			return
		}
		if !filepath.IsLocal(filepath.FromSlash(p)) || filepath.ToSlash(filepath.Clean(filepath.FromSlash(p))) != p {
			t.Fatalf("formatTemplate(%q) = %q, not a clean local path", tmpl, p)
		}
	})
}

// FuzzOpen writes arbitrary meta/info.json and meta/episodes.jsonl bytes
// (seeded with the shapes LeRobot writes) and opens the dataset: Open must
// not panic, and every refusal must be a *convert.InputError.
func FuzzOpen(f *testing.F) {
	info := `{"codebase_version": "v2.1", "fps": 10, "chunks_size": 1000,
 "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
 "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
 "features": {"observation.images.top": {"dtype": "video", "shape": [64, 96, 3]}, "action": {"dtype": "float32"}}}`
	f.Add(info, "{\"episode_index\": 0, \"tasks\": [\"t\"], \"length\": 12}\n{\"episode_index\": 1, \"length\": 15}\n")
	f.Add(info, "{\"episode_index\": 0, \"length\": 0}\n")
	f.Add(`{"codebase_version": "v3.0", "fps": 30.0, "data_path": "d", "features": {"i": {"dtype": "image"}}}`, "")
	f.Add(`{"codebase_version": "v2.0", "fps": -1}`, "")
	f.Add(`[]`, "{")
	f.Fuzz(func(t *testing.T, info, episodes string) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "meta"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "meta", "info.json"), []byte(info), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "meta", "episodes.jsonl"), []byte(episodes), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Open(context.Background(), root)
		if err != nil {
			var ie *convert.InputError
			if !errors.Is(err, convert.ErrInvalidInput) || !errors.As(err, &ie) || ie.Source != "lerobot" {
				t.Fatalf("Open: %v is not a lerobot *convert.InputError", err)
			}
			return
		}
		if len(d.Episodes) == 0 || d.FPS <= 0 {
			t.Fatalf("Open accepted %d episodes at %g fps", len(d.Episodes), d.FPS)
		}
	})
}
