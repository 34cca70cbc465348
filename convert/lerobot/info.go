package lerobot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/bpconvert/bpconvert/convert/lerobot/videoindex"
	"github.com/bpconvert/bpconvert/internal/atomicfile"
	"github.com/bpconvert/bpconvert/internal/jsonobj"
)

// Where the videos went, as meta/info.json of a converted dataset says it.
//
// The camera files are no longer under videos/: they are members of the
// packs, and video_index.json maps every (episode, camera) to its zip://
// reference and [from_ns, to_ns) interval. The converted info.json keeps
// every field but two:
//
//   - video_path names a directory that does not exist and says why
//     (packedVideoDir), keeping the template's placeholders, so LeRobot's
//     loader, which formats the template and opens the file, fails with a
//     missing-file error whose path tells the reader to look at
//     video_index.json, instead of a bare "videos/... not found";
//   - a "bpconvert" object is added with the original template, the index
//     and the pack directory, for tools that read the converted dataset.
//
// A dataset stored as Lance converts to the same layout as its parquet
// twin (tables under data/, camera files in the packs), so its
// storage_format member is removed, as the parquet layout, LeRobot's
// default, has none; the bpconvert object records it as
// source_storage_format instead.
const packedVideoDir = "videos-are-packed-see-video_index.json"

// infoRecord is the "bpconvert" object added to meta/info.json.
type infoRecord struct {
	Videos          string `json:"videos"`
	VideoIndex      string `json:"video_index"`
	PackDir         string `json:"pack_dir"`
	SourceVideoPath string `json:"source_video_path"`
	// SourceStorage is the source's storage_format when it was not the
	// default ("lance").
	SourceStorage string `json:"source_storage_format,omitempty"`
}

// rewriteVideoPath returns info.json with video_path pointing into
// packedVideoDir and the bpconvert record added, and for a source of
// storage format StorageLance its storage_format member removed; the other
// members keep their order and values. LeRobot writes info.json with a
// four-space indent, and so does this.
func rewriteVideoPath(info []byte, packDir, storage string) ([]byte, error) {
	all, err := jsonobj.Parse(info)
	if err != nil {
		return nil, err
	}
	ms := all[:0]
	for _, m := range all {
		if m.Key != "storage_format" || storage == StorageParquet {
			ms = append(ms, m)
		}
	}
	var src string
	found := false
	for i, m := range ms {
		switch m.Key {
		case "video_path":
			if err := json.Unmarshal(m.Value, &src); err != nil || src == "" {
				return nil, errors.New("video_path is not a template string")
			}
			first, rest, _ := strings.Cut(src, "/")
			if first == packedVideoDir {
				return info, nil // already rewritten
			}
			if rest == "" {
				rest = first
			}
			v, _ := json.Marshal(packedVideoDir + "/" + rest)
			ms[i].Value, found = v, true
		case "bpconvert":
			return nil, errors.New("already has a bpconvert member")
		}
	}
	if !found {
		return nil, errors.New("no video_path")
	}
	r := infoRecord{
		Videos: "packed: every camera file (or one container per episode cut from it) is a member of " + packDir +
			"/pack-NNNN.zip; " + videoindex.FileName + " gives each (episode, camera) its zip:// reference and [from_ns, to_ns) interval",
		VideoIndex:      videoindex.FileName,
		PackDir:         packDir,
		SourceVideoPath: src,
	}
	if storage != StorageParquet {
		r.SourceStorage = storage
	}
	rec, _ := json.Marshal(r)
	ms = append(ms, jsonobj.Member{Key: "bpconvert", Value: rec})
	var out bytes.Buffer
	if err := json.Indent(&out, jsonobj.Encode(ms), "", "    "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// rewriteInfoFile rewrites the copied meta/info.json at path (see
// rewriteVideoPath).
func rewriteInfoFile(path, packDir, storage string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := rewriteVideoPath(b, packDir, storage)
	if err != nil {
		return fmt.Errorf("meta/info.json: %w", err)
	}
	return atomicfile.WriteFile(path, out, 0o644)
}
