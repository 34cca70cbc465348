//go:build cgo

// Package libav implements video.Engine with libav (through
// github.com/asticode/go-astiav v0.16.0, FFmpeg 5.1): ScanKeyframes reads a
// camera file's packet timing without decoding, and Split cuts a
// keyframe-aligned file into one MP4 per episode by packet copy in one pass
// over the input. ScanInput does the same for a camera file that is not a
// file of its own (a blob of a Lance table, an object in a bucket): libav
// reads it through a custom IO context whose callbacks call io.ReaderAt, so
// the bytes are read in place and never copied to disk. A scan of an MP4 or
// MOV file reads its boxes but not its sample data (the mdat payloads):
// the timing comes from the sample tables, as a demux of the whole file
// gives it, so planning a remote dataset fetches kilobytes per camera file.
//
// It is the only package of bpconvert that uses cgo, and only the
// bpconvert-lerobot program (cmd/bpconvert built with the "lerobot" tag)
// links it; convert/lerobot receives it as a video.Engine. It holds the
// libav calls and nothing else: the checks and decisions on the packet
// timing live in package video. Libraries never print, so libav's own
// logging is switched off the first time this package opens a file;
// failures come back as Go errors.
package libav
