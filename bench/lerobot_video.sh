#!/usr/bin/env bash
# Measures the LeRobot video path (package convert/lerobot/video/libav) against the
# reference converter's route, both in the same run with a warm page cache,
# median of RUNS runs:
#   1. split: 12 episodes x 2 cameras, v3.0-style files (each episode encoded
#      on its own, concatenated by packet copy as LeRobot does).
#      ours:      one process, videobench split (scan + check + one-pass cut per file)
#      reference: per file, ffprobe -skip_frame nokey keyframe probe, then
#                 ffmpeg -c copy -f segment -segment_times ... -reset_timestamps 1
#   2. keyframe scan of both files: videobench scan vs ffprobe -skip_frame nokey
#   3. the same two comparisons in-process (go test -bench, no process start):
#      BenchmarkScanKeyframes vs BenchmarkFFprobeSkipFrameNokey and
#      BenchmarkSplit12 vs BenchmarkSegmentMuxer12 (one camera)
# Targets (issue 6): split >= 3x, keyframe scan >= 10x faster.
#
# Knobs: RUNS (5), EP_SECONDS (10), SIZE (640x480), FPS (30), GOP (30),
# NOISE (6; ffmpeg noise strength, gives camera-like bitrates; 0 = off),
# BENCH_DIR (a fresh temp dir), SKIP_GO_BENCH=1 to skip part 3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
runs=${RUNS:-5}
secs=${EP_SECONDS:-10}
size=${SIZE:-640x480}
fps=${FPS:-30}
gop=${GOP:-30}
noise=${NOISE:-6}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
trap 'rm -rf "$work"' EXIT

for t in ffmpeg ffprobe go bc; do
  command -v "$t" >/dev/null || { echo "bench/lerobot_video.sh: $t is not on PATH" >&2; exit 1; }
done

echo "# bench/lerobot_video.sh: $(nproc) cores, runs=$runs, $(ffmpeg -version | head -1 | cut -d' ' -f1-3), work dir on $(df --output=source "$work" | tail -1)"

(cd "$root" && go build -o "$work/videobench" ./convert/lerobot/video/internal/videobench)

ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
vf="hue=h=0"
[ "$noise" != 0 ] && vf="noise=alls=$noise:allf=t"

# Two cameras, 12 episodes each, each episode its own libx264 encode
# (veryfast: B-frames; fixed GOP), concatenated like LeRobot v3.0.

for cam in 0 1; do
  d="$work/src/cam$cam"
  mkdir -p "$d"
  : >"$d/list.ffconcat"
  echo "ffconcat version 1.0" >"$d/list.ffconcat"
  acc=0
  bounds="0"
  for ep in $(seq 0 11); do
    f=$(printf '%s/episode_%06d.mp4' "$d" "$ep")
    ff -f lavfi -i "testsrc2=size=$size:rate=$fps:duration=$secs,hue=h=$((ep * 30 + cam * 15))" -vf "$vf" \
      -c:v libx264 -preset veryfast -g "$gop" -keyint_min "$gop" -sc_threshold 0 -pix_fmt yuv420p \
      -movflags +faststart "$f"
    echo "file '$(basename "$f")'" >>"$d/list.ffconcat"
    dur=$(ffprobe -v error -select_streams v:0 -show_entries stream=duration -of csv=p=0 "$f")
    acc=$(echo "$acc + $dur" | bc -l)
    bounds="$bounds,$acc"
  done
  ff -f concat -safe 0 -i "$d/list.ffconcat" -c copy -movflags +faststart "$work/cam$cam.mp4"
done
files=("$work/cam0.mp4" "$work/cam1.mp4")
warm "$work"
echo "input: 2 files x 12 episodes x ${secs}s, $size @ ${fps} fps, GOP $gop, $(du -cb "${files[@]}" | tail -1 | cut -f1) bytes"

