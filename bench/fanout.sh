#!/usr/bin/env bash
# Measures a split conversion against an undivided one, in the same run:
#   whole:  bpconvert convert-wds SHARDS out
#   split:  bpconvert convert-wds SHARDS out --part 1/2 & ... --part 2/2, concurrently
#   finalize: bpconvert finalize out (hard links, manifest merge, table join)
# on FANOUT_MB (default 2000) MB of FANOUT_SHARDS (20) tar shards with
# members of FANOUT_SIZE (102400) bytes, median of RUNS (3) runs each,
# with a warm page cache.
#
# Targets (batch issue): the two parts together take no more wall time
# than one run (ratio split/whole <= 1.0); finalize of a 2 GB,
# 20,000-member output takes under 1 s.
#
# Then the scale: the same input (SCALE_MB, default 500 MB, in
# SCALE_SHARDS, default 128, tar shards) split into N = SCALE_NS (default
# 1 2 4 8 32 128) parts, run two at a time (the machine's cores), for each
# N the total work (CPU seconds of every part), the largest part's share
# of the bytes, the parts' wall time and finalize's time. FANOUT_PAIR=0
# skips the first measurement.
#
# Needs bin/bpconvert (make build), python3, bc.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$root/bin/bpconvert}
runs=${RUNS:-3}
mb=${FANOUT_MB:-2000}
nshards=${FANOUT_SHARDS:-20}
size=${FANOUT_SIZE:-102400}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
trap 'rm -rf "$work"' EXIT
echo "# bench/fanout.sh: $(nproc) cores, runs=$runs, work dir on $(df --output=source "$work" | tail -1)"

scale() {
  local smb=${SCALE_MB:-500} sshards=${SCALE_SHARDS:-128} jobs=${SCALE_JOBS:-$(nproc)}
  gen_shards "$work/scale" "$sshards" "$((smb * 1000000 / size))" "$size"
  warm "$work/scale"
  local sbytes
  sbytes=$(du -sb "$work/scale" | cut -f1)
  echo "scale: $sshards shards, $((smb * 1000000 / size)) members of $size bytes, $sbytes bytes; parts $jobs at a time"
  printf '  %5s %12s %14s %10s %12s\n' N "cpu s" "largest part" "parts s" "finalize s"
  local n rows_md=()
  for n in ${SCALE_NS:-1 2 4 8 32 128}; do
    set_aside "$work/sout" "$work/.sout.bpconvert-parts" "$work/sums"
    mkdir -p "$work/sums"
    sync
    local t0 t1 t2 cpu
    t0=$(now)
    # Children's CPU time (user + system) of the subshell: every part.
    cpu=$( (seq 1 "$n" | xargs -P "$jobs" -I{} "$bin" convert-wds "$work"/scale/*.tar "$work/sout" --yes --quiet \
        --part "{}/$n" --summary-file "$work/sums/{}.json" >/dev/null
      times) | tail -1 | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.2f", u[1]*60 + u[2] + s[1]*60 + s[2] }')
    t1=$(now)
    "$bin" finalize "$work/sout" --quiet
    t2=$(now)
    local share
    share=$(python3 -c 'import json, sys; b = [json.load(open(p))["bytes"] for p in sys.argv[1:]]; print(f"{max(b) / sum(b) * 100:.1f}%")' \
      "$work"/sums/*.json)
    printf '  %5s %12s %14s %10.2f %12.3f\n' "$n" "$cpu" "$share" "$(echo "$t1 - $t0" | bc -l)" "$(echo "$t2 - $t1" | bc -l)"
    rows_md+=("| $n | $cpu s | $share | $(secs "$(echo "$t1 - $t0" | bc -l)") s | $(secs "$(echo "$t2 - $t1" | bc -l)") s |")
  done
  {
    echo "Measured by $(bench_head bench/fanout.sh "$work"); one run for each N. \`convert-wds --part I/N\` of $sbytes bytes in $sshards tar shards of $size-byte members, parts $jobs at a time, then \`finalize\`. CPU is every part's user + system time: total work grows by what each part adds (each plans from every shard's headers); finalize grows with N (one table per part to join), not with payload bytes."
    echo
    echo "| N | CPU of all parts | largest part's share of the bytes | parts, wall | \`finalize\` |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rows_md[@]}"
  } | perf_doc "bench/fanout.sh scale"
}

if [ "${FANOUT_PAIR:-1}" = 0 ]; then
  scale
  exit 0
fi

gen_shards "$work/shards" "$nshards" "$((mb * 1000000 / size))" "$size"
warm "$work/shards"
bytes=$(du -sb "$work/shards" | cut -f1)
members=$(( mb * 1000000 / size ))

whole() { "$bin" convert-wds "$work"/shards/*.tar "$work/out" --yes --quiet; }
split() {
  "$bin" convert-wds "$work"/shards/*.tar "$work/out" --yes --quiet --part 1/2 &
  local a=$!
  "$bin" convert-wds "$work"/shards/*.tar "$work/out" --yes --quiet --part 2/2 &
  local b=$!
  wait "$a" && wait "$b"
}
# The two are timed in turns (whole first in odd rounds, split first in
# even ones): earlier outputs stay in the page cache (set aside, not
# deleted), and whichever runs later meets more memory to reclaim, which
# shows as system time. Timing all of one, then all of the other, measured
# that order, not the split.
BENCH_CLEAN="set_aside '$work/out' '$work/.out.bpconvert-parts'"
tw=()
ts=()
for i in $(seq "$runs"); do
  if [ $((i % 2)) -eq 1 ]; then
    tw+=("$(time_runs 1 whole)")
    ts+=("$(time_runs 1 split)")
  else
    ts+=("$(time_runs 1 split)")
    tw+=("$(time_runs 1 whole)")
  fi
done
twhole=$(median "${tw[@]}")
tsplit=$(median "${ts[@]}")

# finalize: each run joins a fresh split (the split is not timed).
tfin=()
for _ in $(seq "$runs"); do
  set_aside "$work/out" "$work/.out.bpconvert-parts"
  split
  sync
  t0=$(now)
  "$bin" finalize "$work/out" --quiet
  t1=$(now)
  tfin+=("$(echo "$t1 - $t0" | bc -l)")
done
tfinal=$(median "${tfin[@]}")

echo "input: $nshards shards, $members members of $size bytes, $bytes bytes"
echo "  whole run:              $twhole s"
echo "  --part 1/2 + 2/2 (concurrent): $tsplit s   ratio split/whole: $(ratio "$tsplit" "$twhole")x (target <= 1.00)"
echo "  finalize:               $tfinal s (target < 1 s)"
{
  echo "Measured by $(bench_head bench/fanout.sh "$work"); medians of $runs runs, the whole and the split run timed in turns, warm page cache. $bytes bytes in $nshards tar shards of $members members of $size bytes."
  echo
  echo "| one undivided \`convert-wds\` | \`--part 1/2\` and \`--part 2/2\` at once | split / whole (target <= 1.00) | \`finalize\` (target < 1 s) |"
  echo "|---|---|---|---|"
  echo "| $(secs "$twhole") s | $(secs "$tsplit") s | $(ratio "$tsplit" "$twhole")x | $(secs "$tfinal") s |"
} | perf_doc bench/fanout.sh

scale
