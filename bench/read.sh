#!/usr/bin/env bash
# Measures random whole-member reads by key from a pack, 10,000 of them
# (READS) over READ_FILES (default 20,000) members of 100 KiB, warm page
# cache, median of RUNS runs, timed inside each process (start-up and
# opening the pack excluded):
#   - the reference reader: Python's zipfile, ZipFile.read of each member
#     (it checks the CRC-32 too), the shards opened and listed beforehand;
#   - bpconvert's Go API, Set.Read (a new slice per read) and Set.ReadInto
#     (one buffer reused, no allocation per read), both checking CRC-32
#     (bench/readbench).
# Prints reads per second and the ratio to the reference (>= 2.0 is the
# target for ReadInto).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$root/bin/bpconvert}
runs=${RUNS:-3}
reads=${READS:-10000}
files=${READ_FILES:-20000}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -x "$bin" ] || { echo "bench/read.sh: $bin is missing: run make build" >&2; exit 1; }
echo "# bench/read.sh: $(nproc) cores, runs=$runs, $reads random reads of $files members x 100 KiB"

python3 - "$work/src" "$files" <<'PY'
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
"$bin" pack --quiet "$work/src" "$work/pack"
rm -rf "$work/src"
warm "$work/pack"
(cd "$root" && go build -o "$work/readbench" ./bench/readbench)

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
py=() read_=() into=()
for _ in $(seq "$runs"); do
  py+=("$(python3 - "$work/pack" "$reads" <<'PY'
import glob, random, sys, time, zipfile
d, n = sys.argv[1], int(sys.argv[2])
where = {}
for p in sorted(glob.glob(d + "/*.zip")):
    z = zipfile.ZipFile(p)
    for info in z.infolist():
        where[info.filename] = (z, info)
keys = sorted(where)
rng = random.Random(1)
picks = [keys[rng.randrange(len(keys))] for _ in range(n)]
t = time.perf_counter()
for k in picks:
    z, info = where[k]
    z.read(info)
print(f"{time.perf_counter() - t:.4f}")
PY
)")
  out=$("$work/readbench" "$work/pack" "$reads")
  read_+=("$(awk '$1 == "Read" {print $2}' <<<"$out")")
  into+=("$(awk '$1 == "ReadInto" {print $2}' <<<"$out")")
  allocs=$(awk '{printf "%s %s allocs/read; ", $1, $3}' <<<"$out")
done
tpy=$(printf '%s\n' "${py[@]}" | median)
tread=$(printf '%s\n' "${read_[@]}" | median)
tinto=$(printf '%s\n' "${into[@]}" | median)
echo "random reads: $reads of $files members x 100 KiB"
echo "  Python zipfile ZipFile.read: $tpy s  ($(echo "scale=0; $reads/$tpy" | bc -l) reads/s)"
echo "  Go Set.Read:                 $tread s  ($(echo "scale=0; $reads/$tread" | bc -l) reads/s), ratio $(ratio "$tpy" "$tread")x"
echo "  Go Set.ReadInto:             $tinto s  ($(echo "scale=0; $reads/$tinto" | bc -l) reads/s), ratio $(ratio "$tpy" "$tinto")x"
echo "  ($allocs)"

{
  echo "Measured by $(bench_head bench/read.sh "$work"); medians of $runs runs, warm page cache, timed inside each process (start-up and opening the pack excluded). $reads random reads by key of $files members of 100 KiB, each checking its CRC-32. Ratio = baseline time / bpconvert time."
  echo
  echo "| reader | time for $reads reads | reads/s | ratio |"
  echo "|---|---|---|---|"
  echo "| Python \`zipfile\` \`ZipFile.read\` (baseline) | $(secs "$tpy") s | $(echo "scale=0; $reads/$tpy" | bc -l) | |"
  echo "| \`Set.Read\` (a new slice per read) | $(secs "$tread") s | $(echo "scale=0; $reads/$tread" | bc -l) | $(ratio "$tpy" "$tread")x |"
  echo "| \`Set.ReadInto\` (one buffer reused, no allocation per read) | $(secs "$tinto") s | $(echo "scale=0; $reads/$tinto" | bc -l) | $(ratio "$tpy" "$tinto")x (target >= 2.0) |"
} | perf_doc bench/read.sh
