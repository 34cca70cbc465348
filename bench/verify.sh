#!/usr/bin/env bash
# Measures `bpconvert verify` against reading the same shards, warm page
# cache, median of RUNS runs, on VERIFY_MB (default 2000) MB of 100 KiB
# members packed into 4 shards:
#   1. without pack.manifest.json verify checks structure and every CRC-32,
#      no SHA-256: baseline `dd bs=1M` of each shard to /dev/null (target:
#      throughput >= 0.5 x dd);
#   2. with the manifest it also computes every shard's SHA-256, shards on
#      all cores at once: baselines `sha256sum` of the shards one after
#      another and, one process per core, `xargs -P $(nproc) sha256sum`.
# Ratios are throughput (baseline time / verify time).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$here/../bin/bpconvert}
runs=${RUNS:-3}
mb=${VERIFY_MB:-2000}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$bin" ] || { echo "bench/verify.sh: $bin is missing: run make build" >&2; exit 1; }
echo "# bench/verify.sh: $(nproc) cores, runs=$runs, work dir on $(df --output=source "$work" | tail -1)"

count=$((mb * 1000000 / 102400))
python3 - "$work/src" "$count" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
block = os.urandom(102400)
for i in range(n):
    sub = os.path.join(d, f"{i // 1000:04d}")
    if i % 1000 == 0:
        os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, f"{i:08d}.jpg"), "wb") as f:
        f.write(i.to_bytes(8, "little") + block[8:])
PY
"$bin" pack --quiet --max-pack-bytes "$((mb / 4 + 1))MB" "$work/src" "$work/pack"
rm -rf "$work/src"
# The same shards without the manifest (hard links, no copy).
mkdir "$work/nomanifest"
ln "$work"/pack/*.zip "$work/nomanifest/"
warm "$work/pack"
bytes=$(cat "$work"/pack/*.zip | wc -c)
nshards=$(ls "$work"/pack/*.zip | wc -l)

tdd=$(time_runs "$runs" sh -c 'for f; do dd if="$f" bs=1M of=/dev/null 2>/dev/null; done' sh "$work"/pack/*.zip)
tsha=$(time_runs "$runs" sha256sum "$work"/pack/*.zip)
tshap=$(time_runs "$runs" sh -c 'ls "$1"/*.zip | xargs -P "$(nproc)" -n 1 sha256sum' sh "$work/pack")
tcrc=$(time_runs "$runs" "$bin" verify "$work/nomanifest")
tman=$(time_runs "$runs" "$bin" verify "$work/pack")
mbs() { echo "scale=0; $bytes/$1/1000000" | bc -l; }
echo "verify: $nshards shards, $(echo "scale=3; $bytes/1000000000" | bc -l) GB, $count members"
echo "  dd bs=1M:                      $tdd s  ($(mbs "$tdd") MB/s)"
echo "  verify, no manifest (CRC-32):  $tcrc s  ($(mbs "$tcrc") MB/s), throughput ratio verify/dd: $(ratio "$tdd" "$tcrc")x"
echo "  sha256sum, one after another:  $tsha s  ($(mbs "$tsha") MB/s)"
echo "  sha256sum, $(nproc) at once:           $tshap s  ($(mbs "$tshap") MB/s)"
echo "  verify, manifest (+ SHA-256):  $tman s  ($(mbs "$tman") MB/s), ratio verify/sha256sum: $(ratio "$tsha" "$tman")x, verify/parallel sha256sum: $(ratio "$tshap" "$tman")x"

{
  echo "Measured by $(bench_head bench/verify.sh "$work"); medians of $runs runs each, warm page cache. $nshards shards of $count members of 100 KiB, $(printf '%.3f' "$(echo "$bytes/1000000000" | bc -l)") GB. Ratios are throughput (baseline time / verify time)."
  echo
  echo "| case | baseline | \`verify\` | ratio |"
  echo "|---|---|---|---|"
  echo "| no manifest: structure and every CRC-32 | \`dd bs=1M\` $(secs "$tdd") s | $(secs "$tcrc") s | $(ratio "$tdd" "$tcrc")x dd (target >= 0.5) |"
  echo "| with the manifest: + SHA-256 of every shard, shards on all cores | \`sha256sum\` $(secs "$tsha") s; $(nproc) at once $(secs "$tshap") s | $(secs "$tman") s | $(ratio "$tsha" "$tman")x; $(ratio "$tshap" "$tman")x |"
} | perf_doc bench/verify.sh
