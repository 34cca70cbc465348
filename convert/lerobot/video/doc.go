// Package video is the LeRobot video part of bpconvert: it reads a camera
// file's packet timing without decoding (ScanKeyframes), checks a file's
// episode intervals against its keyframes and refuses inconsistent metadata
// (CheckBoundaries), and cuts a keyframe-aligned file into one MP4 per episode
// by packet copy in one pass over the input (Split).
//
// A converter uses it per camera file, before writing anything:
//
//	scan, err := video.ScanKeyframes(ctx, path)
//	rep, err := video.CheckBoundaries(scan, key, file, episodes, video.Options{FPS: fps})
//	// rep (boundaries on keyframes, pre-roll, footage after the last episode)
//	// feeds the plan; rep.Decide() says whether the file can be cut.
//	if rep.Decide().Split {
//		outs, err := video.Split(ctx, rep, dest)
//	} else {
//		// keep the file whole and address its episodes by [from_ns, to_ns)
//	}
//
// It never re-encodes: a file whose episode boundaries do not land on
// keyframes is reported as not splittable, and the caller keeps it whole.
//
// This is the only package of bpconvert that uses cgo and libav (through
// github.com/asticode/go-astiav v0.16.0, FFmpeg 5.1). It is not a general
// media library: it handles files with one video stream (as LeRobot writes
// them), does not decode, does not read LeRobot metadata (the caller passes
// episode intervals), and does not write packs or the video index (see the
// cgo-free package convert/lerobot/videoindex). Libraries never print, so
// libav's own logging is switched off the first time this package opens a
// file; failures come back as Go errors.
package video
