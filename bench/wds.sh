#!/usr/bin/env bash
# Measures `bpconvert convert-wds` against what this machine needs to make
# a durable, hashed copy of the same bytes, all in the same run with a warm
# page cache, in turns (one run of each command per round, medians):
#
#   limit = max(cp -r SRC X && sync -f X, openssl dgst -sha256 SRC)
#
# (a copy made durable, and the SHA-256 of the bytes at the fastest
# implementation here; both can run at once on two cores. coreutils
# sha256sum has no SHA-NI path on some CPUs and is not used.) For each case
# it prints the ratio limit / convert-wds (target >= 0.9), the cost of the
# manifest as default / --no-manifest (target <= 1.15; beside it the least cost this machine allows the run, manifest_floor in lib.sh), seconds per GB and
# peak RSS (target <= 64 MiB), each with the one-minute load averages at the
# start of its runs (a figure measured under load is noisy; say so):
#   1. 2 GB of 100 KiB members in 20 plain tar shards (WDS_MB, default
#      2000), written with Python's tarfile (USTAR, as webdataset's
#      TarWriter does), RUNS rounds (default 3);
#   2. the same at 16 GB in 160 shards (WDS_BIG_MB, default 16000; 0 skips
#      it), RUNS_BIG rounds (default 1): seconds per GB and peak RSS beside
#      case 1's show whether cost grows with bytes only and memory stays
#      flat. Outputs are deleted between runs here (there is no room to set
#      them aside), which makes the next command meet a discarding disk;
#   3. one shard holding a 5 GiB member (BIG_GIB, default 5; 0 skips it):
#      peak RSS, which must not grow with the member.
# Peak RSS is the largest resident set of the command and what it waits for
# (ru_maxrss).
#
# The figures also replace the bench/wds.sh section of docs/performance.md
# (BENCH_DOC=path writes another file, BENCH_DOC=none none).
#
# Needs bin/bpconvert with convert-wds (or BPCONVERT=path), python3, bc,
# openssl, and about 3 x WDS_BIG_MB MB free in BENCH_DIR (default: a new
# directory under ${TMPDIR:-/var/tmp}). WDS_ARGS adds arguments to every
# convert-wds call (default --quiet).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$here/../bin/bpconvert}
runs=${RUNS:-3}
runs_big=${RUNS_BIG:-1}
mb=${WDS_MB:-2000}
bigmb=${WDS_BIG_MB:-16000}
big=${BIG_GIB:-5}
read -r -a extra <<<"${WDS_ARGS:---quiet}"
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

if ! "$bin" convert-wds --help >/dev/null 2>&1; then
  echo "bench/wds.sh: $bin has no convert-wds command (build it: make build)" >&2
  exit 2
fi
head=$(bench_head bench/wds.sh "$work")
echo "# $head"

# gen_big DIR GIB: one shard with a GIB GiB member (streamed, never in
# memory) and a small caption beside it.
gen_big() {
  python3 - "$@" <<'PY'
import io, os, sys, tarfile
d, gib = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
size = gib << 30
class Stream(io.RawIOBase):
    def __init__(self):
        self.block, self.left, self.n = os.urandom(1 << 20), size, 0
    def readable(self):
        return True
    def readinto(self, b):
        k = min(len(b), self.left, len(self.block))
        b[:k] = self.block[:k]
        if k >= 8:
            b[:8] = self.n.to_bytes(8, "little")
        self.n += 1
        self.left -= k
        return k
with tarfile.open(os.path.join(d, "big-000000.tar"), "w", format=tarfile.PAX_FORMAT) as tf:
    ti = tarfile.TarInfo("000000.bin")
    ti.size, ti.mtime = size, 1700000000
    tf.addfile(ti, io.BufferedReader(Stream(), 1 << 20))
    cap = b"a five gibibyte member\n"
    ti = tarfile.TarInfo("000000.txt")
    ti.size, ti.mtime = len(cap), 1700000000
    tf.addfile(ti, io.BytesIO(cap))
PY
}

rows=()

