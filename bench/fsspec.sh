#!/usr/bin/env bash
# Measures what reading one zip:// reference costs through fsspec, as
# Hugging Face datasets opens reference strings (a zip filesystem built per
# reference, which reads the shard's whole central directory), against the
# loader pattern of examples/fsspec/packrefs.py (one zip filesystem per shard,
# kept), at several member counts per shard.
#
# Usage: bash bench/fsspec.sh   (COUNTS="256 1024 4096 16384 65535", ROUNDS=3,
# PYTHON=/usr/bin/python3 with Debian's python3-fsspec, BPCONVERT=bin/bpconvert)
# Prints, per member count, the median over ROUNDS of the median of 8 reads.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-bin/bpconvert}
py=${PYTHON:-/usr/bin/python3}
counts=${COUNTS:-256 1024 4096 16384 65535}
rounds=${ROUNDS:-3}
"$py" -c 'import fsspec' || { echo "bench/fsspec.sh: $py cannot import fsspec (Debian: apt-get install python3-fsspec)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/bench.py" <<'PY'
import sys, time, random, statistics, zipfile
import fsspec
shard = sys.argv[1] + "/media/pack-0000.zip"
with zipfile.ZipFile(shard) as z:
    names = z.namelist()
random.seed(1)
pick = random.sample(names, min(8, len(names)))
fresh = []
for k in pick:
    s = time.perf_counter()
    with fsspec.open("zip://" + k + "::" + shard, "rb") as f:
        f.read()
    fresh.append(time.perf_counter() - s)
s = time.perf_counter()
fs = fsspec.filesystem("zip", fo=shard)
first = time.perf_counter() - s
kept = []
for k in pick:
    s = time.perf_counter()
    fs.cat(k)
    kept.append(time.perf_counter() - s)
print(statistics.median(fresh) * 1000, statistics.median(kept) * 1000, first * 1000)
PY
echo "members  per reference, fs per reference (ms)  per reference, fs kept per shard (ms)  opening the kept fs (ms)"
rows_md=()
for n in $counts; do
  mkdir -p "$work/src$n"
  "$py" -c 'import os, sys
n, d = int(sys.argv[1]), sys.argv[2]
for i in range(n):
    open(os.path.join(d, "%06d.bin" % i), "wb").write(os.urandom(1024))' "$n" "$work/src$n"
  "$bin" pack "$work/src$n" "$work/ds$n/media" --quiet
  for r in $(seq "$rounds"); do "$py" "$work/bench.py" "$work/ds$n"; done |
    "$py" -c 'import sys, statistics
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
a, b, c = (statistics.median(col) for col in zip(*rows))
print("%7d  %.2f  %.3f  %.1f" % (int(sys.argv[1]), a, b, c))' "$n" | tee "$work/row"
  read -r m a b c <"$work/row"
  rows_md+=("| $m | $a ms | $b ms | $c ms |")
  rm -rf "$work/src$n" "$work/ds$n"
done
{
  echo "Measured by $(bench_head bench/fsspec.sh "$work") with $("$py" -c 'import fsspec; print("fsspec", fsspec.__version__)'); 1 KiB members, median of $rounds rounds of the median of 8 reads."
  echo
  echo "| members in the shard | \`fsspec.open(ref)\` per reference | one zip filesystem per shard, per reference | opening that filesystem once |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows_md[@]}"
} | perf_doc bench/fsspec.sh
