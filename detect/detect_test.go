//go:build unix

package detect

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPath lays out each kind's files by name (Path reads names and a
// LeRobot info.json, never payloads) and checks what Path tells.
func TestPath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		path  string
		want  Kind
	}{
		{"missing", nil, "nosuch", Missing},
		{"tar file", map[string]string{"a.tar": ""}, "a.tar", WebDataset},
		{"tar dir", map[string]string{"s/train-000000.tar.gz": ""}, "s", WebDataset},
		{"parquet file", map[string]string{"t.parquet": ""}, "t.parquet", Parquet},
		{"hf hub layout", map[string]string{"hf/data/train-00000-of-00001.parquet": "", "hf/README.md": ""}, "hf", Parquet},
		{"hf config layout", map[string]string{"hf/default/train/0000.parquet": ""}, "hf", Parquet},
		{"save_to_disk", map[string]string{"d/dataset_info.json": "{}", "d/state.json": "{}", "d/data-00000-of-00001.arrow": ""}, "d", HFDisk},
		{"lance", map[string]string{"t.lance/_versions/1.manifest": "", "t.lance/data/a.lance": ""}, "t.lance", Lance},
		{"lerobot", map[string]string{"r/meta/info.json": `{"codebase_version": "v3.0"}`, "r/data/chunk-000/file-000.parquet": ""}, "r", LeRobot},
		{"info.json of something else", map[string]string{"r/meta/info.json": `{"name": "x"}`, "r/data/x.parquet": ""}, "r", Parquet},
		{"output", map[string]string{"o/.bpconvert.json": "{}", "o/samples.parquet": "", "o/media/pack-0000.zip": ""}, "o", Output},
		{"nothing known", map[string]string{"e/readme.txt": ""}, "e", Unknown},
		{"info.json a FIFO", map[string]string{"r/meta/info.json": "fifo"}, "r", Unknown},
		{"deeper than three levels", map[string]string{"e/a/b/c/d/x.parquet": ""}, "e", Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range tc.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if body == "fifo" {
					// Path must not wait for a writer that never comes.
					if err := syscall.Mkfifo(p, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := Path(filepath.Join(root, tc.path)); got != tc.want {
				t.Fatalf("Path(%s) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}
