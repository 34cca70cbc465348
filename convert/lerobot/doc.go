// Package lerobot converts a LeRobot dataset (codebase v2.0, v2.1 or v3.0,
// in LeRobot's default layout of parquet tables and mp4 files, or v3.0
// stored as Lance: frames.lance, videos.lance, meta.lance; see
// lancestore.go) into the blob-pack layout in one step:
//
//	DST/media/pack-NNNN.zip   camera files and extracted frames, STORED
//	DST/data/                 the tables: copied byte for byte, or rewritten
//	                          with image columns as blob references
//	DST/meta/                 copied unchanged (info.json keeps working for
//	                          LeRobot loaders that ignore media)
//	DST/video_index.json      one [from_ns, to_ns) interval per episode and
//	                          camera (convert/lerobot/videoindex), on the
//	                          stream's own time axis
//	DST/video_frames.parquet  one row per data row, per camera a MediaRef
//	                          cell {uri, pts_ns} (FramesFile)
//
// The dataset is a local directory or a prefix in a bucket (s3://), read
// through srctree by relative names, each file once where a local
// conversion reads it once (a camera file's plan reads its MP4 boxes only).
// Image features inside the tables are read from a local directory only; a
// dataset stored as Lance is read from a bucket too (its tables through
// lancefmt/lancestore, each blob of videos.lance as a section of the object
// that holds it).
//
// Inspect reads meta/info.json and the episode metadata, locates every camera
// file from the video_path template, refuses inconsistent metadata, scans the
// files' keyframes (through a video.Engine; a camera file stored as a
// Lance blob is read in place through video.Input) and decides, per v3.0 camera
// file, whether it is cut into one container per episode by packet copy or
// kept whole and addressed by interval. It writes nothing; Inspection.Plan
// describes the result as a plan.Plan. Convert then writes everything through
// convert.Begin: a staging directory that appears at DST only when complete.
// Job puts the two on the converter contract (convert.Job) for the CLI.
// Problems with the dataset are *convert.InputError values; options that
// leave nothing to convert are a *convert.UsageError.
//
// The package ties the pieces together; it does not demux or mux video itself
// (the Engine does: convert/lerobot/video/libav, the only package of bpconvert
// that uses cgo, handed in by the caller so that this package builds and
// tests without cgo), does not rewrite tables itself (convert/parquet does)
// and never re-encodes. It never prints; progress goes through a
// progress.Counter.
package lerobot
