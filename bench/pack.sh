#!/usr/bin/env bash
# Measures `bpconvert pack` against `cp -r` of the same files, both in the
# same run with a warm page cache, median of RUNS runs:
#   1. 2 GB of 100 KiB files (PACK_MB, default 2000)
#   2. 200,000 x 1 KiB files (SMALL_FILES, default 200000)
# Prints throughput ratios (cp time / pack time; >= 1.0 means pack is as
# fast as cp or faster) and files per second. bpconvert fsyncs and hashes
# every shard it writes and cp does neither, so cp followed by sync is timed
# too, as the baseline that makes the copy durable.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$here/../bin/bpconvert}
runs=${RUNS:-3}
mb=${PACK_MB:-2000}
small=${SMALL_FILES:-200000}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

echo "# bench/pack.sh: $(nproc) cores, runs=$runs, work dir on $(df --output=source "$work" | tail -1)"

gen() { # gen DIR COUNT SIZE
  python3 - "$1" "$2" "$3" <<'PY'
import os, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
block = os.urandom(size)
for i in range(n):
    sub = os.path.join(d, f"{i // 1000:04d}")
    if i % 1000 == 0:
        os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"{i:08d}.jpg"), "wb") as f:
        # vary the bytes per file without paying for os.urandom each time
        f.write(i.to_bytes(8, "little") + block[8:])
PY
}

case_run() { # case_run NAME COUNT SIZE
  local name=$1 count=$2 size=$3
  local src="$work/$name-src"
  gen "$src" "$count" "$size"
  warm "$src"
  local bytes=$((count * size))
  BENCH_CLEAN="set_aside '$work/cp-out' '$work/pack-out'"
  local tcp tcps tpack
  tcp=$(time_runs "$runs" cp -r "$src" "$work/cp-out")
  tcps=$(time_runs "$runs" sh -c "cp -r '$src' '$work/cp-out' && sync")
  tpack=$(time_runs "$runs" "$bin" pack --quiet "$src" "$work/pack-out")
  eval "$BENCH_CLEAN"
  local rss
  rss=$(peak_rss_mib "$bin" pack --quiet "$src" "$work/pack-out")
  eval "$BENCH_CLEAN"
  echo "$name: $count files x $size B = $(echo "scale=3; $bytes/1000000000" | bc -l) GB"
  echo "  cp -r:          $tcp s  ($(echo "scale=0; $bytes/$tcp/1000000" | bc -l) MB/s, $(echo "scale=0; $count/$tcp" | bc -l) files/s)"
  echo "  bpconvert pack: $tpack s  ($(echo "scale=0; $bytes/$tpack/1000000" | bc -l) MB/s, $(echo "scale=0; $count/$tpack" | bc -l) files/s), peak RSS $rss MiB"
  echo "  cp -r + sync:   $tcps s"
  echo "  throughput ratio pack/cp: $(ratio "$tcp" "$tpack")x   (pack fsyncs and hashes every shard; against cp + sync: $(ratio "$tcps" "$tpack")x)"
  rm -rf "$src"
}

case_run large $((mb * 1000000 / 102400)) 102400
case_run small "$small" 1024
