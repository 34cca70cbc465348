package lerobot

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRewriteVideoPath: info.json of a converted dataset points video_path
// at a directory that says where the videos went, keeping the template's
// placeholders and every other member; the original is recorded. The
// inputs are the templates LeRobot v2.x and v3.0 write (as in
// fixtures/parquet/lerobot.mjs).
func TestRewriteVideoPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "v3.0",
			in:   `{"codebase_version": "v3.0", "fps": 10, "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4", "features": {"a": {"dtype": "video"}}}`,
			want: packedVideoDir + "/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"},
		{name: "v2.1",
			in:   `{"codebase_version": "v2.1", "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"}`,
			want: packedVideoDir + "/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"},
		{name: "no video_path", in: `{"codebase_version": "v3.0"}`, err: "no video_path"},
		{name: "null video_path", in: `{"video_path": null}`, err: "not a template"},
		{name: "not an object", in: `[1]`, err: "not a JSON object"},
		{name: "recorded already", in: `{"video_path": "videos/x.mp4", "bpconvert": {}}`, err: "already has"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := rewriteVideoPath([]byte(tc.in), "media", StorageParquet)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got, orig map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			json.Unmarshal([]byte(tc.in), &orig)
			if got["video_path"] != tc.want {
				t.Errorf("video_path %q, want %q", got["video_path"], tc.want)
			}
			rec, _ := got["bpconvert"].(map[string]any)
			if rec["source_video_path"] != orig["video_path"] || rec["video_index"] != "video_index.json" || rec["pack_dir"] != "media" {
				t.Errorf("record %v", rec)
			}
			for k, v := range orig {
				if k != "video_path" && !equalJSON(got[k], v) {
					t.Errorf("member %q changed: %v, was %v", k, got[k], v)
				}
			}
			if !strings.HasPrefix(string(out), "{\n    \"codebase_version\"") && strings.Contains(tc.in, "codebase_version") {
				t.Errorf("not indented as LeRobot writes it:\n%s", out)
			}
			// Rewriting again changes nothing.
			again, err := rewriteVideoPath(out, "media", StorageParquet)
			if err == nil && string(again) != string(out) {
				t.Error("a second rewrite changed the file")
			}
		})
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestRewriteInfoLance: a dataset stored as Lance converts to the parquet
// layout, so storage_format is dropped from info.json and recorded as
// bpconvert.source_storage_format; every other member is kept.
func TestRewriteInfoLance(t *testing.T) {
	t.Parallel()
	in := `{"codebase_version": "v3.0", "fps": 10, "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4", "storage_format": "lance"}`
	out, err := rewriteVideoPath([]byte(in), "media", StorageLance)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	rec, _ := got["bpconvert"].(map[string]any)
	if _, ok := got["storage_format"]; ok || rec["source_storage_format"] != "lance" || got["fps"] != 10.0 || got["codebase_version"] != "v3.0" {
		t.Errorf("rewritten info.json %s", out)
	}
	// A parquet source keeps an explicit storage_format and records none.
	out, err = rewriteVideoPath([]byte(strings.Replace(in, `"lance"`, `"parquet"`, 1)), "media", StorageParquet)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	json.Unmarshal(out, &got)
	rec, _ = got["bpconvert"].(map[string]any)
	if _, ok := rec["source_storage_format"]; got["storage_format"] != "parquet" || ok {
		t.Errorf("rewritten info.json %s", out)
	}
}
