// Package video is the cgo-free half of bpconvert's LeRobot video work: the
// data types of a camera file's packet timing (Scan, Packet, Rational), the
// check of a file's episode intervals against its keyframes that refuses
// inconsistent metadata (ValidateEpisodes, CheckBoundaries), the decision
// whether a file can be cut by packet copy (Report.Decide), and the Engine
// interface that reads and cuts the files.
//
// A converter uses it per camera file, before writing anything:
//
//	scan, err := engine.ScanKeyframes(ctx, path) // or engine.ScanInput(ctx, video.Input{...}) for a blob
//	rep, err := video.CheckBoundaries(scan, key, file, episodes, video.Options{FPS: fps})
//	// rep (boundaries on keyframes, pre-roll, footage after the last episode)
//	// feeds the plan; rep.Decide() says whether the file can be cut.
//	if rep.Decide().Split {
//		outs, err := engine.Split(ctx, rep, dest)
//	} else {
//		// keep the file whole and address its episodes by [from_ns, to_ns)
//	}
//
// Nothing is ever re-encoded: a file whose episode boundaries do not land on
// keyframes is reported as not splittable, and the caller keeps it whole.
//
// The Engine that demuxes and muxes is convert/lerobot/video/libav, the only
// package of bpconvert that uses cgo and libav; this package, and
// convert/lerobot that depends on it, build and test without either. It is
// not a general media library: it handles files with one video stream (as
// LeRobot writes them), does not read LeRobot metadata (the caller passes
// episode intervals), and does not write packs or the video index (see
// convert/lerobot/videoindex).
package video