# The reference route for one file: keyframe probe, then the segment muxer
# at the matched keyframe times of episodes 2..12 (here: the boundaries).
ref_split() { # ref_split OUTDIR FILE
  local out=$1 f=$2
  mkdir -p "$out"
  ffprobe -v error -select_streams v:0 -skip_frame nokey -show_entries frame=pts_time -of json "$f" >"$out/keys.json"
  ff -i "$f" -c copy -f segment -segment_times "${bounds#0,}" -reset_timestamps 1 "$out/part%05d.mp4"
}
ref_all() { for f in "${files[@]}"; do ref_split "$work/ref/$(basename "$f")" "$f"; done; }
ref_scan() { for f in "${files[@]}"; do ffprobe -v error -select_streams v:0 -skip_frame nokey -show_entries frame=pts_time -of json "$f"; done; }

# sanity: both routes produce 12 parts per camera
"$work/videobench" split -fps "$fps" -times "$bounds" "$work/ours" "${files[@]}"
ref_all
for f in "${files[@]}"; do
  b=$(basename "$f")
  n_ours=$(find "$work/ours/$b" -name 'episode_*.mp4' | wc -l)
  n_ref=$(find "$work/ref/$b" -name 'part*.mp4' | wc -l)
  [ "$n_ours" = 12 ] && [ "$n_ref" = 12 ] || { echo "expected 12 parts per camera, got $n_ours (ours) / $n_ref (reference)" >&2; exit 1; }
done

BENCH_CLEAN="set_aside '$work/ours' '$work/ref'"
t_ours=$(time_runs "$runs" "$work/videobench" split -fps "$fps" -times "$bounds" "$work/ours" "${files[@]}")
t_ref=$(time_runs "$runs" ref_all)
unset BENCH_CLEAN
echo "split 12 episodes x 2 cameras:"
printf '  reference (ffprobe + segment muxer): %.3f s\n' "$t_ref"
printf '  videobench split:                    %.3f s   (%s x faster; target >= 3)\n' "$t_ours" "$(ratio "$t_ref" "$t_ours")"

s_ours=$(time_runs "$runs" "$work/videobench" scan "${files[@]}")
s_ref=$(time_runs "$runs" ref_scan)
echo "keyframe scan of 2 files (process start included):"
printf '  ffprobe -skip_frame nokey:           %.3f s\n' "$s_ref"
printf '  videobench scan:                     %.3f s   (%s x faster; target >= 10)\n' "$s_ours" "$(ratio "$s_ref" "$s_ours")"

{
  echo "Measured by $(bench_head bench/lerobot_video.sh "$work"); medians of $runs runs, warm page cache, whole processes (start-up included). 2 camera files of 12 episodes x ${secs} s, $size at $fps fps, GOP $gop, each episode encoded on its own and concatenated by packet copy as LeRobot does. Ratio = reference time / bpconvert time."
  echo
  echo "| task | reference route | reference | bpconvert (\`convert/lerobot/video\`) | ratio |"
  echo "|---|---|---|---|---|"
  echo "| split 12 episodes x 2 cameras | ffprobe keyframes + ffmpeg segment muxer | $(secs "$t_ref") s | $(secs "$t_ours") s | $(ratio "$t_ref" "$t_ours")x (target >= 3) |"
  echo "| keyframe scan of 2 camera files | \`ffprobe -skip_frame nokey\` | $(secs "$s_ref") s | $(secs "$s_ours") s | $(ratio "$s_ref" "$s_ours")x (target >= 10) |"
} | perf_doc bench/lerobot_video.sh

if [ "${SKIP_GO_BENCH:-}" != 1 ]; then
  echo "in-process (go test -bench, its own 12 x 10 s 640x480 file, one camera):"
  (cd "$root" && go test -run '^$' -bench 'ScanKeyframes|FFprobeSkipFrameNokey|Split12|SegmentMuxer12' \
    -benchtime "${runs}x" -count 1 ./convert/lerobot/video/libav/) |
    awk '/^Benchmark/ {name=$1; sub(/-[0-9]+$/, "", name); ns[name]=$3; printf "  %-32s %8.1f ms/op\n", name, $3/1e6}
         END {
           if (ns["BenchmarkScanKeyframes"] > 0) printf "  scan ratio:  %.1f x (target >= 10)\n", ns["BenchmarkFFprobeSkipFrameNokey"]/ns["BenchmarkScanKeyframes"];
           if (ns["BenchmarkSplit12"] > 0) printf "  split ratio: %.1f x (target >= 3)\n", ns["BenchmarkSegmentMuxer12"]/ns["BenchmarkSplit12"];
         }'
fi
