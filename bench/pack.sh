#!/usr/bin/env bash
# Measures `bpconvert pack` against what this machine needs to make a
# durable, hashed copy of the same files, all in the same run with a warm
# page cache, in turns (one run of each command per round, medians):
#
#   limit = max(cp -r SRC X && sync -f X, openssl dgst -sha256 of the files)
#
# (a copy made durable, and the SHA-256 of the bytes at the fastest
# implementation here; both can run at once on two cores. coreutils
# sha256sum has no SHA-NI path on some CPUs and is not used.) For each case
# it prints the ratio limit / pack (target >= 0.9), the cost of the
# manifest as default / --no-manifest (target <= 1.15; beside it the least cost this machine allows the run, manifest_floor in lib.sh), seconds per GB,
# files per second and peak RSS (target <= 64 MiB), each with the one-minute
# load averages at the start of its runs (a figure measured under load is
# noisy; say so):
#   1. 2 GB of 100 KiB files (PACK_MB, default 2000), RUNS rounds (default 3)
#   2. 200,000 x 1 KiB files (SMALL_FILES, default 200000), RUNS rounds
#   3. 2,000,000 x 1 KiB files (MANY_FILES, default 2000000; 0 skips it),
#      RUNS_BIG rounds (default 1): peak RSS beside case 2's shows whether
#      memory stays flat with the count (target <= 64 MiB). Outputs are
#      deleted between runs here, which makes the next command meet a
#      discarding disk;
#   4. large members: 4 files of BIG_MB/4 MB each (BIG_MB, default 2000;
#      0 skips it), RUNS rounds.
# Peak RSS is the largest resident set of the command and what it waits for
# (ru_maxrss).
#
# The figures also replace the bench/pack.sh section of docs/performance.md
# (BENCH_DOC=path writes another file, BENCH_DOC=none none).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$here/../bin/bpconvert}
runs=${RUNS:-3}
runs_big=${RUNS_BIG:-1}
mb=${PACK_MB:-2000}
small=${SMALL_FILES:-200000}
many=${MANY_FILES:-2000000}
bigmb=${BIG_MB:-2000}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

head=$(bench_head bench/pack.sh "$work")
echo "# $head"

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

rows=()

case_run() { # case_run NAME COUNT SIZE ROUNDS CLEAN(aside|delete)
  local name=$1 count=$2 size=$3 rounds=$4 clean=$5
  local src="$work/$name-src"
  gen "$src" "$count" "$size"
  warm "$src"
  local bytes=$((count * size))
  if [ "$clean" = aside ]; then
    BENCH_CLEAN="set_aside '$work/cp-out' '$work/pack-out'"
  else
    BENCH_CLEAN="rm -rf '$work/cp-out' '$work/pack-out' '$work/.trash'"
  fi
  local -a m
  # in turns, one run of each per round (see measure_turns)
  mapfile -t m < <(BENCH_CLEAN=$BENCH_CLEAN measure_turns "$rounds" \
    "cp -r '$src' '$work/cp-out' && sync -f '$work/cp-out'" \
    "find '$src' -type f -print0 | xargs -0 openssl dgst -sha256" \
    "'$bin' pack --quiet '$src' '$work/pack-out'" \
    "'$bin' pack --quiet --no-manifest '$src' '$work/pack-out'")
  local shard
  # (only bpconvert's outputs hold .zip files; they are set aside or,
  # deleted between runs, the last run's)
  shard=$(largest_zip "$work")
  rm -rf "$work/cp-out" "$work/pack-out" "$work/.trash" "$src"
  local tsync tsha tpack tnm rss rssnm l1 l2 cpack
  read -r tsync _ l1 l2 _ <<<"${m[0]}"; local lsync="$l1-$l2"
  read -r tsha _ l1 l2 _ <<<"${m[1]}"; local lsha="$l1-$l2"
  read -r tpack rss l1 l2 cpack <<<"${m[2]}"; local lpack="$l1-$l2"
  read -r tnm rssnm l1 l2 _ <<<"${m[3]}"; local lnm="$l1-$l2"
  local floor
  floor=$(manifest_floor "$cpack" "$tsha" "$bytes" "$shard" "$tnm")
  local limit gb
  limit=$(printf '%s\n%s\n' "$tsync" "$tsha" | sort -g | tail -1)
  gb=$(printf '%.3f' "$(echo "scale=4; $bytes/1000000000" | bc -l)")
  echo "$name: $count files x $size B = $gb GB, $rounds round(s)"
  echo "  cp -r, then sync -f: $tsync s  ($(echo "scale=0; $count/$tsync" | bc -l) files/s; load $lsync)"
  echo "  openssl dgst -sha256: $tsha s  (load $lsha)"
  echo "  bpconvert pack:      $tpack s  ($(per_gb "$tpack" "$bytes") s/GB, $(echo "scale=0; $count/$tpack" | bc -l) files/s), peak RSS $rss MiB, machine CPU $cpack s, largest shard $shard B  (load $lpack)"
  echo "  pack --no-manifest:  $tnm s  ($(per_gb "$tnm" "$bytes") s/GB), peak RSS $rssnm MiB  (load $lnm)"
  echo "  limit/pack: $(ratio "$limit" "$tpack")x (target >= 0.9); default/--no-manifest: $(ratio "$tpack" "$tnm")x (target <= 1.15; this machine allows ${floor}x)"
  rows+=("| $name: $count files of $size B ($gb GB), $rounds round(s) | $tsync s ($lsync) | $tsha s ($lsha) | $tpack s, $(per_gb "$tpack" "$bytes") s/GB, $(echo "scale=0; $count/$tpack" | bc -l) files/s ($lpack) | $tnm s ($lnm) | $(ratio "$limit" "$tpack")x | $(ratio "$tpack" "$tnm")x (${floor}x) | $rss MiB |")
}

case_run large $((mb * 1000000 / 102400)) 102400 "$runs" aside
case_run small "$small" 1024 "$runs" aside
if [ "$many" -gt 0 ]; then
  case_run many "$many" 1024 "$runs_big" delete
fi
if [ "$bigmb" -gt 0 ]; then
  case_run big 4 $((bigmb * 1000000 / 4)) "$runs" aside
fi

{
  echo "Measured by $head; $turns_method; $manifest_note."
  echo
  echo "| case | \`cp -r\` + \`sync -f\` | \`openssl dgst -sha256\` | \`pack\` | \`--no-manifest\` | limit / pack (target >= 0.9) | default / \`--no-manifest\` (target <= 1.15) | peak RSS (target <= 64 MiB) |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | perf_doc bench/pack.sh
