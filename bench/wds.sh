#!/usr/bin/env bash
# Measures `bpconvert convert-wds` against `cp` of the same shards, both in
# the same run with a warm page cache, median of RUNS runs:
#   1. 2 GB of 100 KiB members in 20 plain tar shards (WDS_MB, default 2000),
#      written with Python's tarfile (USTAR, as webdataset's TarWriter does);
#      throughput ratio cp time / convert time (>= 1.0: as fast as cp) and
#      peak RSS. convert-wds fsyncs every shard it writes and hashes it for
#      the manifest, cp does neither, so a second baseline, cp followed by
#      sync of the copies, shows the cost of making the copy durable;
#      The limit with the manifest is the slower of copying and hashing the
#      bytes, so `sha256sum` of the shards is timed and the ratio to
#      max(cp, sha256sum) printed; --no-manifest (no hashing) is timed
#      against cp;
#   2. one shard holding a 5 GiB member (BIG_GIB, default 5; 0 skips it):
#      peak RSS, which must not grow with the member.
# Peak RSS is the largest resident set of the child process
# (Python's resource.getrusage(RUSAGE_CHILDREN).ru_maxrss).
#
# Needs bin/bpconvert with convert-wds (or BPCONVERT=path), python3, bc, and
# about 2 x (WDS_MB MB + BIG_GIB GiB) free in BENCH_DIR (default: a new
# directory under ${TMPDIR:-/var/tmp}). WDS_ARGS adds arguments to every
# convert-wds call (default --quiet).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$here/../bin/bpconvert}
runs=${RUNS:-3}
mb=${WDS_MB:-2000}
big=${BIG_GIB:-5}
shards=${WDS_SHARDS:-20}
read -r -a extra <<<"${WDS_ARGS:---quiet}"
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

if ! "$bin" convert-wds --help >/dev/null 2>&1; then
  echo "bench/wds.sh: $bin has no convert-wds command (build it: make build)" >&2
  exit 2
fi
echo "# bench/wds.sh: $(nproc) cores, runs=$runs, work dir on $(df --output=source "$work" | tail -1)"

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

case_shards() {
  local src="$work/shards" count=$((mb * 1000000 / 102400)) size=102400
  gen_shards "$src" "$shards" "$count" "$size"
  warm "$src"
  local bytes
  bytes=$(du -sb "$src" | cut -f1)
  BENCH_CLEAN="set_aside '$work/cp-out' '$work/wds-out'"
  local tcp tsync twds rss tsha tnm limit t x=""
  [ ${#extra[@]} -eq 0 ] || x=$(printf "'%s' " "${extra[@]}")
  # in turns, one run of each per round (see time_turns)
  mapfile -t t < <(time_turns "$runs" \
    "cp -r '$src' '$work/cp-out'" \
    "cp -r '$src' '$work/cp-out' && sync '$work/cp-out'/*" \
    "cat '$src'/*.tar | sha256sum" \
    "'$bin' convert-wds --yes $x'$src' '$work/wds-out'" \
    "'$bin' convert-wds --yes --no-manifest $x'$src' '$work/wds-out'")
  tcp=${t[0]} tsync=${t[1]} tsha=${t[2]} twds=${t[3]} tnm=${t[4]}
  limit=$(printf '%s\n%s\n' "$tcp" "$tsha" | sort -g | tail -1)
  eval "$BENCH_CLEAN"
  rss=$(peak_rss_mib "$bin" convert-wds --yes "${extra[@]}" "$src" "$work/wds-out")
  eval "$BENCH_CLEAN"
  echo "shards: $shards tar shards, $count members x $size B, $(echo "scale=3; $bytes/1000000000" | bc -l) GB of tar"
  echo "  cp -r:                 $tcp s  ($(echo "scale=0; $bytes/$tcp/1000000" | bc -l) MB/s)"
  echo "  cp -r, then sync:      $tsync s  ($(echo "scale=0; $bytes/$tsync/1000000" | bc -l) MB/s)"
  echo "  bpconvert convert-wds: $twds s  ($(echo "scale=0; $bytes/$twds/1000000" | bc -l) MB/s, $(echo "scale=0; $count/$twds" | bc -l) members/s), peak RSS $rss MiB"
  echo "  sha256sum of the shards: $tsha s; convert-wds --no-manifest: $tnm s"
  echo "  throughput ratio convert-wds/cp: $(ratio "$tcp" "$twds")x; convert-wds/(cp+sync): $(ratio "$tsync" "$twds")x"
  echo "  with manifest against max(cp, sha256sum): $(ratio "$limit" "$twds")x; --no-manifest against cp: $(ratio "$tcp" "$tnm")x, against cp + sync: $(ratio "$tsync" "$tnm")x"
  rm -rf "$src"
}

case_big() {
  local src="$work/big"
  gen_big "$src" "$big"
  warm "$src"
  BENCH_CLEAN="set_aside '$work/cp-out' '$work/wds-out'"
  local tcp twds rss
  tcp=$(time_runs 1 cp -r "$src" "$work/cp-out")
  twds=$(time_runs 1 "$bin" convert-wds --yes "${extra[@]}" "$src" "$work/wds-out")
  eval "$BENCH_CLEAN"
  rss=$(peak_rss_mib "$bin" convert-wds --yes "${extra[@]}" "$src" "$work/wds-out")
  eval "$BENCH_CLEAN"
  echo "big member: one shard with a $big GiB member"
  echo "  cp -r: $tcp s; bpconvert convert-wds: $twds s; peak RSS $rss MiB"
  rm -rf "$src"
}

case_shards
if [ "$big" -gt 0 ]; then
  case_big
fi
