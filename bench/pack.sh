#!/usr/bin/env bash
# Measures `bpconvert pack` against `cp -r` of the same files, both in the
# same run with a warm page cache, median of RUNS runs:
#   1. 2 GB of 100 KiB files (PACK_MB, default 2000)
#   2. 200,000 x 1 KiB files (SMALL_FILES, default 200000)
#   3. large members: 4 files of BIG_MB/4 MB each (BIG_MB, default 2000;
#      0 skips it)
# Prints throughput ratios (cp time / pack time; >= 1.0 means pack is as
# fast as cp or faster) and files per second. bpconvert fsyncs and hashes
# every shard it writes and cp does neither, so cp followed by sync is timed
# too, as the baseline that makes the copy durable. With the manifest the
# limit is the slower of copying and hashing the bytes, so `sha256sum` of
# the same files is timed and the ratio to max(cp, sha256sum) printed; pack
# --no-manifest (no hashing) is timed against cp.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$here/../bin/bpconvert}
runs=${RUNS:-3}
mb=${PACK_MB:-2000}
small=${SMALL_FILES:-200000}
bigmb=${BIG_MB:-2000}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

echo "# bench/pack.sh: $(nproc) cores, runs=$runs, work dir on $(df --output=source "$work" | tail -1)"

gen() { # gen DIR COUNT SIZE
  python3 - "$1" "$2" "$3" <<'PY'
import os, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
block = os.urandom(min(size, 1 << 20))
for i in range(n):
    sub = os.path.join(d, f"{i // 1000:04d}")
    if i % 1000 == 0:
        os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"{i:08d}.jpg"), "wb") as f:
        # vary the bytes per file (and per MiB) without paying for
        # os.urandom each time
        for off in range(0, size, len(block)):
            k = min(len(block), size - off)
            f.write((i * 1000003 + off).to_bytes(8, "little")[:k] + block[8:k])
PY
}

case_run() { # case_run NAME COUNT SIZE
  local name=$1 count=$2 size=$3
  local src="$work/$name-src"
  gen "$src" "$count" "$size"
  warm "$src"
  local bytes=$((count * size))
  BENCH_CLEAN="set_aside '$work/cp-out' '$work/pack-out'"
  local tcp tcps tpack tsha tnm limit t
  # in turns, one run of each per round (see time_turns)
  mapfile -t t < <(time_turns "$runs" \
    "cp -r '$src' '$work/cp-out'" \
    "cp -r '$src' '$work/cp-out' && sync" \
    "find '$src' -type f -print0 | sort -z | xargs -0 cat | sha256sum" \
    "'$bin' pack --quiet '$src' '$work/pack-out'" \
    "'$bin' pack --quiet --no-manifest '$src' '$work/pack-out'")
  tcp=${t[0]} tcps=${t[1]} tsha=${t[2]} tpack=${t[3]} tnm=${t[4]}
  limit=$(printf '%s\n%s\n' "$tcp" "$tsha" | sort -g | tail -1)
  eval "$BENCH_CLEAN"
  local rss
  rss=$(peak_rss_mib "$bin" pack --quiet "$src" "$work/pack-out")
  eval "$BENCH_CLEAN"
  echo "$name: $count files x $size B = $(echo "scale=3; $bytes/1000000000" | bc -l) GB"
  echo "  cp -r:          $tcp s  ($(echo "scale=0; $bytes/$tcp/1000000" | bc -l) MB/s, $(echo "scale=0; $count/$tcp" | bc -l) files/s)"
  echo "  bpconvert pack: $tpack s  ($(echo "scale=0; $bytes/$tpack/1000000" | bc -l) MB/s, $(echo "scale=0; $count/$tpack" | bc -l) files/s), peak RSS $rss MiB"
  echo "  cp -r + sync:   $tcps s"
  echo "  sha256sum:      $tsha s"
  echo "  pack --no-manifest: $tnm s"
  echo "  throughput ratio pack/cp: $(ratio "$tcp" "$tpack")x   (pack fsyncs and hashes every shard; against cp + sync: $(ratio "$tcps" "$tpack")x)"
  echo "  with manifest against max(cp, sha256sum): $(ratio "$limit" "$tpack")x; --no-manifest against cp: $(ratio "$tcp" "$tnm")x, against cp + sync: $(ratio "$tcps" "$tnm")x"
  rm -rf "$src"
}

case_run large $((mb * 1000000 / 102400)) 102400
case_run small "$small" 1024
if [ "$bigmb" -gt 0 ]; then
  case_run big 4 $((bigmb * 1000000 / 4))
fi
