package lerobotverify

import "testing"

// TestPyFormat: LeRobot's path templates are filled as Python's str.format
// fills them, and a template that leaves the dataset is refused.
func TestPyFormat(t *testing.T) {
	t.Parallel()
	vals := map[string]any{"video_key": "observation.images.top", "chunk_index": int64(0), "file_index": int64(12)}
	for _, tc := range []struct {
		tmpl, want string // want "": an error
	}{
		{"videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4", "videos/observation.images.top/chunk-000/file-012.mp4"},
		{"videos/chunk-{chunk_index:d}/{video_key}/episode_{file_index:06d}.mp4", "videos/chunk-0/observation.images.top/episode_000012.mp4"},
		{"v/{{x}}/{file_index}.mp4", "v/{x}/12.mp4"},
		{"v/{video_key:s}.mp4", "v/observation.images.top.mp4"},
		{"v/{episode_index}.mp4", ""},
		{"v/{file_index:x}.mp4", ""},
		{"v/{video_key:03d}.mp4", ""},
		{"v/{file_index.mp4", ""},
		{"v/}.mp4", ""},
		{"../{video_key}.mp4", ""},
		{"/abs/{video_key}.mp4", ""},
		{"v//{video_key}.mp4", ""},
	} {
		got, err := pyFormat(tc.tmpl, vals)
		if tc.want == "" && err == nil || tc.want != "" && (err != nil || got != tc.want) {
			t.Errorf("%q: %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
}