# case_shards NAME MB ROUNDS CLEAN: MB MB of 100 KiB members in shards of
# 100 MB; CLEAN is "aside" (earlier outputs set aside) or "delete".
case_shards() {
  local name=$1 mb=$2 rounds=$3 clean=$4
  local src="$work/shards" size=102400
  local count=$((mb * 1000000 / size)) shards=$(((mb + 99) / 100))
  gen_shards "$src" "$shards" "$count" "$size"
  warm "$src"
  local bytes x=""
  bytes=$(du -sb "$src" | cut -f1)
  [ ${#extra[@]} -eq 0 ] || x=$(printf "'%s' " "${extra[@]}")
  if [ "$clean" = aside ]; then
    BENCH_CLEAN="set_aside '$work/cp-out' '$work/wds-out'"
  else
    BENCH_CLEAN="rm -rf '$work/cp-out' '$work/wds-out' '$work/.trash'"
  fi
  local -a m
  # in turns, one run of each per round (see measure_turns)
  mapfile -t m < <(BENCH_CLEAN=$BENCH_CLEAN measure_turns "$rounds" \
    "cp -r '$src' '$work/cp-out' && sync -f '$work/cp-out'" \
    "openssl dgst -sha256 '$src'/*.tar" \
    "'$bin' convert-wds --yes $x'$src' '$work/wds-out'" \
    "'$bin' convert-wds --yes --no-manifest $x'$src' '$work/wds-out'")
  local shard
  # (only bpconvert's outputs hold .zip files; they are set aside or,
  # deleted between runs, the last run's)
  shard=$(largest_zip "$work")
  rm -rf "$work/cp-out" "$work/wds-out" "$work/.trash" "$src"
  local tsync tsha twds tnm rss rssnm l cwds floor
  read -r tsync _ l1 l2 _ <<<"${m[0]}"; local lsync="$l1-$l2"
  read -r tsha _ l1 l2 _ <<<"${m[1]}"; local lsha="$l1-$l2"
  read -r twds rss l1 l2 cwds <<<"${m[2]}"; local lwds="$l1-$l2"
  read -r tnm rssnm l1 l2 _ <<<"${m[3]}"; local lnm="$l1-$l2"
  floor=$(manifest_floor "$cwds" "$tsha" "$bytes" "$shard" "$tnm")
  local limit gb
  limit=$(printf '%s\n%s\n' "$tsync" "$tsha" | sort -g | tail -1)
  gb=$(printf '%.3f' "$(echo "scale=4; $bytes/1000000000" | bc -l)")
  echo "$name: $shards tar shards, $count members x $size B, $gb GB of tar, $rounds round(s)"
  echo "  cp -r, then sync -f:       $tsync s  (load $lsync)"
  echo "  openssl dgst -sha256:      $tsha s  (load $lsha)"
  echo "  convert-wds:               $twds s  ($(per_gb "$twds" "$bytes") s/GB, $(echo "scale=0; $count/$twds" | bc -l) members/s), peak RSS $rss MiB, machine CPU $cwds s, largest shard $shard B  (load $lwds)"
  echo "  convert-wds --no-manifest: $tnm s  ($(per_gb "$tnm" "$bytes") s/GB), peak RSS $rssnm MiB  (load $lnm)"
  echo "  limit/convert-wds: $(ratio "$limit" "$twds")x (target >= 0.9); default/--no-manifest: $(ratio "$twds" "$tnm")x (target <= 1.15; this machine allows ${floor}x)"
  rows+=("| $name: $count x 100 KiB in $shards tar shards ($gb GB), $rounds round(s) | $tsync s ($lsync) | $tsha s ($lsha) | $twds s, $(per_gb "$twds" "$bytes") s/GB ($lwds) | $tnm s ($lnm) | $(ratio "$limit" "$twds")x | $(ratio "$twds" "$tnm")x (${floor}x) | $rss MiB |")
}

case_big() {
  local src="$work/big"
  gen_big "$src" "$big"
  warm "$src"
  local -a m
  mapfile -t m < <(BENCH_CLEAN="rm -rf '$work/cp-out' '$work/wds-out'" measure_turns 1 \
    "cp -r '$src' '$work/cp-out' && sync -f '$work/cp-out'" \
    "'$bin' convert-wds --yes ${extra[*]} '$src' '$work/wds-out'")
  rm -rf "$work/cp-out" "$work/wds-out" "$src"
  local tsync twds rss l1 l2 l3 l4
  read -r tsync _ l1 l2 _ <<<"${m[0]}"
  read -r twds rss l3 l4 _ <<<"${m[1]}"
  echo "big member: one shard with a $big GiB member"
  echo "  cp -r, then sync -f: $tsync s (load $l1); convert-wds: $twds s (load $l3); peak RSS $rss MiB"
  rows+=("| one shard holding a $big GiB member, 1 round | $tsync s ($l1) | | $twds s ($l3) | | $(ratio "$tsync" "$twds")x of cp + sync | | $rss MiB |")
}

case_shards "$mb MB" "$mb" "$runs" aside
if [ "$bigmb" -gt 0 ]; then
  case_shards "$bigmb MB" "$bigmb" "$runs_big" delete
fi
if [ "$big" -gt 0 ]; then
  case_big
fi

{
  echo "Measured by $head; $turns_method; $manifest_note."
  echo
  echo "| case | \`cp -r\` + \`sync -f\` | \`openssl dgst -sha256\` | \`convert-wds\` | \`--no-manifest\` | limit / convert (target >= 0.9) | default / \`--no-manifest\` (target <= 1.15) | peak RSS (target <= 64 MiB) |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} | perf_doc bench/wds.sh
